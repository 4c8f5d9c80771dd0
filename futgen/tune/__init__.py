"""Tuning: the threshold forest (`forest.py`), `futgen bench` (`bench.py`)
and `futgen autotune` (`autotune.py`, the algorithm; `driver.py`, which
runs it on a program's package)."""

NOISE = 0.03  # times within 3% of each other are a tie (`futgen autotune --noise`)


def microseconds(t: float) -> str:
    """A time in µs as reports print it."""
    return f"{t:,.0f}μs" if t >= 100 else f"{t:.1f}μs"


def check_runs(runs: int) -> None:
    """`--runs` of `futgen bench` and `futgen autotune`: at least one."""
    from futgen.errors import FutgenError

    if runs < 1:
        raise FutgenError(f"--runs must be at least 1, got {runs}")
