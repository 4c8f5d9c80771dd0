"""`futgen dataset`: options act in order, text and binary output, errors."""

from __future__ import annotations

import io
import sys

import numpy as np

from futgen.cli import main
from futgen.data import read_values


def dataset(args, monkeypatch, stdin=b""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    return main(["dataset", *args])


def test_text_then_binary_with_bounds_in_order(monkeypatch, capsysbinary):
    args = ["-s", "5", "-g", "[4][2]i32", "--i64-bounds=0:9", "-b", "-g", "[100]i64", "-g", "3f32"]
    assert dataset(args, monkeypatch) == 0
    out = capsysbinary.readouterr().out
    text_end = out.index(b"b\x02")
    assert out[:text_end].count(b"\n") == 4  # a 4-row matrix in text
    a, b, c = read_values(out)
    assert a.shape == (4, 2) and a.dtype == np.int32
    assert b.dtype == np.int64 and 0 <= b.min() and b.max() <= 9
    assert c == np.float32(3)
    assert dataset(args, monkeypatch) == 0
    assert capsysbinary.readouterr().out == out  # deterministic for a seed


def test_types_and_conversion_of_stdin(monkeypatch, capsysbinary):
    assert dataset(["-t", "-g", "[3][2]u8", "-g", "f64"], monkeypatch) == 0
    assert capsysbinary.readouterr().out == b"[3][2]u8\nf64\n"
    assert dataset(["-b"], monkeypatch, stdin=b"[1, 2] 3i8") == 0
    xs, k = read_values(capsysbinary.readouterr().out)
    assert xs.tolist() == [1, 2] and k == np.int8(3)


def test_bad_arguments_are_named(monkeypatch, capsys):
    assert dataset(["-g", "[n]f32"], monkeypatch) == 1
    assert "Error: -g '[n]f32': array sizes must be constant integers" in capsys.readouterr().err
    assert dataset(["--f32-bounds=1", "-g", "f32"], monkeypatch) == 1
    assert "Error: --f32-bounds=1: expected MIN:MAX" in capsys.readouterr().err
