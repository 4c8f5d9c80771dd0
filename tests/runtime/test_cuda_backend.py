"""CudaBackend on a real GPU (run on the GPU machine: `python -m pytest -m gpu tests/runtime -q`).

Each array operation is checked against CpuBackend, which is the reference.
"""

from pathlib import Path

import numpy as np
import pytest
from futgen_runtime import (
    CpuBackend,
    FutgenError,
    FutharkError,
    convert_arg,
    convert_result,
    make_backend,
)

pytestmark = pytest.mark.gpu

KERNELS = r"""
#include <stdint.h>
extern "C" __global__ void checked_get(int32_t *failure, int64_t *failure_args,
                                       float *out, const float *xs, int64_t n,
                                       const int64_t *is, int64_t m) {
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < m;
       j += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = is[j];
    if (i < 0 || i >= n) {
      if (atomicCAS(failure, 0, 1) == 0) {
        failure_args[0] = i; failure_args[1] = n; failure_args[8] = 1;
      }
      return;
    }
    out[j] = xs[i] * 2.0f;
  }
}
extern "C" __global__ void axpy(int32_t *failure, int64_t *failure_args, double *y,
                                double a, const double *x, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] += a * x[i];
}
"""
ERRORS = {1: ("Index [{0}] out of bounds for array of shape [{1}].", "prog.fut:4:12")}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("futgen-cache")


@pytest.fixture(scope="module")
def b(cache: Path):
    return make_backend("cuda", kernels_source=KERNELS, errors=ERRORS, cache_dir=cache)


def test_kernel_and_failure_protocol(b) -> None:
    xs = b.from_host(np.arange(5, dtype=np.float32))
    out = b.empty((3,), "float32")
    b.launch("checked_get", 3, 128, [out, xs, np.int64(5), b.from_host(np.array([0, 4, 2])),
                                     np.int64(3)])
    b.sync()
    assert b.to_host(out).tolist() == [0.0, 8.0, 4.0]
    bad = b.from_host(np.array([1, 7, 2]))
    b.launch("checked_get", 3, 128, [out, xs, np.int64(5), bad, np.int64(3)])
    with pytest.raises(FutharkError) as e:
        b.sync()
    assert e.value.message == "Index [7] out of bounds for array of shape [5]."
    assert e.value.loc == "prog.fut:4:12"
    b.sync()  # the flag was reset
    b.launch("checked_get", 3, 128, [out, xs, np.int64(5), bad, np.int64(3)])
    b.to_host(out)  # waits for the kernel, so check() sees its failure without waiting
    with pytest.raises(FutharkError, match=r"Index \[7\]"):
        b.check()
    b.check()
    b.launch("checked_get", 1, 128, [out, xs, np.int64(5), b.from_host(np.array([3])),
                                     np.int64(1)])
    assert b.read_scalar(out, 0) == 6.0


def test_scalar_args_and_big_grid(b) -> None:
    n = 1 << 22
    x = np.random.default_rng(0).random(n)
    y = b.from_host(np.ones(n))
    b.launch("axpy", n, 256, [y, np.float64(3.0), b.from_host(x), np.int64(n)])
    np.testing.assert_allclose(b.to_host(y), 1 + 3 * x)


def test_launch_with_a_known_signature(b) -> None:
    """Generated code's launches: raw pointers and scalars packed as the
    signature says, odd values coerced, and a thread with no current context."""
    import threading

    n = 1000
    x = np.arange(n, dtype=np.float64)
    y, dx = b.from_host(np.ones(n)), b.from_host(x)
    b.launch_sig("axpy", "PdPq", n, 256, 0, y.gpudata, 2.0, dx.gpudata, n)
    b.launch_sig("axpy", "PdPq", n, 256, 0, y.gpudata, np.float32(1), dx.gpudata, np.int64(n))
    b.launch_sig("axpy", "PdPq", n, 256, 0, y.gpudata, np.float64(1), dx.gpudata, 1.0 * n)
    done: list = []

    def work() -> None:
        fresh = b.empty((12345,), "float64")  # a size the pool has not seen: a driver call
        b.launch_sig("axpy", "PdPq", n, 256, 0, y.gpudata, 1.0, dx.gpudata, n)
        done.append(fresh.shape)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert done == [(12345,)]
    np.testing.assert_array_equal(b.to_host(y), 1 + 5 * x)
    b.launch_sig("axpy", "PdPq", 0, 256, 0, None, 1.0, None, 0)  # no threads: nothing runs
    b.sync()


# A fresh process (the pool's first freed block is what used to abort it):
# a backend, then arrays made, freed or kept by a thread with no context.
_THREAD_SCRIPT = r"""
import sys, threading
import numpy as np
from futgen_runtime import make_backend
b = make_backend("cuda", kernels_source=sys.argv[2], cache_dir=sys.argv[3])
n = 1000
y, dx = b.from_host(np.ones(n)), b.from_host(np.arange(n, dtype=np.float64))
kept = []
def work():
    fresh = b.empty((12345,), "float64")
    if sys.argv[1] == "keep":
        kept.append(fresh)  # freed at exit, after the context is popped
    b.launch_sig("axpy", "PdPq", n, 256, 0, y.gpudata, 1.0, dx.gpudata, n)
threading.Thread(target=work).start()
for t in threading.enumerate():
    if t is not threading.main_thread():
        t.join()
assert b.to_host(y)[3] == 4.0
print("done")
"""


@pytest.mark.parametrize("mode", ["free", "keep"])
def test_arrays_freed_where_no_context_is_current(cache: Path, mode: str) -> None:
    """An array freed by a thread that never had a context, or at exit, in a
    process whose memory pool had freed nothing before: PyCUDA's pool used
    to throw from the destructor there (no current context), aborting it."""
    import os
    import subprocess
    import sys

    runtime = str(Path(__file__).resolve().parents[2] / "runtime")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([runtime, os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", _THREAD_SCRIPT, mode, KERNELS, str(cache)],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    assert (r.returncode, r.stdout.strip()) == (0, "done"), r.stderr


@pytest.mark.parametrize("n", [1, 1000, 16384, 16385, 100_000])
def test_transfers_both_ways(b, n: int) -> None:
    """Small results come back through pinned memory, large ones directly;
    page-locked arguments are copied synchronously, NumPy's asynchronously."""
    import pycuda.driver as cuda
    from futgen_runtime.cuda import _numpy_owned

    x = np.arange(n, dtype=np.float32)
    locked = cuda.pagelocked_empty(n, np.float32)
    locked[:] = x
    assert _numpy_owned(x[::2]) and not _numpy_owned(locked[1:])
    for source in (x, locked, x[::-1]):
        d = b.from_host(source)
        source_copy = np.array(source)
        if source is x:
            x[:] = -1  # the caller may change it once from_host has returned
        got = b.to_host(d)
        assert got.flags.writeable and got.dtype == np.float32
        np.testing.assert_array_equal(got, source_copy)
        assert b.read_scalar(d, n - 1) == source_copy[-1]
        x[:] = np.arange(n, dtype=np.float32)


def test_second_load_hits_cache(b, cache: Path) -> None:
    b2 = make_backend("cuda", kernels_source=KERNELS, errors=ERRORS, cache_dir=cache)
    assert b.kernel_origin in ("compiled", "cache")
    assert b2.kernel_origin == "cache"


def test_shipped_cubin_is_used(b, cache: Path) -> None:
    from futgen_runtime.compile import compile_cubin

    cubin, _ = compile_cubin(KERNELS, b.arch, cache_dir=cache)
    b3 = make_backend("cuda", kernel_images={b.arch: cubin}, errors=ERRORS)
    assert b3.kernel_origin == "cubin"


def test_device_by_name(b) -> None:
    name = b.device.name()
    assert make_backend("cuda", device=name.split()[-1]).device.name() == name
    with pytest.raises(FutgenError, match="no CUDA device named like 'no such gpu'; there are"):
        make_backend("cuda", device="no such gpu")


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "float32", "float64",
                                   "bool", "float16"])
def test_array_ops_match_cpu(b, dtype: str) -> None:
    c = CpuBackend()
    host = (np.arange(60) % 7).astype(dtype).reshape(3, 4, 5)

    def same(gpu: object, cpu: object) -> None:
        if isinstance(cpu, np.ndarray):
            g = b.to_host(gpu)
            assert g.dtype == cpu.dtype and g.shape == cpu.shape
            np.testing.assert_array_equal(g, cpu)
        else:
            assert gpu == cpu and type(gpu) is type(cpu)

    x = b.from_host(host)
    same(x, host)
    same(b.copy(x), host)
    same(b.concat([x, x]), c.concat([host, host]))
    same(b.reshape(x, (12, 5)), host.reshape(12, 5))
    same(b.rearrange(x, (2, 0, 1)), c.rearrange(host, (2, 0, 1)))
    same(b.rearrange(x, (0, 2, 1)), c.rearrange(host, (0, 2, 1)))  # by tiles
    for idx in [(1,), (2, 3), (1, 2, 4), ((0, 2, 2),), ((2, 3, -1), 1, (4, 2, -2)),
                (slice_ := (1, 0, 1),)]:
        same(b.index(x, idx), c.index(host, idx))
    del slice_
    one = np.array(1).astype(dtype)[()]
    same(b.replicate((2, 3), one, dtype), c.replicate((2, 3), one, dtype))
    same(b.replicate((2,), b.from_host(host[0]), dtype), c.replicate((2,), host[0], dtype))
    same(b.array_lit([one, one, one, one], dtype, (2, 2)), c.array_lit([one] * 4, dtype, (2, 2)))
    same(b.array_lit([b.from_host(host[0]), host[1]], dtype, (2, 4, 5)),
         c.array_lit([host[0], host[1]], dtype, (2, 4, 5)))
    for idx, v in [((1, 2), host[0, 0]), ((0, 0, 0), one), (((0, 2, 2), 1), host[:2, 0]),
                   ((1,), b.from_host(host[2]))]:
        xg, xc = b.copy(x), host.copy()
        vc = b.to_host(v) if not isinstance(v, (np.ndarray, np.generic)) else v
        same(b.update(xg, idx, v), c.update(xc, idx, vc))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint64", "int64"])
def test_iota(b, dtype: str) -> None:
    c = CpuBackend()
    for n, start, stride in [(300, 0, 1), (10, 5, -3), (0, 0, 1)]:
        np.testing.assert_array_equal(b.to_host(b.iota(n, start, stride, dtype)),
                                      c.iota(n, start, stride, dtype))


def test_bounds_checked_on_host(b) -> None:
    x = b.from_host(np.zeros(5, np.float32))
    with pytest.raises(FutharkError, match=r"Index \[7\] out of bounds for array of shape \[5\]\."):
        b.index(x, (7,), "a.fut:1:2")
    with pytest.raises(FutharkError, match=r"Index \[3:6\] out of bounds"):
        b.update(x, ((3, 3, 1),), np.zeros(3, np.float32), None)


def test_args_and_results(b) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    g = convert_arg(b, a.T, entry="main", param="xs", position=1, prim="f32", rank=2)
    np.testing.assert_array_equal(b.to_host(g), a.T)
    assert convert_arg(b, g, entry="main", param="xs", position=1, prim="f32", rank=2) is g
    r = convert_result(b, g, False)
    assert isinstance(r, np.ndarray) and r.tolist() == a.T.tolist()
    assert convert_result(b, g, True) is g
    with pytest.raises(TypeError, match=r"expects \[\]\[\]i32, got a GPUArray of float32"):
        convert_arg(b, g, entry="main", param="xs", position=1, prim="i32", rank=2)


def test_cuda_array_interface_zero_copy(b) -> None:
    cupy = pytest.importorskip("cupy")
    c = cupy.arange(10, dtype=cupy.float32)
    g = convert_arg(b, c, entry="main", param="xs", position=1, prim="f32", rank=1)
    assert int(g.gpudata) == c.data.ptr
    b.update(g, (0,), np.float32(42), None)
    assert float(c[0]) == 42.0
    with pytest.raises(TypeError, match="non-contiguous"):
        convert_arg(b, c[::2], entry="main", param="xs", position=1, prim="f32", rank=1)


def test_torch_zero_copy(b) -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.int64, device="cuda")
    g = convert_arg(b, t, entry="main", param="xs", position=1, prim="i64", rank=1)
    assert int(g.gpudata) == t.data_ptr()
    assert b.index(g, (5,)) == 5


def test_out_of_memory(b) -> None:
    with pytest.raises(MemoryError, match="out of GPU memory allocating"):
        b.empty((1 << 50,), "float32")


@pytest.mark.parametrize("shape", [(1, 1), (1, 33), (31, 1), (33, 65), (3, 64, 32), (2, 5, 1000),
                                   (4096, 4096), (100000, 1), (1, 1, 7), (3, 1, 5), (100000, 3),
                                   (2, 31, 4000), (0, 5), (100001, 8), (7, 5000), (2, 3, 2),
                                   (3, 1000, 31), (4, 31, 33), (2, 2, 100), (64, 256, 256)], ids=str)
def test_transpose_by_tiles(b, shape: tuple[int, ...]) -> None:
    """The last two dimensions swapped, at tile edges and beyond them; a
    matrix with a side under 32 by runs of its narrow side's rows (either
    side narrow, runs cut short at the end), one with a side of 1 by a copy."""
    host = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 1000003
    perm = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
    for dtype in ("int8", "int16", "float32", "float64"):
        h = host.astype(dtype)
        np.testing.assert_array_equal(b.to_host(b.rearrange(b.from_host(h), perm)),
                                      np.transpose(h, perm))


def test_a_deferred_transposition_is_made_when_read_and_settles_to_a_plain_array(b) -> None:
    """A transposition is made only once its memory is asked for; `settled`
    hands out a plain GPUArray, and `timed` makes results inside its region."""
    from pycuda import gpuarray

    h = np.arange(64 * 48, dtype=np.float32).reshape(64, 48)
    x = b.from_host(h)
    tr = b.rearrange(x, (1, 0))
    assert "_make" in vars(tr)  # nothing launched yet
    out = b.settled(tr)
    assert type(out) is gpuarray.GPUArray and "_make" not in vars(tr)
    np.testing.assert_array_equal(out.get(), h.T)
    (late,), _ = b.timed(lambda: (b.rearrange(x, (1, 0)),))
    assert "_make" not in vars(late)
    np.testing.assert_array_equal(b.to_host(late), h.T)
