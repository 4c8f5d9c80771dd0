"""Entry points taking and returning tuples, records and arrays of them:
tuples are Python tuples, records the module's named tuple classes, arrays of
either structures of arrays; bad arguments name the part and both types."""

from __future__ import annotations

import numpy as np
import pytest

from futgen.codegen.package import build_package
from futgen.frontend import load
from futgen.interp import Interpreter
from futgen.testing.compiled import import_package

PROGRAM = """
type point = {x: f32, y: f32}

entry norm (p: point) : f32 = f32.sqrt (p.x * p.x + p.y * p.y)

entry shift [n] (ps: [n]point) (d: f32) : [n]point =
  map (\\p -> {x = p.x + d, y = p.y * 2}) ps

entry centre [n] (ps: [n]point) =
  {x = f32.sum (map (.x) ps) / f32.i64 n, y = f32.sum (map (.y) ps) / f32.i64 n}

entry swap (a: i32, b: f64) : (f64, i32) = (b, a)

entry pairs (xs: [](i32, i64)) : ([]i32, (i32, [](i64, bool))) =
  let (as, bs) = unzip xs
  in (as, (i32.sum as, zip bs (map (> 0) as)))

entry anon (r: {a: i32, b: [3]f32}) = {a = r.a + 1, b = map (* 2) r.b}
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    out = tmp_path_factory.mktemp("entryvals")
    src = out / "shapes.fut"
    src.write_text(PROGRAM)
    return import_package(build_package(src, out, name="shapes"))


@pytest.fixture(scope="module")
def inst(mod):
    return mod.Shapes(backend="cpu")


def test_records_are_named_tuples_of_the_module(mod, inst):
    assert inst.norm(mod.point(x=3.0, y=4.0)) == np.float32(5)
    assert inst.norm({"x": 3, "y": 4}) == np.float32(5)  # a mapping with the field names
    c = inst.centre(mod.point(np.array([1, 3], np.float32), np.array([2, 6], np.float32)))
    assert isinstance(c, mod.point) and (c.x, c.y) == (2, 4)
    assert c.x.dtype == np.float32
    r = inst.anon(mod.record_a_b(a=1, b=np.arange(3, dtype=np.float32)))
    assert type(r).__name__ == "record_a_b" and r.a == 2 and r.b.tolist() == [0, 2, 4]
    assert {"point", "record_a_b"} <= set(mod.__all__)


def test_arrays_of_records_are_records_of_arrays(mod, inst):
    xs, ys = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    got = inst.shift(mod.point(xs, ys), 1.5)
    assert isinstance(got, mod.point)
    np.testing.assert_array_equal(got.x, xs + 1.5)
    np.testing.assert_array_equal(got.y, ys * 2)


def test_tuples_and_arrays_of_tuples_match_the_interpreter(tmp_path, inst):
    assert inst.swap((7, 2.5)) == (2.5, 7)
    a = np.array([1, -2, 3], np.int32)
    b = np.array([4, 5, 6], np.int64)
    got = inst.pairs((a, b))
    src = tmp_path / "p.fut"
    src.write_text(PROGRAM)
    interp = Interpreter(load(str(src)))
    want_as, (want_sum, want_zip) = interp.call("pairs", [_struct((a, b))])
    assert got[0].tolist() == want_as.tolist()
    assert got[1][0] == want_sum
    assert [x.tolist() for x in got[1][1]] == [x.tolist() for x in want_zip.fields]


def _struct(fields):
    from futgen.interp.values import StructArray

    return StructArray((len(fields[0]),), fields)


def test_help_and_entry_points_describe_the_structure(mod):
    assert mod.ENTRY_POINTS["shift"] == (("ps", "d"), ("[n]{x: f32, y: f32}", "f32"),
                                         ("[n]{x: f32, y: f32}",))
    assert mod.ENTRY_POINTS["swap"] == (("a_b",), ("(i32, f64)",), ("f64", "i32"))
    doc = mod.Shapes.shift.__doc__
    assert doc.startswith("shift(ps: [n]point, d: f32) -> [n]point")
    assert "point(x=..., y=...) or a dict or object" in doc and "one tuple (or record) of arrays" in doc
    assert "point: {x: f32, y: f32}" in mod.__doc__


@pytest.mark.parametrize("call, error, message", [
    (lambda m, i: i.norm((3.0, 4.0)), TypeError,
     r"norm: parameter p \(#1\) expects \{x: f32, y: f32\}, got a tuple; pass point\(x=..., y=...\)"),
    (lambda m, i: i.norm({"x": 1.0}), TypeError, r"got a mapping with keys \['x'\]"),
    (lambda m, i: i.norm(m.point(1.0, "a")), TypeError,
     r"norm: parameter p.y \(#1\) expects f32, got a str"),
    (lambda m, i: i.shift(m.point(np.zeros(3, np.float32), np.zeros(4, np.float32)), 1.0),
     ValueError, r"ps.x: \[n\]f32 .*ps.y: \[n\]f32|ps.x has \[3\], ps.y has \[4\]"),
    (lambda m, i: i.swap((1,)), TypeError, r"expects \(i32, f64\) as a tuple of 2 values, got a tuple of 1"),
    (lambda m, i: i.swap([1, 2.0]), TypeError, r"got a list"),
    (lambda m, i: i.swap((1.5, 2.0)), TypeError, r"swap: parameter a_b\[0\] \(#1\) expects i32, got a float"),
    (lambda m, i: i.pairs((np.zeros(1, np.int32), np.zeros(2, np.int64))), ValueError,
     r"xs\[0\] has \[1\], xs\[1\] has \[2\]"),
    (lambda m, i: i.anon(m.record_a_b(1, np.zeros(4, np.float32))), ValueError,
     r"parameter r.b: \[3\]f32 has a dimension of 4"),
])
def test_bad_arguments_name_the_part(mod, inst, call, error, message):
    with pytest.raises(error, match=message):
        call(mod, inst)


RUNNER_PROGRAM = """
-- Compound results compare with the interpreter's on random inputs.
-- ==
-- entry: zipped
-- random input { [50]i32 [50]f32 }
-- input { [1, 2] [0.5f32, 1.5f32] } output { 4i32 }

-- ==
-- entry: stats
-- random input { [64]f32 }

type stats = {mean: f32, n: i64}

entry zipped (xs: []i32) (ys: []f32) : i32 =
  i32.sum (map2 (\\x y -> x + i32.f32 y) xs ys)

entry stats [n] (xs: [n]f32) : (stats, [n](i32, f32)) =
  ({mean = f32.sum xs / f32.i64 n, n}, zip (map (\\x -> i32.f32 (x * 10)) xs) xs)
"""


def test_futgen_test_compares_tuples_and_records_on_the_cpu_backend(tmp_path):
    from futgen.testing import TestOptions, run_tests

    src = tmp_path / "compound.fut"
    src.write_text(RUNNER_PROGRAM)
    report = run_tests([src], TestOptions(backend="cpu"))
    assert report.ok and [r.status for r in report.results[0].runs] == ["passed"] * 3, str(report)
