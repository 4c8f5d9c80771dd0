"""Parsing `-- ==` test blocks."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from futgen.testing.spec import SpecError, find_blocks, parse_spec, read_spec


def spec(src: str, path: str = "/prog/t.fut"):
    return parse_spec(textwrap.dedent(src), path)


def test_no_blocks():
    s = spec("def main (x: i32) = x\n-- just a comment\n")
    assert not s.has_blocks and s.cases == []


def test_description_tags_entries_and_runs():
    s = spec(
        """\
        -- Adds things.
        -- Second line.
        -- ==
        -- tags { no_opencl disable }
        -- entry: main other
        -- input { 1 [2, 3] }
        -- output { 6i64 }
        -- "named" compiled nobench input { 1i8 } output { empty([0]f32) }
        -- input { 0 } error: division by zero
        -- input { 2 }

        def main (x: i32) = x
        """
    )
    assert s.description == "Adds things.\nSecond line."
    assert s.tags == ("no_opencl", "disable")
    assert [io.entry for io in s.cases] == ["main", "other"]
    runs = s.cases[0].runs
    assert len(runs) == 4
    first = runs[0]
    assert first.input.kind == "inline" and first.line == 6
    assert first.input.values[0] == np.int32(1)
    assert first.input.values[1].tolist() == [2, 3]
    assert first.expected.values == [np.int64(6)]
    assert first.description == '#0 ("1i32 [2i32, 3i32]")'
    assert runs[1].description == "named" and runs[1].tags == ("compiled", "nobench")
    assert runs[1].expected.values[0].shape == (0,)
    assert runs[2].expected_error.regex == "division by zero"
    assert runs[2].expected_error.matches("Error: division by zero\nat t.fut:3")
    assert runs[3].expected is None and runs[3].expected_error is None


def test_values_may_span_lines_and_braces_may_touch():
    s = spec(
        """\
        -- ==
        -- input {
        --   [[1, 2],
        --    [3, 4]]
        -- }
        -- output {[1,2]}
        """
    )
    [run] = s.cases[0].runs
    assert run.input.values[0].shape == (2, 2)
    assert run.expected.values[0].tolist() == [1, 2]


def test_files_random_script_and_auto_output(tmp_path):
    s = spec(
        """\
        -- ==
        -- input @ data/a.in output @ data/a.out.gz
        -- random input { [100]i32 [10][10]f32 3i64 } auto output
        -- script input { mkdata 10i64 } output { 1 }
        -- "s" script input @ gen.futharkscript
        """,
        path=str(tmp_path / "p.fut"),
    )
    a, r, sc, sf = s.cases[0].runs
    assert a.input.kind == "file" and a.input.path == str(tmp_path / "data" / "a.in")
    assert a.expected.path.endswith("a.out.gz") and a.description == "data/a.in"
    assert r.input.kind == "random" and r.input.gen == ["[100]i32", "[10][10]f32", "3i64"]
    assert r.auto_output and r.description == "[100]i32 [10][10]f32 3i64"
    assert sc.input.kind == "script" and sc.input.source == "mkdata 10i64"
    assert sf.input.kind == "script_file"


def test_file_inputs_load_lazily(tmp_path):
    (tmp_path / "x.in").write_text("[1, 2] 3")
    s = spec("-- ==\n-- input @ x.in\n", path=str(tmp_path / "p.fut"))
    [run] = s.cases[0].runs
    vals = run.input.load()
    assert vals[0].tolist() == [1, 2] and vals[1] == 3


def test_compile_error_block():
    s = spec("-- ==\n-- error: Cannot unify .* with\n")
    assert s.compile_error.regex == "Cannot unify .* with"
    assert s.cases == []
    assert spec("-- ==\n-- error:\n").compile_error.regex is None


def test_structure_and_warning_blocks_are_parsed_and_kept():
    s = spec(
        """\
        -- ==
        -- input { 1 } output { 1 }
        -- structure gpu { SegMap 1 /If/True/SegRed 2 }
        -- warning: unused
        """
    )
    assert len(s.cases[0].runs) == 1
    assert s.structure == ["gpu { SegMap 1 /If/True/SegRed 2 }"]
    assert s.warnings == ["unused"]


def test_several_blocks_add_cases():
    s = spec(
        """\
        -- ==
        -- input { 1 } output { 1 }

        def main (x: i32) = x

        -- Another entry point.
        -- ==
        -- entry: f
        -- input { 2 } output { 3 }
        entry f (x: i32) = x + 1
        """
    )
    assert [(io.entry, len(io.runs)) for io in s.cases] == [("main", 1), ("f", 1)]


def test_a_block_only_of_structure_has_no_runs():
    s = spec("-- ==\n-- structure { Screma 1 }\n")
    assert s.cases == [] and s.has_blocks


def test_blocks_are_cut_at_the_first_non_comment_line():
    [b] = find_blocks("x\n-- ==\n-- input { 1 }\ndef main = 1\n-- input { 2 }\n")
    assert b.first_line == 2 and "2" not in b.text


@pytest.mark.parametrize(
    "src, message",
    [
        ("-- ==\n-- input { 1 2\n", r"t.fut:2:\d+: test block: expected '}' to close the input"),
        ("-- ==\n-- input { 1 } output { [1, }\n", r"t.fut:2:\d+: value #2: expected a value"),
        ("-- ==\n-- input 1\n", r"t.fut:2:10: test block: expected '\{' or '@' after 'input'"),
        ("-- ==\n-- bogus stuff\n", r"t.fut:2:\d+: test block: expected 'input' after the run's name"),
        ("-- ==\n-- input { 1 }\n-- output { 2 } }\n", r"t.fut:3:\d+: test block: unexpected '}'"),
        ("-- ==\n-- input { 1 } error: ([a-\n", r"t.fut:2:\d+: test block: invalid regular expression"),
        ("-- ==\n-- error: x\n\n-- ==\n-- input { 1 }\n", r"t.fut:4:\d+: test block: no more test blocks"),
        ('-- ==\n-- "a" input { 1 }\n-- "a" input { 2 }\n', r"t.fut:3: multiple datasets named 'a'"),
        ("-- ==\n-- entry:\n-- input { 1 }\n", r"'entry:' names no entry point"),
    ],
)
def test_malformed_blocks_name_file_and_line(src, message):
    with pytest.raises(SpecError, match=message):
        parse_spec(src, "/d/t.fut")


def test_read_spec_of_missing_file():
    with pytest.raises(SpecError, match="nope.fut"):
        read_spec("/nonexistent/nope.fut")
