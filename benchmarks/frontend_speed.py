"""How fast is the front end?  Times parsing and parsing + type checking.

Generates a Futhark program of about 2000 lines (many `def`s using `let`,
`if`, loops, `map`/`reduce`/`scan`, records, tuples and type abbreviations,
each unit calling the one before it) into a temporary directory, then
reports, best of `--repeat` runs:

- parse:        `futgen.frontend.parser.parse_program(text, file)`
- parse+check:  `futgen.frontend.load(path)` (parse, then type check)

Usage: python benchmarks/frontend_speed.py [--units N] [--repeat R] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# Run from a checkout without installing: put the repository root first.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

UNIT = """\
-- Unit {k}: a little of everything the front end has to handle.
type vec{k} [n] = [n]f32
type acc{k} = {{total: i32, scale: f64}}

-- | Scale and sum, then fold the sign away.
def norm{k} [n] (xs: vec{k} [n]) (s: f32) : f32 =
  let ys = map (\\x -> x * s + {k}) xs
  let t = reduce (+) 0 ys
  in if t > 0 then t else -t

-- | A sequential loop over a record accumulator.
def step{k} (a: acc{k}) (m: i32) : acc{k} =
  let (total, _) =
    loop (total, i) = (a.total, 0) for j < m do
      (total + j * i + {k}, i + 1)
  in a with total = total

-- | Tuples, scans, zips and a call to the previous unit.
def mix{k} [n] (xs: [n]i32) (fs: [n]f32) : (i32, f64) =
  let r = step{k} {{total = reduce (+) 0 xs, scale = 1.5}} 3
  let s = scan (+) 0 xs
  let z = zip xs s |> map (\\(a, b) -> a * b)
  let w = norm{k} fs 2 + {prev}
  let c = if w > 10 then i32.sum z else i32.maximum (map (+ {k}) xs)
  in (r.total + c, r.scale * f64.i32 (i32.i64 (length xs)))

-- | A while loop with a tuple state.
def count{k} (x: i64) : i64 =
  let (_, steps) =
    loop (v, steps) = (x, 0i64) while v > 1 do
      (if v % 2 == 0 then v / 2 else 3 * v + 1, steps + 1)
  in steps + {k}
"""

ENTRY = """\
entry main [n] (xs: [n]i32) (fs: [n]f32) : (i32, f64, i64) =
  let (a, b) = mix{last} xs fs
  in (a, b, count{last} (i64.i32 a))
"""


def generate(units: int) -> str:
    """A well-typed program of `units` units (about 33 lines each)."""
    parts = []
    for k in range(units):
        prev = f"norm{k - 1} fs 1" if k > 0 else "0"
        parts.append(UNIT.format(k=k, prev=prev))
    parts.append(ENTRY.format(last=units - 1))
    return "\n".join(parts)


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=60, help="program units (~33 lines each)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--keep", metavar="DIR", help="write the program here instead of a temp dir")
    args = ap.parse_args()

    try:
        from futgen.frontend import load
        from futgen.frontend.parser import parse_program
    except ImportError as e:
        print(f"frontend_speed: the front end is not available yet ({e})")
        return 2

    text = generate(args.units)
    lines = text.count("\n") + 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep or tmp) / "frontend_speed.fut"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        t_parse = best_of(args.repeat, lambda: parse_program(text, str(path)))
        t_check = best_of(args.repeat, lambda: load(str(path)))
    print(
        f"frontend_speed | {lines} lines, {args.units * 4 + 1} defs | "
        f"parse {t_parse * 1000:.1f} ms | parse+check {t_check * 1000:.1f} ms | "
        f"best of {args.repeat}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
