"""CpuBackend: every Backend operation on NumPy, with Futhark's bounds messages."""

import numpy as np
import pytest
from futgen_runtime import CpuBackend, FutharkError


@pytest.fixture
def b() -> CpuBackend:
    return CpuBackend()


def test_creation(b: CpuBackend) -> None:
    assert b.kind == "cpu"
    assert b.empty((2, 3), "float32").shape == (2, 3)
    assert b.iota(4, 2, 3, "int64").tolist() == [2, 5, 8, 11]
    assert b.iota(3, 127, 1, "int8").tolist() == [127, -128, -127]  # wraps
    r = b.replicate((2,), np.array([1, 2], np.int32), "int32")
    assert r.tolist() == [[1, 2], [1, 2]] and r.dtype == np.int32
    assert b.replicate((3,), np.float32(1.5), "float32").tolist() == [1.5] * 3
    assert b.array_lit([1, 2, 3, 4], "int16", (2, 2)).tolist() == [[1, 2], [3, 4]]
    assert b.array_lit([np.arange(2), np.arange(2)], "int64", (2, 2)).tolist() == [[0, 1], [0, 1]]


def test_shape_ops(b: CpuBackend) -> None:
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert b.concat([x, x]).shape == (4, 3)
    assert b.rearrange(x, (1, 0)).tolist() == x.T.tolist()
    assert b.rearrange(x, (1, 0)).flags.c_contiguous
    assert b.reshape(x, (3, 2)).tolist() == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(FutharkError, match=r"Cannot reshape array of shape \[2\]\[3\] to \[4\]"):
        b.reshape(x, (4,), "a.fut:1:1")
    c = b.copy(x)
    c[0, 0] = 9
    assert x[0, 0] == 0


def test_index(b: CpuBackend) -> None:
    x = np.arange(15, dtype=np.int32).reshape(5, 3)
    s = b.index(x, (4, 2))
    assert s == 14 and isinstance(s, np.int32)
    assert b.index(x, (1,)).tolist() == [3, 4, 5]
    assert b.index(x, ((1, 2, 2),)).tolist() == [[3, 4, 5], [9, 10, 11]]
    assert b.index(x, ((4, 3, -2), 0)).tolist() == [12, 6, 0]
    assert b.index(x, ((0, 0, 1),)).shape == (0, 3)
    assert b.index(x, ((9, 0, 1),)).shape == (0, 3)  # empty slices are always in bounds


@pytest.mark.parametrize(("shape", "idx", "text"), [
    ((5,), (7,), "Index [7] out of bounds for array of shape [5]."),
    ((5,), (-1,), "Index [-1] out of bounds for array of shape [5]."),
    ((5, 3), (1, 3), "Index [1, 3] out of bounds for array of shape [5][3]."),
    ((5,), ((1, 3, 2),), "Index [1:7:2] out of bounds for array of shape [5]."),
    ((5,), ((3, 3, 1),), "Index [3:6] out of bounds for array of shape [5]."),
    ((5,), (1, 1), "Index [1, 1] out of bounds for array of shape [5]."),
])
def test_index_out_of_bounds(b: CpuBackend, shape: tuple, idx: tuple, text: str) -> None:
    x = np.zeros(shape, np.float32)
    with pytest.raises(FutharkError) as e:
        b.index(x, idx, "prog.fut:3:7")
    assert e.value.message == text
    assert e.value.loc == "prog.fut:3:7"
    assert str(e.value) == f"Error: {text}\n\nBacktrace:\n-> #0  prog.fut:3:7"
    with pytest.raises(FutharkError, match="out of bounds"):
        b.update(np.zeros(shape, np.float32), idx, 0, None)


def test_update(b: CpuBackend) -> None:
    x = np.zeros((3, 2), np.int64)
    y = b.update(x, (1,), np.array([7, 8]), None)
    assert y is x and x[1].tolist() == [7, 8]
    b.update(x, (2, 1), 5, None)
    assert x[2, 1] == 5
    b.update(x, ((0, 2, 2), 0), np.array([1, 2]), None)
    assert x[:, 0].tolist() == [1, 7, 2]
    with pytest.raises(FutharkError, match="out of bounds"):
        b.update(x, (0,), np.array([1, 2, 3]), None)  # value of the wrong shape


def test_update_of_replicated_and_strided_arrays(b: CpuBackend) -> None:
    # Replicated arrays are C-contiguous, and an update of a strided
    # (transposed) array still lands in the result it returns.
    grid = b.replicate((3,), b.replicate((3,), np.int32(0), "int32"), "int32")
    assert grid.flags.c_contiguous
    assert b.update(grid, (2,), np.array([0, 42, 0], np.int32), None)[2, 1] == 42
    t = np.zeros((2, 3), np.int32).T
    assert b.update(t, (0, 1), 5, None).tolist() == [[0, 5], [0, 0], [0, 0]]


def test_update_never_writes_callers_array(b: CpuBackend) -> None:
    user = np.arange(4, dtype=np.int32)
    x = b.from_host(user)
    y = b.update(x, (0,), 99, None)
    assert y[0] == 99 and user[0] == 0


def test_from_host_makes_contiguous(b: CpuBackend) -> None:
    a = np.arange(10, dtype=np.float64)[::2]
    x = b.from_host(a)
    assert x.flags.c_contiguous and x.tolist() == a.tolist()
    assert b.to_host(x) is x
    assert b.read_scalar(x, 2) == 4.0


def test_launch_is_cuda_only(b: CpuBackend) -> None:
    with pytest.raises(NotImplementedError):
        b.launch("k", 1, 1, [])
    b.sync()
