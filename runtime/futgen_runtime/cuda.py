"""The CUDA backend: PyCUDA context, memory pool, kernels, failure flag, array ops.

Imported only when a CUDA backend is made, so that the runtime (and every
generated package) imports without PyCUDA.  Arrays are C-contiguous
`pycuda.gpuarray.GPUArray`s allocated from one `DeviceMemoryPool`; all
launches go to the default stream, so operations are ordered and only
`sync`/reads wait for the device.  While a call is recorded as a CUDA graph
(`record`, futgen_runtime/graphs.py) they go to the graph's stream instead,
its memory comes from the graph's own pool, and reads of the device raise
`CaptureUnsupported`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import math
import struct
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pycuda
import pycuda.driver as cuda
from pycuda import gpuarray
from pycuda.tools import DeviceMemoryPool

from . import cudagraph
from .compile import DEFAULT_OPTIONS, compile_cubin
from .errors import FAILURE_ARGS, FutgenError, FutharkError
from .graphs import CaptureUnsupported
from .indexing import (
    Index,
    Region,
    all_fixed,
    c_strides,
    oob_message,
    resolve,
    shape_text,
)
from .limits import BLOCK_RESERVED_BYTES, intra_shape

MAX_RANK = 8
# Host words of the failure protocol: the arguments, then the code (0: none).
FAILURE_CODE = FAILURE_ARGS
FAILURE_WORDS = FAILURE_CODE + 1
_BUILTINS = Path(__file__).with_name("builtins.cu")
STAGING_BYTES = 1 << 16  # results up to this size come back through pinned memory
# Kernel argument type characters by NumPy scalar type (the struct module's
# format, native alignment: the layout of a kernel's parameters).
_SCALAR_CHARS: dict[type, str] = {
    np.int8: "b", np.uint8: "B", np.int16: "h", np.uint16: "H", np.int32: "i", np.uint32: "I",
    np.int64: "q", np.uint64: "Q", np.float16: "e", np.float32: "f", np.float64: "d",
    np.bool_: "?"}
_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_pushed: list[Any] = []  # contexts this module left current on the main thread


@atexit.register
def _pop_contexts() -> None:
    """Pop what we pushed: PyCUDA aborts at exit if its context stack is not empty."""
    while _pushed:
        _pushed.pop()
        with contextlib.suppress(Exception):
            cuda.Context.pop()


def _choose_device(device: int | str | None) -> Any:
    """A device by index, or the first whose name contains `device` (case-insensitive)."""
    n = cuda.Device.count()
    if n == 0:
        raise RuntimeError("no CUDA device")
    if device is None:
        return cuda.Device(0)
    if isinstance(device, int):
        if not 0 <= device < n:
            raise ValueError(f"CUDA device {device} does not exist (there are {n})")
        return cuda.Device(device)
    names = [cuda.Device(i).name() for i in range(n)]
    for i, name in enumerate(names):
        if device.lower() in name.lower():
            return cuda.Device(i)
    raise ValueError(f"no CUDA device named like {device!r}; there are: {', '.join(names)}")


def _ptr(x: Any) -> int:
    """The device address of a GPUArray or allocation (0 for empty arrays)."""
    data = x.gpudata if isinstance(x, gpuarray.GPUArray) else x
    return 0 if data is None else int(data)


@dataclass(slots=True)
class _Kernel:
    """A loaded kernel and the packing of its parameters for one signature."""

    function: Any
    pack: Any  # struct packing of the failure pointers and the signature's arguments
    shared_limit: int  # dynamic shared memory it may take per block


@dataclass(eq=False)
class Recorded:
    """An entry call recorded as a CUDA graph (`CudaBackend.record`): the
    instantiated graph, the arrays it reads its arguments from and writes
    its results to, and the pool of all the memory it uses."""

    backend: Any
    graph: int
    graph_exec: int
    inputs: list[Any]  # per argument leaf: the graph's array, or the scalar
    results: tuple[Any, ...]
    pool: Any
    keep: list[Any]  # pinned host arrays its copies read
    nodes: int
    guards: list[Any] = field(default_factory=list)  # the tuning state of the call
    sizes_used: set[str] = field(default_factory=set)

    def note_tuning(self, tuning: Any) -> None:
        """Keep the guards and sizes of the recorded call, which replays give back."""
        self.guards, self.sizes_used = list(tuning.guards), set(tuning.sizes_used)

    def close(self) -> None:
        """Free the graph and its memory, once a replay in flight is done."""
        if self.graph_exec:
            with self.backend._current():
                cuda.Context.synchronize()
                cudagraph.destroy(self.graph, self.graph_exec)
                self.graph = self.graph_exec = 0
                self.inputs, self.results, self.keep = [], (), []
                _free_spare_blocks(self.pool)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at exit the context may be gone
            self.close()


class CudaBackend:
    """Backend arrays are C-contiguous GPUArrays on the chosen device."""

    kind = "cuda"
    array_type = gpuarray.GPUArray

    def __init__(self, *, device: int | str | None = None, kernels_source: str = "",
                 kernel_images: Mapping[str, bytes] | None = None,
                 errors: Mapping[int, tuple[str, str]] | None = None,
                 cache_dir: str | Path | None = None) -> None:
        cuda.init()
        self.device = _choose_device(device)
        self.arch = "sm_{}{}".format(*self.device.compute_capability())
        self.device_name = self.device.name()
        self.errors = dict(errors or {})
        self.cache_dir = cache_dir
        self._ctx = self.device.retain_primary_context()
        self._ctx.push()
        self._ctx_handle = self._ctx.handle
        _pushed.append(self._ctx)
        attrs = self.device.get_attributes()
        self._sm_count = int(attrs[cuda.device_attribute.MULTIPROCESSOR_COUNT])
        self._threads_per_sm = int(attrs[cuda.device_attribute.MAX_THREADS_PER_MULTIPROCESSOR])
        self._max_shared = int(attrs[cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN])
        # The smallest grid cap of any block size: launches below it skip max_grid.
        self._uncapped_blocks = self.max_grid(1024)
        self._pool = _holding_pool()
        # The failure protocol (futgen/codegen/plan.py): the first failing
        # thread wins an atomicCAS on a device word (which running kernels
        # poll), then writes its arguments and the code to host memory the
        # device maps, so that the host learns of a failure without a copy.
        self._failure = cuda.mem_alloc(8)
        cuda.memset_d32(self._failure, 0, 2)
        self._failure_host = cuda.pagelocked_empty(
            FAILURE_WORDS, np.int64, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
        self._failure_host[:] = 0
        self._fail_ptrs = (int(self._failure),
                           int(self._failure_host.base.get_device_pointer()))
        self._pending = False  # launches since the device was last waited for
        # Where launches and copies go: None (the default stream), or while a
        # call is recorded, the graph stream; then `_recording` holds the host
        # arrays the recorded copies read.
        self._stream: Any = None
        self._graph_stream: Any = None
        self._recording: list[Any] | None = None
        # Small results and scalars come back through pinned host memory.
        self._staging = cuda.pagelocked_empty(STAGING_BYTES, np.uint8)
        self._staging_lock = threading.Lock()
        if not hasattr(cuda.Function, "_launch_kernel"):
            raise RuntimeError(f"PyCUDA {pycuda.VERSION_TEXT} is too old: futgen launches "
                               f"kernels through Function._launch_kernel")
        self._device_key = self.device.pci_bus_id()
        self._fast_arrays = _fast_arrays_match(self._device_key)
        self._kernels: dict[tuple[str, str], _Kernel] = {}
        self._array_templates: dict[tuple, dict] = {}
        self.kernel_origin = "none"  # "cubin", "ptx", "cache" or "compiled": for diagnostics
        self._source, self._images = kernels_source, dict(kernel_images or {})
        # The program's modules (and where each came from), by defines.
        self._programs: dict[tuple, tuple[Any, str]] = {}
        self._defines: dict[str, int] = {}
        self._module = self._load_program(self._defines)
        self._builtins: Any = None

    # ------------------------------------------------------------ context, memory

    def _current(self) -> contextlib.AbstractContextManager:
        """Our context made current for one call (other threads, or after
        CuPy/torch); nothing to do, the common case, costs one driver query."""
        return _ALREADY_CURRENT if self._is_current() else _pushed_context(self._ctx)

    def _is_current(self) -> bool:
        cur = _get_current()
        return cur is not None and cur.handle == self._ctx_handle

    def _allocate(self, nbytes: int) -> Any:
        """Pool allocation; out of memory frees the pool's spare blocks, then raises MemoryError."""
        nbytes = max(nbytes, _SMALLEST_REQUEST)  # never the bin of the pool's kept block
        try:
            return self._pool.allocate(nbytes)
        except cuda.MemoryError:
            if self._recording is not None:  # the recorded graph may use its spare blocks
                raise CaptureUnsupported("the call ran out of memory while recorded") from None
            _free_spare_blocks(self._pool)
        try:
            return self._pool.allocate(nbytes)
        except cuda.MemoryError:
            free, total = cuda.mem_get_info()
            raise MemoryError(f"out of GPU memory allocating {nbytes} bytes on "
                              f"{self.device.name()} ({free} of {total} bytes free, "
                              f"{self._pool.active_blocks} blocks in use)") from None

    def _new(self, shape: Sequence[int], dtype: Any) -> gpuarray.GPUArray:
        """A C-contiguous GPUArray from the pool.  Made, where this PyCUDA's
        arrays look as expected, from a per-(shape, dtype) copy of the
        attributes the constructor sets, without its checks and launch-shape
        query: a third of a small call's allocation cost."""
        attrs = self._attrs(shape, dtype)
        if attrs is None:
            return gpuarray.GPUArray(tuple(int(n) for n in shape), np.dtype(dtype),
                                     allocator=self._allocate)
        x = object.__new__(gpuarray.GPUArray)
        x.__dict__.update(attrs)
        if attrs["nbytes"]:
            x.gpudata = self._allocate(attrs["nbytes"])
        return x

    def _attrs(self, shape: Sequence[int], dtype: Any) -> dict | None:
        """The attributes of a new array (None where the constructor must make it)."""
        key = (shape, dtype)
        try:
            return self._array_templates[key]
        except (KeyError, TypeError):  # a new shape, or an unhashable one (a list)
            shape, dtype = tuple(int(n) for n in shape), np.dtype(dtype)
            if not self._fast_arrays:
                return None
            return self._array_template(key, shape, dtype)

    def _deferred(self, shape: tuple[int, ...], dtype: Any,
                  make: Callable[[Any], None]) -> gpuarray.GPUArray:
        """An array that `make(data)` fills once its memory is first asked
        for (see `_Deferred`)."""
        attrs = self._attrs(shape, dtype)
        if attrs is None or not attrs["nbytes"]:
            x = self._new(shape, dtype)
            if x.nbytes:
                make(x.gpudata)
            return x
        def made() -> Any:  # wherever `gpudata` is first read: our context made current
            with self._current():
                data = self._allocate(attrs["nbytes"])
                make(data)
            return data

        x = object.__new__(_Deferred)
        x.__dict__.update(attrs)
        x.__dict__["_make"] = made
        return x

    def settled(self, x: Any) -> Any:
        """`x` with its contents made, as a plain GPUArray: a result leaving
        the package must not wait on its source, which the caller may
        change, and must look like any other (passed back in, say)."""
        if not isinstance(x, _Deferred):
            return x
        data = x.gpudata
        y = object.__new__(gpuarray.GPUArray)
        y.__dict__.update((k, v) for k, v in x.__dict__.items() if k not in ("_data", "_make"))
        y.gpudata = data
        return y

    def _array_template(self, key: tuple, shape: tuple[int, ...], dtype: np.dtype) -> dict:
        if len(self._array_templates) >= 4096:  # shapes of a long run: keep the recent ones
            self._array_templates.clear()
        attrs = vars(_fast_gpuarray(shape, dtype, math.prod(shape), None, self._allocate,
                                    self._device_key))
        with contextlib.suppress(TypeError):  # an unhashable shape: not cached
            self._array_templates[key] = attrs
        return attrs

    # ------------------------------------------------------------ kernels

    def _load_program(self, defines: Mapping[str, int]) -> Any:
        """The program's module compiled with `defines`: a shipped cubin for
        this arch, else PTX (both built without defines), else the source
        compiled (cached on disk)."""
        key = tuple(sorted(defines.items()))
        if key not in self._programs:
            self._programs[key] = self._module_of(key)
        module, self.kernel_origin = self._programs[key]
        return module

    def _module_of(self, defines: tuple[tuple[str, int], ...]) -> tuple[Any, str]:
        for image, origin in ((self.arch, "cubin"), ("ptx", "ptx")):
            if defines or image not in self._images:
                continue
            try:
                return cuda.module_from_buffer(self._images[image]), origin
            except cuda.Error:
                continue
        if not self._source.strip():
            return None, "none"
        options = (*DEFAULT_OPTIONS, *(f"-D{name}={value}" for name, value in defines))
        try:
            cubin, hit = compile_cubin(self._source, self.arch, options, cache_dir=self.cache_dir)
        except RuntimeError as e:
            if not defines:
                raise
            shown = ", ".join(f"{name}={value}" for name, value in defines)
            raise FutgenError(f"tile sizes set apart from the package's ({shown}) need its "
                              f"kernels compiled again, which failed: {e}") from None
        return cuda.module_from_buffer(cubin), "cache" if hit else "compiled"

    def use_defines(self, defines: Mapping[str, int]) -> None:
        """Run the program's kernels compiled with the macros `defines` (tile
        sizes tuned apart from the package's), compiling them if new."""
        if dict(defines) == self._defines:
            return
        with self._current():
            self._module = self._load_program(defines)
        self._defines = dict(defines)
        self._kernels.clear()

    def _compile(self, source: str) -> Any:
        cubin, _ = compile_cubin(source, self.arch, cache_dir=self.cache_dir)
        return cuda.module_from_buffer(cubin)

    def _kernel(self, kernel: str, sig: str) -> _Kernel:
        """The loaded `kernel` with its argument packing for `sig` (cached)."""
        module = self._module
        if kernel.startswith("futgen_"):
            if self._builtins is None:
                self._builtins = self._compile(_BUILTINS.read_text())
            module = self._builtins
        if module is None:
            raise ValueError(f"no CUDA kernel {kernel}: the program has no kernels")
        try:
            f = module.get_function(kernel)
        except cuda.LogicError:
            raise ValueError(f"no CUDA kernel named {kernel}") from None
        k = _Kernel(f, struct.Struct("PP" + sig).pack, f.get_attribute(
            cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES))
        self._kernels[(kernel, sig)] = k
        return k

    def launch(self, kernel: str, threads: int, block: int | tuple[int, int],
               args: Sequence[Any], shared_bytes: int = 0) -> None:
        """Run `kernel` over `threads` threads in blocks of `block` (grid capped:
        grid-stride), or of `block[0] * block[1]` in that shape; `args` are
        device arrays and NumPy scalars."""
        sig, values = _kernel_args(args)
        block = (int(block[0]), int(block[1])) if isinstance(block, tuple) else int(block)
        self.launch_sig(kernel, sig, int(threads), block, int(shared_bytes), *values)

    def launch_sig(self, kernel: str, sig: str, threads: int, block: int | tuple[int, int],
                   shared_bytes: int, *args: Any) -> None:
        """`launch` with the argument signature known (generated code knows
        it): `sig` has a struct character per argument, `P` for a device
        pointer (an allocation, an int, or None for an empty array)."""
        if threads <= 0:
            return
        if not self._is_current():  # another thread, or a context CuPy left current
            with _pushed_context(self._ctx):
                return self.launch_sig(kernel, sig, threads, block, shared_bytes, *args)
        k = self._kernels.get((kernel, sig)) or self._kernel(kernel, sig)
        shape = (block, 1, 1) if isinstance(block, int) else (*block, 1)
        block = shape[0] * shape[1]
        blocks = -(-threads // block)
        if blocks > self._uncapped_blocks:
            blocks = min(blocks, self.max_grid(block))
        try:
            params = k.pack(*self._fail_ptrs, *args)
        except struct.error:
            params = k.pack(*self._fail_ptrs, *_coerced(sig, args))
        if shared_bytes > k.shared_limit:  # beyond 48 KiB with its own, a kernel opts in
            k.function.set_attribute(
                cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes)
            k.shared_limit = shared_bytes
        k.function._launch_kernel((blocks, 1, 1), shape, params, shared_bytes,
                                  self._stream)
        self._pending = True

    def intra_shape(self, widest: int, runs: int, cap: int, nbytes: int) -> tuple[int, int]:
        """(lanes, groups) of an intra-block kernel (`limits.intra_shape`)."""
        return intra_shape(widest, runs, cap, nbytes, self._max_shared)

    def block_fits(self, nbytes: int) -> bool:
        """Whether a block can have `nbytes` of dynamic shared memory besides
        what an intra-block kernel keeps for itself."""
        return nbytes + BLOCK_RESERVED_BYTES <= self._max_shared

    @property
    def sm_count(self) -> int:
        """The device's multiprocessors (split kernels fill them)."""
        return self._sm_count

    @property
    def resident_threads(self) -> int:
        """The threads the device holds at once (intra-block kernels give
        each thread a run of elements where there are many more)."""
        return self._sm_count * self._threads_per_sm

    def max_grid(self, block: int) -> int:
        """The most blocks a launch gets: 8 full waves of the device."""
        return max(1, self._sm_count * max(1, self._threads_per_sm // block) * 8)

    def sync(self) -> None:
        """Wait for the device; raise the failure a kernel reported, and reset the flag."""
        self._not_recording("waits for the device")
        if self._pending:
            with self._current():
                cuda.Context.synchronize()
            self._pending = False
        self.check()

    def mark(self) -> Any:
        """A CUDA event recorded now, after the work queued so far."""
        self._not_recording("records an event")
        with self._current():
            event = cuda.Event()
            event.record()
        return event

    def elapsed_us(self, start: Any, end: Any) -> float:
        """Microseconds of device time between two marks (waits for `end`)."""
        with self._current():
            end.synchronize()
            return start.time_till(end) * 1000.0

    def timed(self, run: Callable[[], Any]) -> tuple[Any, float]:
        """`run()`'s result and the microseconds of device time between CUDA
        events recorded before and after it (host gaps in between count, as
        in a real call); waits for its work and raises its failure."""
        with self._current():
            start, end = cuda.Event(), cuda.Event()
            start.record()
            result = run()
            for leaf in result if isinstance(result, tuple | list) else (result,):
                self.settled(leaf)  # a deferred result's kernel is part of the call
            end.record()
            end.synchronize()
            us = start.time_till(end) * 1000.0
        self._pending = False
        self.check()
        return result, us

    def check(self) -> None:
        """Raise a failure of a kernel that has finished, without waiting for
        the others: entry calls that leave their results on the device report
        a failure here, at the next call, or at `sync`."""
        code = int(self._failure_host[FAILURE_CODE])
        if code == 0:
            return
        with self._current():
            cuda.Context.synchronize()  # the failing kernel's arguments are complete
            args = [int(a) for a in self._failure_host[:FAILURE_CODE]]
            cuda.memset_d32(self._failure, 0, 2)
            self._failure_host[:] = 0
        self._pending = False
        fmt, loc = self.errors.get(code, (f"kernel failure {code} (arguments {{}})", ""))
        try:
            message = fmt.format(*args)
        except (IndexError, KeyError, ValueError):
            message = f"{fmt} (arguments {args})"
        raise FutharkError(message, loc or None)

    # ------------------------------------------------------------ graphs

    def record(self, run: Callable[[list[Any]], Any], leaves: Sequence[Any]) -> Recorded:
        """`run(inputs)`, an entry call's host code on arrays shaped like the
        array leaves of `leaves` (scalars as they are), recorded as a CUDA
        graph and not run: `replay` runs it.  Raises CaptureUnsupported
        where the host code reads the device or the driver cannot record
        what it queues; a FutharkError of the host code passes through."""
        with self._current():
            if self._graph_stream is None:
                self._graph_stream = cuda.Stream()
            stream = self._graph_stream.handle
            pool, keep, saved_pool = _holding_pool(), [], self._pool
            self._pool = pool
            try:
                inputs = [self._new(x.shape, x.dtype) if isinstance(x, gpuarray.GPUArray) else x
                          for x in leaves]
                self._stream, self._recording = self._graph_stream, keep
                results, graph = self._captured(stream, lambda: run(inputs))
            finally:
                self._pool, self._stream, self._recording = saved_pool, None, None
            graph_exec = 0
            try:
                graph_exec = cudagraph.instantiate(graph)
                nodes = cudagraph.node_count(graph)
            except cudagraph.GraphError as e:
                cudagraph.destroy(graph, graph_exec)
                raise CaptureUnsupported(str(e)) from e
            return Recorded(self, graph, graph_exec, inputs, results, pool, keep, nodes)

    def _captured(self, stream: int, run: Callable[[], Any]) -> tuple[tuple, int]:
        """`run()`'s result leaves (made: deferred arrays are part of the
        call) and the graph of what it queued on `stream`."""
        try:
            cudagraph.begin_capture(stream)
        except cudagraph.GraphError as e:
            raise CaptureUnsupported(str(e)) from e
        failure: BaseException | None = None
        results: tuple = ()
        try:
            out = run()
            results = tuple(self.settled(r) for r in (out if isinstance(out, tuple | list)
                                                      else (out,)))
        except BaseException as e:  # noqa: BLE001 -- the capture must end first
            failure = e
        graph = 0
        try:
            graph = cudagraph.end_capture(stream)
        except cudagraph.GraphError as e:
            failure = failure or e
        if failure is None:
            return results, graph
        cudagraph.destroy(graph, 0)
        if isinstance(failure, cuda.Error | cudagraph.GraphError):
            raise CaptureUnsupported(str(failure)) from failure
        raise failure

    def replay(self, rec: Recorded, leaves: Sequence[Any]) -> tuple:
        """Run a recorded call on `leaves`: copy its array arguments in,
        launch the graph, and copy its results out to new arrays.  The copies
        go to the default stream; the graph's stream is a blocking one, so
        the launch waits for the copies in and the copies out wait for it."""
        with self._current():
            for mine, x in zip(rec.inputs, leaves):
                if isinstance(mine, gpuarray.GPUArray) and mine.nbytes and _ptr(mine) != _ptr(x):
                    cuda.memcpy_dtod_async(_ptr(mine), _ptr(x), mine.nbytes)
            cudagraph.launch(rec.graph_exec, self._graph_stream.handle)
            self._pending = True
            return tuple(_copy_gpuarray(r, self._new(r.shape, r.dtype))
                         if isinstance(r, gpuarray.GPUArray) else r for r in rec.results)

    def _not_recording(self, what: str) -> None:
        if self._recording is not None:
            raise CaptureUnsupported(f"the call {what}")

    def _upload_recorded(self, ptr: Any, a: np.ndarray) -> None:
        """A copy of `a` to the device, recorded: from pinned memory the graph keeps."""
        pinned = cuda.pagelocked_empty(a.shape, a.dtype)
        pinned[...] = a
        self._recording.append(pinned)
        cuda.memcpy_htod_async(ptr, pinned, self._stream)

    @staticmethod
    def is_contiguous(x: gpuarray.GPUArray) -> bool:
        """Whether a GPUArray is C-contiguous (cheaper than its `flags`)."""
        return x.strides == _c_strides_bytes(x.shape, x.dtype.itemsize)

    # ------------------------------------------------------------ transfers

    def from_host(self, a: np.ndarray) -> gpuarray.GPUArray:
        with self._current():
            a = np.ascontiguousarray(a)
            x = self._new(a.shape, a.dtype)
            if not a.size:
                return x
            if self._recording is not None:
                self._upload_recorded(x.gpudata, a)
            elif _numpy_owned(a):
                # Pageable memory: the driver copies it to its staging buffer
                # before returning, so `a` may change at once; the DMA and
                # the launches after it are ordered on the default stream.
                cuda.memcpy_htod_async(x.gpudata, a)
            else:  # maybe page-locked: a DMA straight from it, waited for
                cuda.memcpy_htod(x.gpudata, a)
            return x

    def to_host(self, x: gpuarray.GPUArray) -> np.ndarray:
        self._not_recording("reads an array back")
        if 0 < x.nbytes <= STAGING_BYTES:
            return self._read_back(int(x.gpudata), x.nbytes).view(x.dtype).reshape(x.shape)
        out = np.empty(x.shape, x.dtype)
        if x.size:
            with self._current():
                cuda.memcpy_dtoh(out, x.gpudata)  # after every launch before it
            self._pending = False
        return out

    def _read_back(self, ptr: int, nbytes: int) -> np.ndarray:
        """`nbytes` at device address `ptr`, after every launch before, by a
        DMA into pinned memory (no copy through the driver's staging buffer)."""
        self._not_recording("reads the device")
        with self._staging_lock, self._current():
            stage = self._staging[:nbytes]
            cuda.memcpy_dtoh(stage, ptr)
            self._pending = False
            return stage.copy()

    def from_device(self, value: Any) -> gpuarray.GPUArray:
        """A GPUArray or `__cuda_array_interface__` object as a GPUArray, zero copy if contiguous."""
        if isinstance(value, gpuarray.GPUArray):
            if value.flags.c_contiguous:
                return value
            with self._current():
                return _copy_gpuarray(value, self._new(value.shape, value.dtype))
        cai = value.__cuda_array_interface__
        shape, dtype = tuple(cai["shape"]), np.dtype(cai["typestr"])
        strides = cai.get("strides")
        if strides is not None and tuple(strides) != tuple(s * dtype.itemsize
                                                           for s in c_strides(shape)):
            t = type(value)
            raise TypeError(f"a non-contiguous {t.__module__}.{t.__qualname__} cannot be used "
                            f"without a copy; pass a contiguous one (e.g. .contiguous() or "
                            f"cupy.ascontiguousarray)")
        if cai.get("stream") not in (None, 0):
            self._not_recording("waits for another stream")
            with self._current():
                cuda.Context.synchronize()  # the producer's stream may still be writing it
        return gpuarray.GPUArray(shape, dtype, gpudata=int(cai["data"][0]), base=value)

    # ------------------------------------------------------------ creation

    def empty(self, shape: Sequence[int], dtype: Any) -> gpuarray.GPUArray:
        if self._is_current():  # the common case, without a context manager
            return self._new(shape, dtype)
        with _pushed_context(self._ctx):
            return self._new(shape, dtype)

    def zeros(self, shape: Sequence[int], dtype: Any) -> gpuarray.GPUArray:
        with self._current():
            x = self._new(shape, dtype)
            if x.nbytes:
                cuda.memset_d8_async(x.gpudata, 0, x.nbytes, self._stream)
            return x

    def iota(self, n: int, start: Any, stride: Any, dtype: Any) -> gpuarray.GPUArray:
        dt = np.dtype(dtype)
        x = self.empty((n,), dt)
        self.launch(f"futgen_iota_{dt.name}", int(n), 256,
                    [x, np.int64(n), np.int64(_wrap64(start)), np.int64(_wrap64(stride))])
        return x

    def replicate(self, shape: Sequence[int], value: Any, dtype: Any) -> gpuarray.GPUArray:
        """`shape` copies of a scalar (fill) or of an array (tile), whose shape is appended."""
        dt = np.dtype(dtype)
        shape = tuple(int(n) for n in shape)
        if isinstance(value, gpuarray.GPUArray):
            x = self.empty(shape + tuple(value.shape), dt)
            if value.size:
                self.launch(f"futgen_tile_{dt.itemsize}", x.size, 256,
                            [x, np.int64(x.size), value, np.int64(value.size)])
            return x
        if isinstance(value, np.ndarray) and value.ndim > 0:
            return self.replicate(shape, self.from_host(value.astype(dt)), dt)
        x = self.empty(shape, dt)
        bits = np.asarray(value, dtype=dt).reshape(1).view(_UINT_OF_SIZE[dt.itemsize])[0]
        self.launch(f"futgen_fill_{dt.itemsize}", x.size, 256, [x, np.int64(x.size), bits])
        return x

    def copy(self, x: gpuarray.GPUArray) -> gpuarray.GPUArray:
        with self._current():
            return _copy_gpuarray(x, self._new(x.shape, x.dtype), self._stream)

    def concat(self, xs: Sequence[gpuarray.GPUArray]) -> gpuarray.GPUArray:
        if not xs:
            raise ValueError("concat needs at least one array")
        inner = tuple(xs[0].shape[1:])
        for x in xs:
            if tuple(x.shape[1:]) != inner or x.dtype != xs[0].dtype:
                raise ValueError("concat: arrays differ in inner shape or element type")
        with self._current():
            out = self._new((sum(x.shape[0] for x in xs),) + inner, xs[0].dtype)
            at = _ptr(out)
            for x in xs:
                if x.nbytes:
                    cuda.memcpy_dtod_async(at, _ptr(x), x.nbytes, self._stream)
                    at += x.nbytes
            return out

    def reshape(self, x: gpuarray.GPUArray, shape: Sequence[int],
                loc: object = None) -> gpuarray.GPUArray:
        """`x` with a new shape of the same size (a view sharing its memory)."""
        shape = tuple(int(n) for n in shape)
        if math.prod(shape) != x.size:
            raise FutharkError(f"Cannot reshape array of shape {shape_text(x.shape)} "
                               f"to {shape_text(shape)}.", loc)
        if x.size == 0:  # PyCUDA cannot view an array without memory
            return self.empty(shape, x.dtype)
        return x.reshape(shape)

    def rearrange(self, x: gpuarray.GPUArray, perm: Sequence[int]) -> gpuarray.GPUArray:
        """Dimensions permuted and materialised (`perm[i]`: source dim of result
        dim i), or a view of `x` where that is the same (the result aliases
        `x`, as in Futhark and on the CPU backend)."""
        perm = [int(p) for p in perm]
        shape = tuple(x.shape[p] for p in perm)
        if [p for p in perm if x.shape[p] != 1] == [d for d in range(x.ndim) if x.shape[d] != 1]:
            # Only dimensions of size 1 move: the elements keep their order.
            return self.reshape(x, shape)
        lead = len(perm) - 2
        if lead >= 0 and perm == [*range(lead), lead + 1, lead] and x.size:
            # The last two dimensions swapped: by tiles, coalesced both ways;
            # with a side under 32, by runs of whole rows of the narrow side
            # (a tile would leave most of its threads idle).  Deferred until
            # a kernel reads it: a version that reads `x` through may run
            # instead (futgen/opt/rearranges.py).
            return self._deferred(shape, x.dtype, lambda data: self._transpose(data, x))
        src = c_strides(x.shape)
        region = Region(0, shape, tuple(src[p] for p in perm))
        return self._gather(x, region)

    def _transpose(self, out: Any, x: gpuarray.GPUArray) -> None:
        """`out` (device memory) = `x` with its last two dimensions swapped."""
        rows, cols = x.shape[-2:]
        batches = x.size // (rows * cols)
        side = min(rows, cols)
        if side >= 32:
            kernel, blocks = "transpose", batches * -(-rows // 32) * -(-cols // 32)
        else:
            kernel, blocks = "transpose_narrow", batches * -(-max(rows, cols) // (1024 // side))
        self.launch_sig(f"futgen_{kernel}_{x.dtype.itemsize}", "PPqqq", blocks * 256, 256, 0,
                        int(out), int(x.gpudata), batches, rows, cols)

    def array_lit(self, values: Sequence[Any], dtype: Any, shape: Sequence[int]) -> Any:
        """An array from scalars (built on the host) or rows (device arrays, concatenated)."""
        shape = tuple(int(n) for n in shape)
        if any(isinstance(v, gpuarray.GPUArray) for v in values):
            rows = [v if isinstance(v, gpuarray.GPUArray) else self.from_host(np.asarray(v, dtype))
                    for v in values]
            return self.reshape(self.concat([r.reshape((1,) + tuple(r.shape)) for r in rows]),
                                shape)
        return self.from_host(np.array([np.asarray(v) for v in values], np.dtype(dtype))
                              .reshape(shape))

    # ------------------------------------------------------------ indexing

    def _gather(self, x: gpuarray.GPUArray, r: Region) -> gpuarray.GPUArray:
        out = self.empty(r.shape, x.dtype)
        if out.size:
            self.launch(f"futgen_gather_{x.dtype.itemsize}", out.size, 256,
                        [out, np.int64(out.size), x, np.int64(r.offset), *_dims_args(r)])
        return out

    def index(self, x: gpuarray.GPUArray, idx: Index, loc: object = None) -> Any:
        """`x[idx]`, bounds checked on the host: a NumPy scalar if all dims are fixed."""
        r = resolve(x.shape, idx, loc)
        if type(x) is np.ndarray:  # a host mirror (`mirror`), read by element
            return x.reshape(-1)[r.offset]
        if all_fixed(idx, len(x.shape)):
            return self.read_scalar(x, r.offset)
        return self._gather(x, r)

    def update(self, x: gpuarray.GPUArray, idx: Index, value: Any,
               loc: object = None) -> gpuarray.GPUArray:
        """`x with [idx] = value`, in place; returns x."""
        r = resolve(x.shape, idx, loc)
        vshape = tuple(value.shape) if isinstance(value, gpuarray.GPUArray) else np.shape(value)
        if tuple(vshape) != r.shape:
            raise FutharkError(oob_message(list(idx), x.shape), loc)
        if r.size == 0:
            return x
        if not isinstance(value, gpuarray.GPUArray):
            v = np.ascontiguousarray(np.asarray(value, dtype=x.dtype))
            if v.size == 1:
                with self._current():
                    at = _ptr(x) + r.offset * x.dtype.itemsize
                    if self._recording is not None:
                        self._upload_recorded(at, v)
                    else:
                        cuda.memcpy_htod(at, v)
                return x
            value = self.from_host(v)
        self.launch(f"futgen_scatter_{x.dtype.itemsize}", r.size, 256,
                    [x, np.int64(r.size), value, np.int64(r.offset), *_dims_args(r)])
        return x

    def mirror(self, x: gpuarray.GPUArray) -> gpuarray.GPUArray | np.ndarray:
        """A host copy of `x` for a loop's element reads (`index` with every
        dimension fixed) where one DMA through the staging buffer brings it
        (STAGING_BYTES), else `x`: reading a mirror waits for nothing, where
        reading `x` waits for every launch before it."""
        if not 0 < x.nbytes <= STAGING_BYTES:
            return x
        host = self.to_host(x).copy()  # to_host's result is the staging buffer
        self.check()  # a failed kernel may have left `x` unwritten
        return host

    def read_scalar(self, x: gpuarray.GPUArray, i: int = 0) -> Any:
        """Element `i` (flat) of `x` as a NumPy scalar, after checking for kernel failures."""
        i = int(i)
        if not 0 <= i < x.size:
            raise IndexError(f"read_scalar: element {i} of an array of {x.size}")
        item = x.dtype.itemsize
        out = self._read_back(_ptr(x) + i * item, item).view(x.dtype)
        self.check()  # a failed kernel may have left `x` unwritten
        return out[0]


_ALREADY_CURRENT = contextlib.nullcontext()
_get_current = cuda.Context.get_current


class _Deferred(gpuarray.GPUArray):
    """A C-contiguous array whose contents are made when its memory
    (`gpudata`) is first asked for: by a kernel launch that reads it, a
    copy, or a result leaving the call (`settled`, which hands the caller a
    plain GPUArray; `timed` makes results inside the timed region).  A transposition is
    one: where a kernel's version reads its source through, strided, the
    copy is never made.  Its source cannot change before then: the
    transposition aliases it, as in Futhark, so the program may not
    consume the source while it lives."""

    @property
    def gpudata(self) -> Any:
        make = self.__dict__.get("_make")
        if make is not None:  # dropped once made: a failure (out of memory) may be retried
            self.__dict__["_data"] = make()
            del self.__dict__["_make"]
        return self.__dict__["_data"]

    @gpudata.setter
    def gpudata(self, value: Any) -> None:
        self.__dict__.pop("_make", None)
        self.__dict__["_data"] = value


@functools.lru_cache(maxsize=1024)
def _splay(size: int, device: str) -> tuple:
    """PyCUDA's launch shape for elementwise work on `size` elements (a
    device query per call otherwise); `device` keys the cache."""
    return gpuarray.splay(size)


def _fast_gpuarray(shape: tuple[int, ...], dtype: np.dtype, size: int, data: Any,
                   allocator: Any, device: str) -> gpuarray.GPUArray:
    """A C-contiguous GPUArray over `data`, with the attributes its constructor
    sets, made without the constructor's checks and launch-shape query (a
    third of a small call's allocation cost); the backend uses it
    where `_fast_arrays_match` says this PyCUDA's arrays look as expected."""
    x = object.__new__(gpuarray.GPUArray)
    x.shape, x.dtype, x.strides = shape, dtype, _c_strides_bytes(shape, dtype.itemsize)
    x.mem_size = x.size = size
    x.nbytes, x.itemsize = dtype.itemsize * size, dtype.itemsize
    x.allocator, x.gpudata, x.base = allocator, data, None
    x._grid, x._block = _splay(size, device)
    return x


@functools.lru_cache(maxsize=1024)
def _c_strides_bytes(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    return tuple(s * itemsize for s in c_strides(shape))


def _fast_arrays_match(device: str) -> bool:
    """Whether `_fast_gpuarray` makes what GPUArray's constructor makes here."""
    try:
        shape, dtype = (3, 2), np.dtype(np.float32)
        made = gpuarray.GPUArray(shape, dtype, gpudata=0)
        fast = _fast_gpuarray(shape, dtype, 6, 0, made.allocator, device)
        return vars(made) == vars(fast)
    except Exception:  # noqa: BLE001 -- any difference means: use the constructor
        return False


# PyCUDA's memory pool takes the current context when it starts holding
# freed blocks (a block freed into a pool that holds none) and, where no
# context is current, throws from the freeing destructor, which aborts the
# process: an array freed at the end of a thread that never had a context,
# or at exit after `_pop_contexts`.  So each pool keeps one block, of a size
# `_allocate` never asks for (requests are at least _SMALLEST_REQUEST bytes,
# and bins grow with the size), from its creation on: it never stops
# holding blocks, and frees need no context.
_KEPT_BLOCK = 1
_SMALLEST_REQUEST = 2


def _holding_pool() -> DeviceMemoryPool:
    """A memory pool that holds a block from the start (our context current)."""
    pool = DeviceMemoryPool()
    pool.allocate(_KEPT_BLOCK).free()
    return pool


def _free_spare_blocks(pool: DeviceMemoryPool) -> None:
    """Frees the pool's held blocks but one (our context current)."""
    pool.free_held()
    with contextlib.suppress(cuda.Error):  # out of memory even for a byte: keep none
        pool.allocate(_KEPT_BLOCK).free()


@contextlib.contextmanager
def _pushed_context(ctx: Any) -> Iterator[None]:
    ctx.push()
    try:
        yield
    finally:
        cuda.Context.pop()


def _copy_gpuarray(x: gpuarray.GPUArray, out: gpuarray.GPUArray,
                   stream: Any = None) -> gpuarray.GPUArray:
    if x.size:
        if x.flags.c_contiguous:
            cuda.memcpy_dtod_async(_ptr(out), _ptr(x), x.nbytes, stream)
        else:
            if stream is not None:
                raise CaptureUnsupported("a copy of a non-contiguous array")
            out.set(x.get())
    return out


def _dims_args(r: Region) -> list[Any]:
    """rank, dims[8], strides[8] of a region, for the gather/scatter kernels."""
    if len(r.shape) > MAX_RANK:
        raise ValueError(f"arrays of rank above {MAX_RANK} are not supported")
    pad = MAX_RANK - len(r.shape)
    dims = [np.int64(d) for d in r.shape] + [np.int64(1)] * pad
    strides = [np.int64(s) for s in r.strides] + [np.int64(0)] * pad
    return [np.int32(len(r.shape)), *dims, *strides]


def _kernel_args(args: Sequence[Any]) -> tuple[str, list[Any]]:
    """The prepared-call signature of `args` and the values to pack.

    Dispatches on the exact type through one dict lookup: this runs for
    every launch, and host overhead is what small entry calls cost.
    """
    sig, values = [], []
    for a in args:
        t = type(a)
        ch = _SCALAR_CHARS.get(t)
        if ch is not None:
            sig.append(ch)
            values.append(a)
        elif isinstance(a, gpuarray.GPUArray):
            sig.append("P")
            values.append(0 if a.gpudata is None else int(a.gpudata))
        elif isinstance(a, cuda.DeviceAllocation) or t.__name__ == "PooledDeviceAllocation":
            sig.append("P")
            values.append(int(a))
        elif t is bool:
            sig.append("?")
            values.append(a)
        elif t is int:
            sig.append("q")
            values.append(a)
        else:
            raise TypeError(f"kernel argument {a!r}: expected a device array or a NumPy scalar "
                            f"of a Futhark primitive type")
    return "".join(sig), values


def _numpy_owned(a: np.ndarray) -> bool:
    """Whether `a`'s memory was allocated by NumPy (so it is pageable), not
    by a library that may have page-locked it (PyCUDA, CuPy, torch)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base is None


def _coerced(sig: str, args: Sequence[Any]) -> list[Any]:
    """Kernel arguments the struct module would not pack as they are: a None
    pointer (an empty array) as 0, a scalar of another type as `sig` says."""
    out: list[Any] = []
    for ch, a in zip(sig, args):
        if ch == "P":
            out.append(0 if a is None else int(a))
        else:
            out.append(np.dtype(ch).type(a))
    return out


def _wrap64(v: Any) -> int:
    """An integer as a signed 64-bit value (two's complement wrap)."""
    i = int(v) & 0xFFFF_FFFF_FFFF_FFFF
    return i - (1 << 64) if i >= 1 << 63 else i
