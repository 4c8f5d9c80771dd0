"""CUDA graphs through the driver API, which PyCUDA does not wrap.

Stream capture records what is queued on a stream, without running it, as
a graph; an instantiated graph then runs all of it in one launch.  The
calls below use the current context (the backend makes its own current).
Capture is *relaxed*: the pool may allocate device memory and pinned host
memory while a call is recorded.
"""

from __future__ import annotations

import ctypes
from typing import Any

_CAPTURE_RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED
_lib: Any = None


class GraphError(RuntimeError):
    """A driver call on a graph failed (or a capture was invalidated)."""


def _driver() -> Any:
    global _lib
    if _lib is None:
        lib = ctypes.CDLL("libcuda.so.1")
        p, pp, u64 = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_ulonglong
        for name, args in [("cuStreamBeginCapture_v2", [p, ctypes.c_int]),
                           ("cuStreamEndCapture", [p, pp]),
                           ("cuGraphInstantiateWithFlags", [pp, p, u64]),
                           ("cuGraphLaunch", [p, p]),
                           ("cuGraphGetNodes", [p, pp, ctypes.POINTER(ctypes.c_size_t)]),
                           ("cuGraphExecDestroy", [p]),
                           ("cuGraphDestroy", [p]),
                           ("cuGetErrorName", [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)])]:
            f = getattr(lib, name)
            f.argtypes, f.restype = args, ctypes.c_int
        _lib = lib
    return _lib


def _check(result: int, what: str) -> None:
    if result != 0:
        name = ctypes.c_char_p()
        _lib.cuGetErrorName(result, ctypes.byref(name))
        raise GraphError(f"{what} failed: {(name.value or b'error %d' % result).decode()}")


def begin_capture(stream: int) -> None:
    _check(_driver().cuStreamBeginCapture_v2(stream, _CAPTURE_RELAXED), "cuStreamBeginCapture")


def end_capture(stream: int) -> int:
    """The graph recorded on `stream` since `begin_capture`; ends the
    capture even where it was invalidated (then raises GraphError)."""
    graph = ctypes.c_void_p()
    _check(_driver().cuStreamEndCapture(stream, ctypes.byref(graph)), "cuStreamEndCapture")
    return graph.value or 0


def instantiate(graph: int) -> int:
    graph_exec = ctypes.c_void_p()
    _check(_driver().cuGraphInstantiateWithFlags(ctypes.byref(graph_exec), graph, 0),
           "cuGraphInstantiate")
    return graph_exec.value


def launch(graph_exec: int, stream: int) -> None:
    _check(_driver().cuGraphLaunch(graph_exec, stream), "cuGraphLaunch")


def node_count(graph: int) -> int:
    count = ctypes.c_size_t(0)
    _check(_driver().cuGraphGetNodes(graph, None, ctypes.byref(count)), "cuGraphGetNodes")
    return count.value


def destroy(graph: int, graph_exec: int) -> None:
    """Free a graph and its instance (either may be 0); errors are ignored,
    as at interpreter exit the context may be gone."""
    if graph_exec:
        _driver().cuGraphExecDestroy(graph_exec)
    if graph:
        _driver().cuGraphDestroy(graph)
