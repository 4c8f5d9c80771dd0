"""Build and check the 13 import-free programs of Futhark's benchmark suite.

    python benchmarks/futhark_programs.py --suite PATH [--backends interpreter,cpu,cuda]
                                          [--only NAME,...] [--out DIR]

`--suite` is a checkout of github:diku-dk/futhark-benchmarks (not part of
this repository; nothing of it is copied here).  For every program the
script runs `futgen build` through the chosen backends and each dataset of
the program's test blocks:

* a dataset whose input file is present runs as `futgen test` would run it,
  compared with the `.out` file where that is present too (the interpreter
  skips runs tagged `compiled` that have an `.out` file, as `futhark test -i`
  does; without one it computes the reference);
* a dataset whose file is stored outside git in that repository (absent in
  a snapshot) runs on inputs of the documented size made here: random
  arrays from `futgen dataset` (seeded, so every backend sees the same
  data), or the suite's own input generator program run by futgen's
  interpreter (lavaMD, LUD); its results are compared with the interpreter's.

The documented sizes come from the papers' dataset tables (the incremental
flattening paper's Table 1; the thesis's Table 4: NN 855280 points, SRAD
502 x 458, LavaMD boxes1d = 10 with 50 particles per box, NW edge 2048,
HotSpot 1024 x 1024 with 360 iterations, k-means 204800 x 34 and kdd_cup
494019 x 34, LUD 2048, SGEMM medium).  Scalars that the absent files fix
(k-means' threshold, NW's penalty) are chosen here and named in the table.

It prints one line per (program, dataset, backend) and a summary table last;
`--out DIR` also writes `futhark_programs.json` there.  Exit status 1 if
anything failed.

`--reference DIR` keeps the interpreter's results of datasets without an
`.out` file in DIR (gzipped binary values), and uses them when the
interpreter is not among the backends: check with the interpreter once on
any machine, then on the GPU machine run only `--backends cuda`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from futgen.data import compare_values, encode_binary, load_file, read_values
from futgen.errors import FutgenError
from futgen.testing.compiled import random_values
from futgen.testing.runner import get_backend
from futgen.testing.spec import read_spec


@dataclass(frozen=True)
class Generated:
    """Inputs for a dataset whose file is absent.

    `values` are `futgen dataset -g` arguments (types make random arrays,
    literals are taken as written), with per-type bounds; or `generator`
    names a program of the suite and the literal arguments it is run on.
    """

    values: tuple[str, ...] = ()
    bounds: tuple[str, ...] = ()
    generator: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Program:
    path: str
    generated: dict[str, Generated] = field(default_factory=dict)
    # Datasets too big for the interpreter to check in minutes; they run on
    # the compiled backends only where their expected output is present.
    no_reference: frozenset[str] = frozenset()


def _hotspot(n: int) -> Generated:
    return Generated(("360i32", f"[{n}][{n}]f32", f"[{n}][{n}]f32"),
                     ("--f32-bounds=300:350",), note="temperatures in [300, 350)")


PROGRAMS = [
    Program("rodinia/backprop/backprop.fut"),
    Program("rodinia/nn/nn.fut", {
        "data/medium.in.gz": Generated(("10i32", "30f32", "90f32", "[855280]f32", "[855280]f32"),
                                       ("--f32-bounds=0:90",), note="855280 points")}),
    Program("rodinia/pathfinder/pathfinder.fut"),
    Program("rodinia/lud/lud.fut", {
        "data/512.in.gz": Generated(("512i64",), generator="rodinia/lud/lud-input.fut"),
        "data/2048.in.gz": Generated(("2048i64",), generator="rodinia/lud/lud-input.fut")},
        no_reference=frozenset({"data/2048.in.gz"})),
    Program("rodinia/srad/srad.fut", {
        "data/image.in.gz": Generated(("[502][458]u8",), note="502 x 458 image")}),
    Program("rodinia/lavaMD/lavaMD.fut", {
        "data/3_boxes.in": Generated(("3i64", "50i64", "27i64"),
                                     generator="rodinia/lavaMD/lavaMD-input.fut"),
        "data/10_boxes.in.gz": Generated(("10i64", "50i64", "27i64"),
                                         generator="rodinia/lavaMD/lavaMD-input.fut")}),
    Program("rodinia/nw/nw.fut", {
        "data/tiny.in": Generated(("10i32", "[65][65]i32", "[65][65]i32"),
                                  ("--i32-bounds=-10:10",), note="edge 64, penalty 10"),
        "data/small.in": Generated(("10i32", "[257][257]i32", "[257][257]i32"),
                                   ("--i32-bounds=-10:10",), note="edge 256"),
        "data/medium.in.gz": Generated(("10i32", "[1025][1025]i32", "[1025][1025]i32"),
                                       ("--i32-bounds=-10:10",), note="edge 1024"),
        "data/large.in.gz": Generated(("10i32", "[2049][2049]i32", "[2049][2049]i32"),
                                      ("--i32-bounds=-10:10",), note="edge 2048")}),
    Program("rodinia/hotspot/hotspot.fut", {
        "data/64.in": _hotspot(64), "data/512.in": _hotspot(512),
        "data/1024.in": _hotspot(1024)}),
    Program("rodinia/kmeans/kmeans.fut", {
        "data/trivial.in": Generated(("1i32", "2i32", "10i32", "[8][2]f32"), note="trivial"),
        "data/100.in": Generated(("1i32", "5i32", "50i32", "[100][34]f32")),
        "data/204800.in.gz": Generated(("1i32", "5i32", "50i32", "[204800][34]f32")),
        "data/kdd_cup.in.gz": Generated(("1i32", "5i32", "50i32", "[494019][34]f32"))},
        no_reference=frozenset({"data/kdd_cup.in.gz"})),
    Program("finpar/LocVolCalib.fut"),
    Program("finpar/OptionPricing.fut"),
    Program("micro/mmm/mmm.fut", no_reference=frozenset({
        "[1024][1024]f32 [1024][1024]f32", "[2048][4096]f32 [4096][2048]f32"})),
    Program("parboil/sgemm/sgemm.fut", {
        "data/tiny.in": Generated(("[64][64]f32", "[64][64]f32", "[64][64]f32", "1.5f32",
                                   "0.5f32")),
        "data/small.in": Generated(("[128][96]f32", "[96][160]f32", "[128][160]f32", "1.5f32",
                                    "0.5f32")),
        "data/medium.in.gz": Generated(("[1024][992]f32", "[992][1056]f32", "[1024][1056]f32",
                                        "1.5f32", "0.5f32"))}),
]


# ------------------------------------------------------------------ inputs


def dataset_values(gen: Generated, suite: Path, seed: int) -> list[Any]:
    """The inputs of an absent dataset (see `Generated`)."""
    if gen.generator is not None:
        args = read_values(" ".join(gen.values).encode(), "<generator arguments>")
        program = get_backend("interpreter").compile(str(suite / gen.generator))
        return list(program.call("main", args))
    cmd = [sys.executable, "-m", "futgen", "dataset", "-b", "-s", str(seed), *gen.bounds]
    for v in gen.values:
        cmd += ["-g", v]
    out = subprocess.run(cmd, check=True, capture_output=True).stdout
    return read_values(out, "<futgen dataset>")


# ------------------------------------------------------------------ running


@dataclass
class Outcome:
    program: str
    dataset: str
    backend: str
    status: str  # passed | failed | unchecked (ran, no reference) | build-failed | skipped
    seconds: float = 0.0
    message: str = ""


def run_program(prog: Program, suite: Path, backends: list[str],
                ref_dir: Path | None = None) -> list[Outcome]:
    path = suite / prog.path
    name = prog.path
    compiled: dict[str, Any] = {}
    out: list[Outcome] = []
    for b in backends:
        t0 = time.perf_counter()
        try:
            compiled[b] = get_backend(b).compile(str(path))
        except FutgenError as e:
            out.append(Outcome(name, "(build)", b, "build-failed", time.perf_counter() - t0,
                               str(e).splitlines()[0]))
            print(_line(out[-1]), flush=True)
    spec = read_spec(str(path))
    for case in spec.cases:
        for run in case.runs:
            ds = run.input.source or run.description
            inputs, expected, note = _inputs_and_expected(prog, suite, run, ds)
            if inputs is None:
                out += [Outcome(name, ds, b, "skipped", message=note) for b in compiled]
                continue
            ref_file = _reference_file(ref_dir, prog, ds)
            reference = expected
            if reference is None and ref_file is not None and ref_file.exists():
                reference = load_file(str(ref_file))
            for b, program in compiled.items():
                if b == "interpreter" and expected is not None and "compiled" in run.tags:
                    # As `futhark test -i`: such runs are for compiled code,
                    # and their expected output is at hand.
                    out.append(Outcome(name, ds, b, "skipped", message="tag compiled"))
                    continue
                if reference is None and b != "interpreter" and ds in prog.no_reference:
                    out.append(Outcome(name, ds, b, "skipped", message="no reference output"))
                    continue
                if reference is None and b == "interpreter" and ds in prog.no_reference:
                    continue
                o = _run_one(name, ds, b, program, case.entry, inputs, reference)
                if o.message == "" and note:
                    o.message = note
                out.append(o)
                if reference is None and b == "interpreter" and o.status == "passed":
                    reference = o.result  # type: ignore[attr-defined]
                    if ref_file is not None:
                        ref_file.write_bytes(gzip.compress(
                            b"".join(encode_binary(v) for v in reference)))
                print(_line(o), flush=True)
    return out


def _reference_file(ref_dir: Path | None, prog: Program, ds: str) -> Path | None:
    if ref_dir is None:
        return None
    ref_dir.mkdir(parents=True, exist_ok=True)
    return ref_dir / (Path(prog.path).stem + "." + re.sub(r"[^A-Za-z0-9_.-]", "_", ds) + ".gz")


def _inputs_and_expected(prog: Program, suite: Path, run: Any, ds: str
                         ) -> tuple[list[Any] | None, list[Any] | None, str]:
    """Inputs of a run and its expected output (None: compare with the interpreter)."""
    if run.input.kind == "inline" or (run.input.kind == "file"
                                      and os.path.exists(run.input.path or "")):
        expected = None
        if run.expected is not None and (run.expected.kind == "inline"
                                         or os.path.exists(run.expected.path or "")):
            expected = run.expected.load()
        return run.input.load(), expected, f"{run.input.kind} data"
    if run.input.kind == "random":
        return random_values(run.input.gen, seed=run.index), None, "random input"
    gen = prog.generated.get(ds)
    if gen is None:
        return None, None, f"input {ds} absent and no documented size"
    seed = sum(map(ord, ds))
    return dataset_values(gen, suite, seed), None, "generated: " + (gen.note or " ".join(gen.values))


def _run_one(name: str, ds: str, backend: str, program: Any, entry: str, inputs: list[Any],
             expected: list[Any] | None) -> Outcome:
    args = [a.copy() if hasattr(a, "copy") else a for a in inputs]
    t0 = time.perf_counter()
    try:
        result = list(program.call(entry, args))
    except Exception as e:  # noqa: BLE001 - a failure of one run is reported, not fatal
        return Outcome(name, ds, backend, "failed", time.perf_counter() - t0,
                       f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    seconds = time.perf_counter() - t0
    # Without expected values only the interpreter, the oracle, passes.
    status = "passed" if expected is not None or backend == "interpreter" else "unchecked"
    o = Outcome(name, ds, backend, status, seconds)
    o.result = result  # type: ignore[attr-defined]
    if expected is not None:
        mismatches = compare_values(expected, result)
        if mismatches:
            o.status, o.message = "failed", str(mismatches[0])
    return o


def _line(o: Outcome) -> str:
    return f"{o.status:12} {o.backend:11} {o.seconds:8.2f}s  {o.program} {o.dataset}  {o.message}"


def summary(outcomes: list[Outcome], backends: list[str]) -> str:
    """program x backend: passed/run datasets (build failures marked; a run
    without a reference counts as run, not passed)."""
    rows = []
    for prog in dict.fromkeys(o.program for o in outcomes):
        cells = []
        for b in backends:
            mine = [o for o in outcomes if o.program == prog and o.backend == b]
            if any(o.status == "build-failed" for o in mine):
                cells.append("build fails")
                continue
            ran = [o for o in mine if o.status in ("passed", "failed", "unchecked")]
            passed = sum(o.status == "passed" for o in ran)
            cells.append(f"{passed}/{len(ran)}")
        rows.append(f"| {prog} | " + " | ".join(cells) + " |")
    head = "| program | " + " | ".join(backends) + " |\n|---|" + "---|" * len(backends)
    return head + "\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True, type=Path, help="futhark-benchmarks checkout")
    ap.add_argument("--backends", default="interpreter,cpu")
    ap.add_argument("--only", default="", help="comma-separated program names (e.g. lud,nw)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--reference", type=Path, help="folder of the interpreter's results")
    a = ap.parse_args(argv)
    backends = a.backends.split(",")
    if "interpreter" in backends:  # the reference runs first
        backends.remove("interpreter")
        backends.insert(0, "interpreter")
    only = set(filter(None, a.only.split(",")))
    outcomes: list[Outcome] = []
    for prog in PROGRAMS:
        if only and Path(prog.path).stem not in only:
            continue
        outcomes += run_program(prog, a.suite, backends, a.reference)
    table = summary(outcomes, backends)
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        rows = [{k: v for k, v in vars(o).items() if k != "result"} for o in outcomes]
        (a.out / "futhark_programs.json").write_text(json.dumps(rows, indent=1))
    print(table)
    return 1 if any(o.status in ("failed", "build-failed") for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
