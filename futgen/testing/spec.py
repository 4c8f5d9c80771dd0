"""Futhark's test blocks: the `-- ==` comments that say how to test a program.

A test block is a run of `--` comment lines starting with a line `-- ==`;
the comment lines just before it are its description.  Inside a block,
`--` prefixes and line breaks are plain white space:

    -- Sums an array.
    -- ==
    -- tags { no_opencl }
    -- entry: main sum2
    -- input { [1, 2, 3] } output { 6 }
    -- "big" compiled input @ data/big.in.gz output @ data/big.out
    -- random input { [100]i32 }
    -- input { [1] } error: out of bounds
    -- structure { Screma 1 }

The first block of a file may start with `tags { ... }` (file tags such as
`disable`) and may instead say `error: regex`: the program must fail to
compile with a message matching the regex.  Later blocks add more run cases,
possibly for other entry points.  Data files are relative to the program's
directory and are read only when a run needs them.  A malformed block raises
`SpecError` naming `file:line:col`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from futgen.data.values import DataScanner, Value, format_value, load_file
from futgen.errors import DataError, FutgenError

_BLOCK_START = "-- =="
_GEN_VALUE = re.compile(r"(?:\[\s*\w*\s*\]\s*)*[^\s\[\]]+")
_TAG = re.compile(r"[A-Za-z0-9_-]+")
_RESERVED = {"input", "structure", "warning:", "entry:", "error:", "property:", "output", "auto"}


class SpecError(FutgenError):
    """A malformed test block."""


@dataclass(frozen=True)
class ExpectedError:
    """An expected failure; `regex` None means any error will do."""

    regex: str | None

    def matches(self, message: str) -> bool:
        """Whether an error message matches, searching anywhere with `.`
        matching newlines, as Futhark's regex options do."""
        return self.regex is None or re.search(self.regex, message, re.DOTALL) is not None


@dataclass
class Values:
    """Values of a run: inline, from a file, random (types), or a script."""

    kind: str  # "inline" | "file" | "random" | "script" | "script_file"
    values: list[Value] = field(default_factory=list)
    path: str | None = None  # resolved file path for "file" / "script_file"
    gen: list[str] = field(default_factory=list)  # "random": `[100]i32`, `3i64`, ...
    source: str = ""  # the text as written: file name, random types, script

    def load(self) -> list[Value]:
        """The concrete values; DataError for unreadable or malformed files."""
        if self.kind == "inline":
            return self.values
        if self.kind == "file":
            return load_file(self.path)
        raise DataError(f"{self.kind} values ({self.source}) cannot be loaded directly")


@dataclass
class TestRun:
    """One input and what should come of it."""

    __test__ = False  # not a pytest test class

    index: int
    description: str
    tags: tuple[str, ...]
    input: Values
    expected: Values | None = None  # expected output values
    expected_error: ExpectedError | None = None  # run-time failure expected
    auto_output: bool = False  # `auto output`: compare against a reference backend
    line: int = 0


@dataclass
class InputOutputs:
    """The runs of one entry point."""

    entry: str
    runs: list[TestRun]


@dataclass
class ProgramTest:
    """Everything the test blocks of one program say."""

    path: str
    description: str = ""
    tags: tuple[str, ...] = ()
    compile_error: ExpectedError | None = None
    cases: list[InputOutputs] = field(default_factory=list)
    structure: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)

    @property
    def has_blocks(self) -> bool:
        return bool(self.compile_error or self.cases or self.structure or self.properties)


# ---------------------------------------------------------------- blocks


@dataclass
class _Block:
    first_line: int  # 1-based line of `-- ==`
    text: str  # the block with `--` prefixes blanked out, columns kept
    description: str


def find_blocks(source: str) -> list[_Block]:
    """Cut a program's text into its test blocks."""
    lines = source.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith(_BLOCK_START):
            i += 1
            continue
        start = i
        body = ["     " + lines[i][len(_BLOCK_START) :]]
        i += 1
        while i < len(lines) and lines[i].startswith("--"):
            body.append("  " + lines[i][2:])
            i += 1
        blocks.append(_Block(start + 1, "\n".join(body), _description(lines, start)))
    return blocks


def _description(lines: list[str], start: int) -> str:
    """The comment lines immediately above a block, without `--`."""
    j = start
    while j > 0 and lines[j - 1].startswith("--") and not lines[j - 1].startswith(_BLOCK_START):
        j -= 1
    return "\n".join(line[2:].strip() for line in lines[j:start]).strip()


class _BlockParser:
    """Recursive descent over one block, on top of the data scanner's tokens."""

    def __init__(self, path: str, block: _Block):
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path))
        self.s = DataScanner(block.text, path, first_line=block.first_line)

    def error(self, message: str, pos: int | None = None) -> SpecError:
        return SpecError(f"{self.s.where(pos)}: test block: {message}")

    def peek(self) -> str | None:
        return self.s.peek()

    def take(self, token: str) -> bool:
        if self.peek() == token:
            self.s.next()
            return True
        return False

    def expect(self, token: str, context: str) -> None:
        self.s.skip_space()
        pos = self.s.pos
        got = self.peek()
        if got != token:
            shown = "end of block" if got is None else f"'{got}'"
            raise self.error(f"expected '{token}' {context}, got {shown}", pos)
        self.s.next()

    def rest_of_line(self) -> str:
        """The text up to the end of the current line (regexes, entry names)."""
        s = self.s
        while s.pos < len(s.text) and s.text[s.pos] in " \t":
            s.pos += 1
        end = s.text.find("\n", s.pos)
        end = len(s.text) if end < 0 else end
        line, s.pos = s.text[s.pos : end], end
        return line.strip()

    # -- grammar

    def parse_first(self, spec: ProgramTest) -> None:
        """tags? (error: | property: | cases structure* warning*)"""
        if self.take("tags"):
            spec.tags = tuple(self.words_in_braces("tags"))
        if self.take("error:"):
            spec.compile_error = self.expected_error()
            self.finish()
            return
        self.parse_rest(spec)

    def parse_rest(self, spec: ProgramTest) -> None:
        """Later blocks: entry points and run cases, structure, warnings."""
        if self.peek() == "property:":
            while self.take("property:"):
                spec.properties.extend(self.rest_of_line().split())
            self.finish()
            return
        entries = ["main"]
        if self.take("entry:"):
            entries = self.rest_of_line().split()
            if not entries:
                raise self.error("'entry:' names no entry point")
        runs = self.runs()
        self.tail(spec)
        if runs:
            spec.cases.extend(InputOutputs(e, runs) for e in entries)
        self.finish()

    def tail(self, spec: ProgramTest) -> None:
        while True:
            if self.take("structure"):
                spec.structure.append(self.structure())
            elif self.take("warning:"):
                spec.warnings.append(self.rest_of_line())
            else:
                return

    def finish(self) -> None:
        if not self.s.at_end():
            raise self.error(f"unexpected '{self.peek()}'")

    def runs(self) -> list[TestRun]:
        runs: list[TestRun] = []
        while True:
            self.s.skip_space()
            start = self.s.pos
            name = self.string_literal()
            tags = self.run_tags()
            if self.peek() != "input":
                if name is not None or tags:
                    raise self.error("expected 'input' after the run's name and tags", start)
                return runs
            self.s.next()
            line = int(self.s.where(start).split(":")[-2])
            runs.append(self.run(len(runs), name, tuple(tags), line))

    def run(self, index: int, name: str | None, tags: tuple[str, ...], line: int) -> TestRun:
        if "random" in tags:
            raw = self.balanced_braces("random input")
            gen = [re.sub(r"\s+", "", g) for g in _GEN_VALUE.findall(raw)]
            inp = Values("random", gen=gen, source=" ".join(gen))
        elif "script" in tags:
            inp = self.script_values()
        else:
            inp = self.values("input")
        run = TestRun(index, name or _describe(index, inp), tags, inp, line=line)
        if self.take("auto"):
            self.expect("output", "after 'auto'")
            run.auto_output = True
        elif self.take("output"):
            run.expected = self.values("output")
        elif self.take("error:"):
            run.expected_error = self.expected_error()
        return run

    def string_literal(self) -> str | None:
        s = self.s
        s.skip_space()
        if s.pos >= len(s.text) or s.text[s.pos] != '"':
            return None
        end = s.text.find('"', s.pos + 1)
        if end < 0:
            raise self.error("unterminated string", s.pos)
        name, s.pos = s.text[s.pos + 1 : end], end + 1
        return name

    def run_tags(self) -> list[str]:
        tags = []
        while (tok := self.peek()) is not None and tok not in _RESERVED and _TAG.fullmatch(tok):
            tags.append(self.s.next())
        return tags

    def values(self, what: str) -> Values:
        """`{ v v ... }` or `@ file`."""
        if self.take("@"):
            path = self.file_name()
            return Values("file", path=os.path.join(self.dir, path), source=path)
        self.expect("{", f"or '@' after '{what}'")
        vals = []
        while self.peek() not in ("}", None):
            self.s.count += 1
            try:
                vals.append(self.s.read_value())
            except DataError as e:
                raise SpecError(f"{e} (in the {what} of a test block)") from None
        self.expect("}", f"to close the {what} values")
        return Values("inline", vals)

    def script_values(self) -> Values:
        if self.take("@"):
            path = self.file_name()
            return Values("script_file", path=os.path.join(self.dir, path), source=path)
        return Values("script", source=self.balanced_braces("script input"))

    def file_name(self) -> str:
        self.s.skip_space()
        m = re.compile(r"\S+").match(self.s.text, self.s.pos)
        if m is None:
            raise self.error("expected a file name after '@'")
        self.s.pos = m.end()
        return m.group()

    def words_in_braces(self, what: str) -> list[str]:
        self.expect("{", f"after '{what}'")
        words = []
        while self.peek() not in ("}", None):
            words.append(self.s.next())
        self.expect("}", f"to close '{what}'")
        return words

    def balanced_braces(self, what: str) -> str:
        self.s.skip_space()
        start = self.s.pos
        self.expect("{", f"after '{what}'")
        depth = 1
        while depth:
            tok = self.peek()
            if tok is None:
                raise self.error(f"unclosed '{{' of {what}", start)
            depth += {"{": 1, "}": -1}.get(tok, 0)
            self.s.next()
        return self.s.text[start + 1 : self.s.pos - 1].strip()

    def structure(self) -> str:
        self.s.skip_space()
        start = self.s.pos
        while self.peek() not in ("{", None):
            self.s.next()
        self.balanced_braces("structure")
        return self.s.text[start : self.s.pos]

    def expected_error(self) -> ExpectedError:
        self.s.skip_space()
        pos = self.s.pos
        regex = self.rest_of_line()
        if not regex:
            return ExpectedError(None)
        try:
            re.compile(regex)
        except re.error as e:
            raise self.error(f"invalid regular expression {regex!r}: {e}", pos) from None
        return ExpectedError(regex)


def _describe(index: int, inp: Values) -> str:
    """A run's name when it has none, as Futhark forms it."""
    if inp.kind in ("file", "script_file"):
        return inp.source.removesuffix(".gz")
    if inp.kind == "inline":
        text = " ".join(" ".join(format_value(v).split()) for v in inp.values)
        if len(text) > 50:
            text = text[:50] + "..."
        return f'#{index} ("{text}")'
    return inp.source


# ---------------------------------------------------------------- entry points


def parse_spec(source: str, path: str) -> ProgramTest:
    """The test specification in a program's text."""
    spec = ProgramTest(path)
    blocks = find_blocks(source)
    for i, block in enumerate(blocks):
        parser = _BlockParser(path, block)
        if i == 0:
            spec.description = block.description
            parser.parse_first(spec)
        elif spec.compile_error is not None:
            raise parser.error("no more test blocks allowed after one that expects a compile error")
        else:
            parser.parse_rest(spec)
    _check_unique_names(spec)
    return spec


def read_spec(path: str) -> ProgramTest:
    """The test specification of a `.fut` file."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 text: {e}") from None
    return parse_spec(source, path)


def value_runs(path: str) -> list[tuple[str, TestRun]]:
    """The runs of `path`'s test blocks that map input values (inline or
    in a file) to expected values: (entry point, run), for tests that run a
    program's examples through one stage of the compiler."""
    return [(case.entry, r) for case in read_spec(path).cases for r in case.runs
            if r.input.kind in ("inline", "file") and r.expected is not None]


def _check_unique_names(spec: ProgramTest) -> None:
    for io in spec.cases:
        seen: set[str] = set()
        for run in io.runs:
            if run.description in seen:
                raise SpecError(
                    f"{spec.path}:{run.line}: multiple datasets named {run.description!r} "
                    f"for entry point {io.entry}"
                )
            seen.add(run.description)
