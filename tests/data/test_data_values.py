"""Reading and writing Futhark's data format (text, binary, gzip, streams)."""

from __future__ import annotations

import gzip

import futhark_data
import numpy as np
import pytest

from futgen.data import (
    check_arguments,
    encode_binary,
    format_value,
    load_file,
    read_values,
    value_type,
)
from futgen.data.values import PRIM_DTYPES, haskell_show_float
from futgen.errors import DataError

ALL_TYPES = sorted(PRIM_DTYPES)


def _sample(t: str, shape: tuple[int, ...]) -> np.ndarray:
    dtype = PRIM_DTYPES[t]
    n = int(np.prod(shape))
    if t == "bool":
        flat = np.arange(n) % 3 == 0
    elif t[0] == "f":
        flat = (np.arange(n) - 2.5) * 1.25
    elif t[0] == "u":
        flat = np.arange(n) * 7 + 200
    else:
        flat = np.arange(n) * 7 - 100
    return flat.astype(dtype).reshape(shape)


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("t", ALL_TYPES)
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (0,), (0, 3), (2, 0), (2, 2, 2)])
def test_text_round_trip(t, shape):
    v = _sample(t, shape)
    v = v[()] if shape == () else v
    [back] = read_values(format_value(v))
    assert _same(back, v)
    assert isinstance(back, np.generic) == (shape == ())


@pytest.mark.parametrize("t", ALL_TYPES)
@pytest.mark.parametrize("shape", [(), (5,), (3, 2), (0,), (0, 4)])
def test_binary_round_trip(t, shape):
    v = _sample(t, shape)
    v = v[()] if shape == () else v
    [back] = read_values(encode_binary(v))
    assert _same(back, v)


def test_binary_header_layout():
    data = encode_binary(np.array([1, 2], dtype=np.int32))
    assert data[:2] == b"b\x02"
    assert data[2] == 1 and data[3:7] == b" i32"
    assert data[7:15] == (2).to_bytes(8, "little")
    assert data[15:] == b"\x01\x00\x00\x00\x02\x00\x00\x00"


def test_stream_mixes_text_binary_and_comments():
    data = (
        b"-- a comment\n1i32 "
        + encode_binary(np.array([1.5, 2.5], dtype=np.float32))
        + b"\n[true, false] -- trailing\n"
        + encode_binary(np.int64(-7))
        + b"empty([0]i64)"
    )
    vs = read_values(data)
    assert [value_type(v) for v in vs] == ["i32", "[2]f32", "[2]bool", "i64", "[0]i64"]
    assert vs[3] == -7


def test_gzip_files(tmp_path):
    path = tmp_path / "data.in.gz"
    path.write_bytes(gzip.compress(b"[1, 2, 3] " + encode_binary(np.float64(2.0))))
    vs = load_file(str(path))
    assert _same(vs[0], np.array([1, 2, 3], dtype=np.int32))
    assert vs[1] == 2.0


def test_missing_data_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="cannot read data file .*nope.in"):
        load_file(str(tmp_path / "nope.in"))


def test_futhark_data_reads_and_writes_empty_arrays_under_numpy2():
    """futhark_data calls np.product, gone in NumPy 2; our shim restores it for it alone."""
    [v] = list(futhark_data.loads("empty([0][3]i32)"))
    assert v.shape == (0, 3) and v.dtype == np.int32
    assert futhark_data.dumps(np.zeros((0,), dtype=np.float32)) == "empty([0]f32)"
    assert not hasattr(np, "product") or np.__version__.startswith("1.")


@pytest.mark.parametrize(
    "value, text",
    [
        (np.int32(3), "3i32"),
        (np.int8(-5), "-5i8"),
        (np.uint64(2**64 - 1), "18446744073709551615u64"),
        (np.float32(2.5), "2.5f32"),
        (np.float64(1.0), "1.0f64"),
        (np.float32(0.1), "0.1f32"),
        (np.float32(0.01), "1.0e-2f32"),
        (np.float64(1e7), "1.0e7f64"),
        (np.float64(1234567.0), "1234567.0f64"),
        (np.float64(-0.0), "-0.0f64"),
        (np.float64(1.5e-10), "1.5e-10f64"),
        (np.float32(np.nan), "f32.nan"),
        (np.float32(-np.inf), "-f32.inf"),
        (np.float64(np.inf), "f64.inf"),
        (np.float16(0.5), "0.5f16"),
        (np.bool_(True), "true"),
        (np.array([1, 2], dtype=np.int32), "[1i32, 2i32]"),
        (np.zeros(0, dtype=np.int32), "empty([0]i32)"),
        (np.zeros((2, 0), dtype=np.bool_), "empty([2][0]bool)"),
        (np.array([[1, 2], [3, 4]], dtype=np.int64), "[[1i64, 2i64],\n [3i64, 4i64]]"),
        (
            np.arange(4, dtype=np.uint8).reshape(2, 1, 2),
            "[[[0u8, 1u8]],\n [[2u8, 3u8]]]",
        ),
    ],
)
def test_prints_like_futhark_run(value, text):
    assert format_value(value) == text


def test_float_printing_uses_shortest_digits_of_the_type():
    assert haskell_show_float(np.float32(0.3)) == "0.3"
    assert haskell_show_float(np.float64(np.float32(0.3))) == "0.30000001192092896"
    assert haskell_show_float(np.float64(123456789.0)) == "1.23456789e8"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[1.0f32, 2.0, 3.0]", np.array([1, 2, 3], dtype=np.float32)),
        ("[4f32, 5, 6]", np.array([4, 5, 6], dtype=np.float32)),
        ("[[1i64, 2], [3, 4]]", np.array([[1, 2], [3, 4]], dtype=np.int64)),
        ("-1u32", np.uint32(2**32 - 1)),
        ("1_000i64", np.int64(1000)),
        ("123_.456f32", np.float32(123.456)),
        ("0x10u8", np.uint8(16)),
        ("1e3", np.float64(1000.0)),
        ("2.5", np.float64(2.5)),
        ("7", np.int32(7)),
        ('"ab"', np.array([97, 98], dtype=np.uint8)),
        ("-f64.inf", np.float64(-np.inf)),
    ],
)
def test_reads_futharks_literal_forms(text, expected):
    [v] = read_values(text)
    assert _same(v, expected)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"[1, 2", r"<stdin>:1:6: value #1: unexpected end of input"),
        (b"1i32\n[1, 2i64]", r"<stdin>:2:5: value #2: array elements differ: i64 after i32"),
        (b"[[1], [2, 3]]", r"1:7: value #1: array elements differ: \[2\]i32 after \[1\]i32"),
        (b"[1, 2.5]", r"'2.5' is not a literal of type i32"),
        (b"1i32 hello", r"1:6: value #2: invalid value 'hello'"),
        (b"[1 2]", r"expected ',' or '\]' in array, got '2'"),
        (b"[]", r"empty array literal"),
        (b"empty([2]i32)", r"has no zero dimension"),
        (b"empty(i32)", r"needs dimensions"),
        (b"empty([0]i33)", r"unknown element type 'i33'"),
        (b"b\x02\x01 i32" + (3).to_bytes(8, "little") + b"\x00" * 5, r"truncated binary value"),
        (b"b\x02\x00 x32", r"unknown binary element type"),
        (b"b\x01\x00 i32", r"format version 1"),
        (b"\x1f\x8bnot gzip", r"corrupt gzip data"),
        (b"]", r"expected a value, got '\]'"),
    ],
)
def test_malformed_input_says_what_and_where(data, message):
    with pytest.raises(DataError, match=message):
        read_values(data)


def test_check_arguments_counts_and_types():
    check_arguments("main", ["[n]i32", "f32"], [np.array([1], np.int32), np.float32(1)])
    check_arguments("main", ["{x: i32}"], [np.int32(1)])  # records: left to the executor
    with pytest.raises(DataError, match=r"main takes 2 value\(s\) \(\[n\]i32 f32\), but 1 were"):
        check_arguments("main", ["[n]i32", "f32"], [np.array([1], np.int32)])
    with pytest.raises(DataError, match="takes 0 value"):
        check_arguments("f", [], [np.int32(1)])
    with pytest.raises(DataError, match=r"argument #1: expected a value of type \*\[\]f32, got \[2\]f64"):
        check_arguments("g", ["i32", "*[]f32"], [np.int32(1), np.array([1.0, 2.0])])


@pytest.mark.parametrize("t", ["i32", "u64", "i8", "f32", "f64", "bool"])
def test_long_rows_take_the_bulk_path_and_agree(t):
    rng = np.random.default_rng(1)
    if t == "bool":
        v = rng.random((50, 200)) > 0.5
    elif t[0] == "f":
        v = (rng.standard_normal((50, 200)) * 1e3).astype(PRIM_DTYPES[t])
    else:
        v = rng.integers(0, 100, (50, 200)).astype(PRIM_DTYPES[t])
    [back] = read_values(format_value(v))
    assert _same(back, v)


def test_bulk_rows_follow_futhark_rules():
    [a, b] = read_values("[1, 2 -- comment\n, 3] [1.0, -3e+2, 1.5E3, 2e-1]")
    assert a.tolist() == [1, 2, 3] and a.dtype == np.int32
    assert b.tolist() == [1.0, -300.0, 1500.0, 0.2] and b.dtype == np.float64
    [c] = read_values("[-1u8, 300u8]")
    assert c.tolist() == [255, 44]
    # Literals beyond int64 wrap too (NumPy's bulk parser would saturate).
    [d] = read_values("[0i64, 18446744073709551615i64, 9223372036854775808i64]")
    assert d.tolist() == [0, -1, -(2**63)]


@pytest.mark.parametrize("row", ["[1, -]", "[1.0, .5]", "[1.0, 1.]", "[1, +3]", "[1.0, 1e.5]", "[1, 2 3]", "[1,,2]"])
def test_bulk_rows_reject_what_futhark_rejects(row):
    with pytest.raises(DataError, match="<stdin>:1:"):
        read_values(row)
