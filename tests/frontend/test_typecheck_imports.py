"""Imports (`names.Imports`), Futhark's rule: a file sees the top-level
names of the files it imports, not those the imported files import in
turn.  Each rejected program has a close accepted variant."""

import pytest

from futgen.errors import CompileError
from futgen.frontend import load


def _files(tmp_path, main: str) -> str:
    (tmp_path / "lo.fut").write_text("def lo (x: i32) = x * 2\n")
    (tmp_path / "hi.fut").write_text('import "lo"\n\ndef hi (x: i32) = lo x + 1\n')
    (tmp_path / "t.fut").write_text(main)
    return str(tmp_path / "t.fut")


def test_an_import_is_not_passed_on(tmp_path) -> None:
    with pytest.raises(CompileError) as e:
        load(_files(tmp_path, 'import "hi"\n\ndef main (x: i32) = hi x + lo x\n'))
    msg = str(e.value)
    assert "/t.fut:3:28" in msg
    assert 'Unknown name "lo".' in msg
    assert "It is defined in " in msg and "lo.fut, which this file does not import." in msg
    load(_files(tmp_path, 'import "hi"\n\ndef main (x: i32) = hi x\n'))


def test_a_file_imported_directly_is_seen(tmp_path) -> None:
    load(_files(tmp_path, 'import "hi"\nimport "lo"\n\ndef main (x: i32) = hi x + lo x\n'))
    load(_files(tmp_path, 'import "lo"\nimport "hi"\n\ndef main (x: i32) = hi x + lo x\n'))
