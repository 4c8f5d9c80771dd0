"""Entry-point signatures from the typed program (futgen.frontend.entry)."""

from __future__ import annotations

from futgen.frontend import check_source
from futgen.frontend.entry import (
    components,
    entry_signatures,
    leaf_types,
    record_names,
    type_key,
)

PROGRAM = """
type point = {y: f32, x: f32}
type cloud [n] = [n]point

entry main (p: point) ((a, b): (i32, [3]i64)) (c: cloud []) : (point, [](bool, i8)) =
  (p, zip [a > 0] [i8.i64 b[0]])

entry inferred (p: point) = {x = p.x, y = p.y + 1}

entry anon (r: {b: i32, a: f64}) = map (+ r.b)

def main' = 1
"""


def sigs():
    prog = check_source(PROGRAM)
    return prog, {s.name: s for s in entry_signatures(prog)}


def test_parameters_results_and_point_free_entries():
    _, s = sigs()
    assert list(s) == ["main", "inferred", "anon"]
    main = s["main"]
    assert [p.name for p in main.params] == ["p", "a_b", "c"]
    assert [str(t) for t in main.param_types] == ["{x: f32, y: f32}", "(i32, [3]i64)",
                                                  "[]{x: f32, y: f32}"]
    assert [str(t) for t in main.results] == ["{x: f32, y: f32}", "*[1](bool, i8)"]
    anon = s["anon"]  # point-free: the arrow's parameter is the entry's
    assert str(anon.param_types[0]) == "{a: f64, b: i32}"
    assert len(anon.params) == 2 and str(anon.results[0]).endswith("i32")


def test_structure_follows_internalisation():
    _, s = sigs()
    cloud = s["main"].param_types[2]
    assert [str(c) for c in components(cloud)] == ["[]f32", "[]f32"]
    assert [str(t) for t in leaf_types(s["main"].param_types[1])] == ["i32", "[3]i64"]
    assert [str(t) for t in leaf_types(s["main"].results[1])] == ["[1]bool", "[1]i8"]
    assert components(s["main"].results[0].fields[0][1]) is None


def test_records_are_named_after_their_abbreviations():
    prog, s = sigs()
    names = record_names(prog, list(s.values()))
    assert names == {type_key(s["main"].param_types[0]): "point"}
    # `inferred` returns a record written without a type: the same record
    # type is named elsewhere, so it keys to the same name.
    assert type_key(s["inferred"].results[0]) in names
    assert type_key(s["anon"].param_types[0]) not in names
