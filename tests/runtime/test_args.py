"""convert_arg / check_sizes / convert_result: the accept/reject matrix."""

import numpy as np
import pytest
from futgen_runtime import CpuBackend, check_sizes, convert_arg, convert_result

B = CpuBackend()


def conv(value: object, prim: str = "f32", rank: int = 1) -> object:
    return convert_arg(B, value, entry="main", param="xs", position=1, prim=prim, rank=rank)


def test_accepts_matching_arrays() -> None:
    a = np.arange(3, dtype=np.float32)
    assert conv(a).tolist() == [0, 1, 2]
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    r = conv(m.T, rank=2)  # non-contiguous: made contiguous
    assert r.flags.c_contiguous and r.tolist() == m.T.tolist()
    r = conv(m[:, ::2], rank=2)
    assert r.tolist() == m[:, ::2].tolist()


def test_wrong_dtype() -> None:
    with pytest.raises(TypeError) as e:
        conv(np.arange(3, dtype=np.int32))
    assert str(e.value) == ("main: parameter xs (#1) expects []f32, got a NumPy array of int32 "
                            "with rank 1")


def test_wrong_rank() -> None:
    with pytest.raises(TypeError, match=r"expects \[\]\[\]f32, got a NumPy array of float32 "
                                        r"with rank 1"):
        conv(np.zeros(3, np.float32), rank=2)


def test_list_suggests_asarray() -> None:
    with pytest.raises(TypeError, match=r"expects \[\]f32, got a list; .*np\.asarray\(value, "
                                        r"dtype=np\.float32\)"):
        conv([1.0, 2.0])


def test_other_objects_rejected() -> None:
    with pytest.raises(TypeError, match="got a str"):
        conv("abc")
    with pytest.raises(TypeError, match=r"expects f32, got a NumPy array of float32 with rank 1"):
        conv(np.zeros(1, np.float32), rank=0)


@pytest.mark.parametrize(("value", "prim", "expect"), [
    (3, "i32", np.int32(3)),
    (np.int64(3), "i32", np.int32(3)),
    (np.int32(3), "i32", np.int32(3)),
    (np.array(5, np.int8), "i8", np.int8(5)),
    (2, "f32", np.float32(2)),
    (2.5, "f64", np.float64(2.5)),
    (True, "bool", np.bool_(True)),
    (np.bool_(False), "bool", np.bool_(False)),
    (255, "u8", np.uint8(255)),
])
def test_scalars_accepted(value: object, prim: str, expect: object) -> None:
    r = conv(value, prim=prim, rank=0)
    assert r == expect and type(r) is type(expect)


@pytest.mark.parametrize(("value", "prim", "exc", "text"), [
    (2**31, "i32", ValueError, "out of range"),
    (-1, "u32", ValueError, "out of range"),
    (1e300, "f32", ValueError, "overflows f32"),
    (True, "i32", TypeError, "got a bool"),
    (1, "bool", TypeError, "got a int"),
    (1.5, "i64", TypeError, "got a float"),
    (np.float64(1), "i64", TypeError, "got a NumPy float64"),
    ("1", "i32", TypeError, "got a str"),
])
def test_scalars_rejected(value: object, prim: str, exc: type, text: str) -> None:
    with pytest.raises(exc, match=text) as e:
        conv(value, prim=prim, rank=0)
    assert str(e.value).startswith(f"main: parameter xs (#1) expects {prim}, got")


def test_check_sizes() -> None:
    assert check_sizes("main", [("n", "xs", 3, "[n]f32"), ("n", "ys", 3, "[n]i32"),
                                ("m", "zs", 2, "[m]f32")]) == {"n": 3, "m": 2}
    with pytest.raises(ValueError, match=r"main: invalid sizes: n is 3 from parameter xs: \[n\]f32 but 4 "
                                         r"from parameter ys: \[n\]i32; they must be equal"):
        check_sizes("main", [("n", "xs", 3, "[n]f32"), ("n", "ys", 4, "[n]i32")])
    with pytest.raises(ValueError, match=r"main: invalid size: parameter ys: \[3\]i32 has a "
                                         r"dimension of 2 where the type says 3"):
        check_sizes("main", [("3", "ys", 2, "[3]i32")])


def test_convert_result() -> None:
    x = np.arange(3)
    assert convert_result(B, x, False) is x
    assert convert_result(B, np.int32(4), False) == 4
    ro = B.from_host(x)
    r = convert_result(B, ro, False)
    assert r.flags.writeable and r.tolist() == [0, 1, 2]
