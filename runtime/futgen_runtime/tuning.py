"""Tuning parameters of a generated package: values, version guards, logging.

A package lists its parameters in `TUNING_PARAMS` (name -> class, default,
ancestor path, meaning) and bakes tuned values into `TUNING`.  An instance
takes its values from, in increasing priority: the defaults, `TUNING`, the
file named by `$FUTGEN_TUNING`, and the `tuning=` argument.  Tuning files
are Futhark's: `name=value` lines, blank lines and `--` comments.

Of Futhark's global names, `default_threshold` is taken: in a source it sets
every version guard (`<entry>.suff_outer_par_<k>`, `.suff_intra_par_<k>`,
whose defaults are the global default threshold) that the same source does
not name; the strategy thresholds keep their own defaults.  So is
`default_tblock_size`, for every block size (class `tblock_size`: the
kernels whose code does not depend on it; a multiple of 32 from 32 to
1024).  An intra-block kernel's run length (class `run_length`, one of
its `values`) bounds the elements each thread takes.  Tile sizes (class
`tile_size`) are constants compiled into their
kernels, each with the values its kernel allows (`values` in
TUNING_PARAMS): an instance whose tile sizes differ from those the
package's kernels were built with (`TUNING`'s, else the defaults) compiles
its kernels again with `-D<macro>=<value>` (`defines`; cached on disk, and
it needs nvcc).  A tile size means something different in each kernel, so
Futhark's `default_tile_size` is refused with that reason.

A version guard (`Tuning.guard`) takes its version when the threshold is at
most the parallelism the version exploits.  With logging on (`log=True` or
`$FUTGEN_LOG` set and not `0`) each guard prints Futhark's line
`Compared <name> <= <P>: true|false.` to stderr, which the autotuner reads;
`guards` holds the guards of the last call either way.

With profiling on (`profile=True` or `$FUTGEN_PROFILE` set and not `0`),
the code each guard chooses (the versions of an `if`, the kernels of a
strategy cascade) is timed: the host code brackets it with `enter` and
`leave`, which mark the backend's clock (CUDA events, read only once the
call is over), and `regions()` gives each guard of the last call with the
microseconds of the code it chose.  The autotuner's profiling method reads
them.
"""

from __future__ import annotations

import numbers
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .errors import FutgenError


class Tuning:
    """The tuning values of one instance of a package."""

    def __init__(self, params: Mapping[str, Mapping], baked: Mapping[str, int],
                 overrides: Mapping[str, int] | None = None, log: bool = False,
                 profile: bool = False) -> None:
        self.params = params
        self.values = {name: int(p["default"]) for name, p in params.items()}
        self._apply(_checked(baked, params, "TUNING"))
        # The tile sizes the package's kernels (source and images) were built with.
        self.built = {name: self.values[name] for name, p in params.items()
                      if p["class"] == TILE_SIZE}
        path = os.environ.get("FUTGEN_TUNING")
        if path:
            self._apply(read_tuning_file(path, params))
        self._apply(_checked(overrides or {}, params, "tuning="))
        self.log = log or env_flag("FUTGEN_LOG")
        self.profile = profile or env_flag("FUTGEN_PROFILE")
        # (name, parallelism, taken) of every guard of the last call, in order.
        self.guards: list[tuple[str, int, bool]] = []
        # (index in guards, backend, start mark, end mark) of each timed region.
        self._spans: list[tuple[int, Any, Any, Any]] = []
        # The block and tile sizes the last call's launches used.
        self.sizes_used: set[str] = set()

    def start_call(self) -> None:
        """Forget the last call's guards, regions and sizes."""
        self.guards.clear()
        self._spans.clear()
        self.sizes_used.clear()

    def block_size(self, name: str) -> int:
        """Block size (or run length) `name`'s value, noting that the call used it."""
        self.sizes_used.add(name)
        return self.values[name]

    def tile_size(self, name: str) -> None:
        """Note that the call launched a kernel compiled with tile size `name`."""
        self.sizes_used.add(name)

    def defines(self) -> dict[str, int]:
        """The macros to compile the kernels with: the tile sizes set apart
        from those the package was built with."""
        return {self.params[name]["macro"]: self.values[name]
                for name, built in self.built.items() if self.values[name] != built}

    def set(self, values: Mapping[str, int],
            compile: Callable[[dict[str, int]], None] | None = None) -> None:
        """Set parameters after creation, checked as `tuning=` is; with
        `compile`, then give it the new `defines()` (the kernels compiled
        with them), and if that fails, keep the values as they were."""
        before = dict(self.values)
        self._apply(_checked(values, self.params, "set_tuning"))
        if compile is None:
            return
        try:
            compile(self.defines())
        except BaseException:
            self.values.clear()  # the same dict: instances expose it as `tuning`
            self.values.update(before)
            raise

    def _apply(self, values: dict[str, int]) -> None:
        """One source's values over the lower ones: its global defaults
        first, for the version guards and the block sizes, then the names it
        gives."""
        default = values.pop(DEFAULT_THRESHOLD, None)
        if default is not None:
            self.values.update((name, default) for name in self.params if GUARD_MARK in name)
        block = values.pop(DEFAULT_TBLOCK_SIZE, None)
        if block is not None:
            self.values.update((name, block) for name, p in self.params.items()
                               if p["class"] == TBLOCK_SIZE)
        self.values.update(values)

    def guard(self, name: str, par: int) -> bool:
        """Whether the version guarded by threshold `name` runs at parallelism `par`."""
        taken = bool(self.values[name] <= par)
        if self.log:
            print(f"Compared {name} <= {int(par)}: {'true' if taken else 'false'}.",
                  file=sys.stderr)
        self.guards.append((name, int(par), taken))
        return taken


    def enter(self, b: Any) -> tuple[int, Any] | None:
        """The start of code some guards chose (None when not profiling)."""
        return (len(self.guards), b.mark()) if self.profile else None

    def leave(self, b: Any, token: tuple[int, Any] | None, name: str | None = None) -> None:
        """The end of the code begun at `token`: it is the region of the last
        guard `name` evaluated before it began, or, with no name, of every
        guard evaluated since (the strategy guards of one kernel plan)."""
        if token is None:
            return
        start_index, start = token
        end = b.mark()
        if name is None:
            chosen = range(start_index, len(self.guards))
        else:
            chosen = [next((i for i in range(start_index - 1, -1, -1)
                            if self.guards[i][0] == name), -1)]
        self._spans += [(i, b, start, end) for i in chosen if i >= 0]

    def regions(self) -> list[tuple[str, int, bool, float]]:
        """(name, parallelism, taken, microseconds of the code it chose) of
        the last call's timed guards, in the order they were evaluated."""
        out = []
        for i, b, start, end in sorted(self._spans, key=lambda s: s[0]):
            name, par, taken = self.guards[i]
            out.append((name, par, taken, b.elapsed_us(start, end)))
        return out


def env_flag(name: str) -> bool:
    return os.environ.get(name, "0") not in ("", "0")


def read_tuning_file(path: str | Path, params: Mapping[str, Mapping],
                     unknown: list[str] | None = None) -> dict[str, int]:
    """The `name=value` lines of tuning file `path`, checked against `params`;
    names `params` lacks (and `default_tile_size`) are an error, or, given
    the list `unknown`, put there and left out."""
    values: dict[str, int] = {}
    text = Path(path).read_text(encoding="utf-8")
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("--", 1)[0].strip()
        if not line:
            continue
        name, eq, value = (part.strip() for part in line.partition("="))
        where = f"{path}:{lineno}"
        if not eq or not value.lstrip("-").isdigit():
            raise FutgenError(f"{where}: expected a line `name=value` with an integer "
                              f"value, got {line!r}")
        values[name] = int(value)
    if unknown is not None:
        # Leniently read (a file found beside the program, maybe Futhark's own),
        # Futhark's default_tile_size is left out too.
        known = set(params) | {DEFAULT_THRESHOLD, DEFAULT_TBLOCK_SIZE}
        unknown += [name for name in values if name not in known]
        values = {name: v for name, v in values.items() if name in known}
    return _checked(values, params, str(path))


DEFAULT_THRESHOLD = "default_threshold"
DEFAULT_TBLOCK_SIZE = "default_tblock_size"
TBLOCK_SIZE = "tblock_size"  # the class of block sizes
TILE_SIZE = "tile_size"  # the class of tile sizes
RUN_LENGTH = "run_length"  # the class of intra-block kernels' runs per thread
GUARD_MARK = ".suff_"  # in the names of version guards (suff_outer_par, suff_intra_par)
_FIXED = ("default_tile_size",)


def _checked(values: Mapping[str, int], params: Mapping[str, Mapping],
             source: str) -> dict[str, int]:
    fixed = sorted(set(values) & set(_FIXED))
    if fixed:
        raise FutgenError(f"{source}: {', '.join(fixed)} cannot be set: futgen's tile sizes "
                          "mean something different in each kernel; set them by name "
                          "(class tile_size in TUNING_PARAMS)")
    unknown = sorted(set(values) - set(params) - {DEFAULT_THRESHOLD, DEFAULT_TBLOCK_SIZE})
    if unknown:
        known = ", ".join(sorted(params)) or "none"
        raise FutgenError(f"{source}: unknown tuning parameter {', '.join(unknown)}; "
                          f"this package has: {known}")
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise FutgenError(f"{source}: tuning parameter {name} must be an integer, got {v!r}")
        is_block = name == DEFAULT_TBLOCK_SIZE or params.get(name, {}).get("class") == TBLOCK_SIZE
        if is_block and not (32 <= v <= 1024 and v % 32 == 0):
            raise FutgenError(f"{source}: block size {name} must be a multiple of 32 from 32 "
                              f"to 1024, got {v}")
        allowed = params.get(name, {}).get("values")
        if allowed is not None and v not in allowed:
            what = "run length" if params[name]["class"] == RUN_LENGTH else "tile size"
            raise FutgenError(f"{source}: {what} {name} must be one of "
                              f"{', '.join(map(str, allowed))} (those its kernel allows), "
                              f"got {v}")
    return {name: int(v) for name, v in values.items()}
