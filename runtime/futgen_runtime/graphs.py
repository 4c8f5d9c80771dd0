"""Entry calls replayed as CUDA graphs (`graphs=True`, `$FUTGEN_GRAPHS=1`).

An entry call's host code (guards, sizes, allocations and launches, some
10 µs of Python a launch) costs more than its kernels where they are small
and many, as in a time loop.  With graphs on, the first call of an entry
point with given scalar arguments and array shapes is *recorded*: its
host code runs under stream capture, so that its launches and copies are
queued into a CUDA graph instead of run, on arrays of the graph's own
memory.  That call and every later one with the same key then copy their
array arguments into the graph's inputs, launch the graph (one driver
call), and copy its results out to new arrays: results of two calls never
share memory.

The key holds every scalar argument's value, so an entry point called with
ever new scalars would record every call: after `MAX_RECORDED` keys an
entry point records no more and runs its other calls as usual.  A call that
cannot be recorded runs as usual and its key is not tried again: one whose
host code reads the device (a scalar result, a loop whose condition a
kernel computes, a read of an element).  Changed tuning values drop an
instance's graphs, and logging or profiling guards turns graphs off (a
replay evaluates no guard).  A graph keeps the memory its call used for
as long as the instance holds it (until `graphs` is turned off).

Recording is not thread-safe: while one thread records, the backend's
launches go to the graph's stream.  Work other code queues on the default
stream meanwhile (CuPy, torch, another instance) makes the driver refuse
the capture; that call then runs as usual, and its key is not tried again.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from .tuning import env_flag

MAX_RECORDED = 8  # keys an entry point records at most
_UNSEEN = object()  # a key not tried yet (None: tried, cannot be recorded)


class CaptureUnsupported(Exception):
    """The host code did something a graph cannot record (a device read)."""


def _key(entry: str, leaves: Sequence[Any], array_type: type) -> tuple | None:
    """What a recorded call must share with a later one to replay it: array
    shapes and types, scalar types and bits (equal floats may differ: -0.0
    and 0.0; a NaN equals no value); None where a leaf is neither."""
    parts: list[Any] = [entry]
    for x in leaves:
        if isinstance(x, array_type):
            parts.append((tuple(x.shape), x.dtype.str))
        elif hasattr(x, "dtype") and getattr(x, "shape", None) == ():
            parts.append((x.dtype.str, x.tobytes()))
        elif isinstance(x, float):
            parts.append((float, struct.pack("<d", x)))
        elif isinstance(x, bool | int):
            parts.append((type(x), x))
        else:
            return None
    return tuple(parts)


class CallGraphs:
    """The recorded calls of one instance (`Recorded` objects of its backend)."""

    def __init__(self) -> None:
        self._recorded: dict[tuple, Any] = {}  # key -> Recorded, or None: cannot be
        self._tried: dict[str, int] = {}  # entry -> keys recorded or tried
        self._values: dict[str, int] | None = None  # the tuning they were recorded with
        self.replays = 0  # calls that ran as a graph (for tests and benchmarks)

    @staticmethod
    def wanted(on: bool | None) -> bool:
        """`on`, or where not given, whether `$FUTGEN_GRAPHS` is set and not 0."""
        return bool(on) if on is not None else env_flag("FUTGEN_GRAPHS")

    def drop(self) -> None:
        """Forget every graph (their memory is freed)."""
        for rec in self._recorded.values():
            if rec is not None:
                rec.close()
        self._recorded.clear()
        self._tried.clear()

    def call(self, b: Any, entry: str, compiled: Callable[..., Any], leaves: Sequence[Any],
             tuning: Any) -> Any:
        """`compiled(b, *leaves)`, through a graph where it can be."""
        if tuning.log or tuning.profile:
            return compiled(b, *leaves)
        if self._values != tuning.values:
            self.drop()
            self._values = dict(tuning.values)
        key = _key(entry, leaves, b.array_type)
        rec = self._recorded.get(key, _UNSEEN) if key is not None else None
        if rec is _UNSEEN:
            rec = self._record(b, entry, key, compiled, leaves, tuning)
        if rec is None:
            return compiled(b, *leaves)
        tuning.guards[:] = rec.guards
        tuning.sizes_used.clear()
        tuning.sizes_used.update(rec.sizes_used)
        self.replays += 1
        return b.replay(rec, leaves)

    def _record(self, b: Any, entry: str, key: tuple, compiled: Callable[..., Any],
                leaves: Sequence[Any], tuning: Any) -> Any:
        """A new recording of the call, or None (and the key remembered) where
        it cannot be made or the entry point has recorded enough."""
        if self._tried.get(entry, 0) >= MAX_RECORDED:
            return None
        try:
            rec = b.record(lambda inputs: compiled(b, *inputs), leaves)
        except CaptureUnsupported:
            rec = None
            tuning.start_call()  # the guards of the attempt
        # (A FutharkError of the host code passes: that call fails as it would.)
        self._tried[entry] = self._tried.get(entry, 0) + 1
        self._recorded[key] = rec
        if rec is not None:
            rec.note_tuning(tuning)
        return rec
