"""Generic value helpers: StructArray indexing, stacking, empties, copies."""

import numpy as np

from futgen.frontend import types as T
from futgen.interp import values as V


def _pairs() -> V.StructArray:
    return V.StructArray((3,), (np.array([1, 2, 3], np.int32), np.array([1.0, 2.0, 3.0])))


def test_struct_index_gives_tuple() -> None:
    x = V.index(_pairs(), 1)
    assert x == (2, 2.0) and isinstance(x[0], np.int32)


def test_struct_slice_and_rank2() -> None:
    s = V.apply_key(_pairs(), (slice(1, 3),))
    assert isinstance(s, V.StructArray) and s.shape == (2,)
    m = V.StructArray((2, 2), {"a": np.zeros((2, 2), np.int8), "b": np.ones((2, 2), bool)})
    row = V.index(m, 0)
    assert isinstance(row, V.StructArray) and row.rank == 1
    assert V.index(row, 1) == {"a": 0, "b": True}


def test_stack_tuples_and_empty() -> None:
    s = V.stack([(np.int32(1), np.float32(2)), (np.int32(3), np.float32(4))])
    assert isinstance(s, V.StructArray) and s.fields[1].dtype == np.float32
    t = T.Tuple((T.I32, T.Array(T.Scalar("f32"), (T.SizeConst(4),))))
    e = V.stack([], t)
    assert e.shape == (0,) and e.fields[1].shape == (0, 4) and e.fields[1].dtype == np.float32


def test_empty_with_size_vars() -> None:
    t = T.Array(T.Scalar("f32"), (T.AnySize(0), T.SizeVar("m")))
    e = V.empty(t, lambda d: 5 if isinstance(d, T.SizeVar) else 0)
    assert e.shape == (0, 5) and e.dtype == np.float32


def test_copy_is_deep() -> None:
    p = _pairs()
    q = V.copy(p)
    q.fields[0][0] = 99
    assert p.fields[0][0] == 1


def test_replicate_concat_unit_array() -> None:
    r = V.replicate(4, ())
    assert isinstance(r, V.StructArray) and V.length(r) == 4
    c = V.concat([_pairs(), _pairs()])
    assert V.length(c) == 6


def test_matches_type_and_type_string() -> None:
    t = T.Array(T.Scalar("f32"), (T.AnySize(0),))
    assert V.matches_type(np.zeros(3, np.float32), t)
    assert not V.matches_type(np.zeros((3, 3), np.float32), t)
    assert V.type_string(np.zeros((3, 3), np.float32)) == "[][]f32"
    assert V.type_str(t) == "[]f32"
