"""The tuning values of a package instance: defaults, baked values, the
`$FUTGEN_TUNING` file and overrides in that order; unknown names and bad
values rejected with the known names; guards logged in Futhark's words."""

from __future__ import annotations

import pytest
from futgen_runtime.errors import FutgenError
from futgen_runtime.tuning import Tuning, read_tuning_file

PARAMS = {
    "main.suff_outer_par_0": {"class": "threshold", "default": 32768, "path": (), "doc": ""},
    "main.segred_block_1": {"class": "threshold", "default": 8192,
                            "path": ("!main.suff_outer_par_0",), "doc": ""},
}


def test_values_come_from_defaults_baked_file_and_overrides_in_order(tmp_path, monkeypatch):
    f = tmp_path / "prog.fut.tuning"
    f.write_text("-- tuned on a test machine\n\nmain.suff_outer_par_0=100\n"
                 "main.segred_block_1 = 7 -- a comment\n")
    monkeypatch.setenv("FUTGEN_TUNING", str(f))
    t = Tuning(PARAMS, {"main.suff_outer_par_0": 5, "main.segred_block_1": 6},
               {"main.segred_block_1": 3})
    assert t.values == {"main.suff_outer_par_0": 100, "main.segred_block_1": 3}
    monkeypatch.delenv("FUTGEN_TUNING")
    assert Tuning(PARAMS, {}).values == {"main.suff_outer_par_0": 32768,
                                         "main.segred_block_1": 8192}


def test_unknown_names_are_rejected_with_the_known_ones():
    with pytest.raises(FutgenError, match=r"tuning=: unknown tuning parameter main.x_9; "
                                          r"this package has: main.segred_block_1, "
                                          r"main.suff_outer_par_0"):
        Tuning(PARAMS, {}, {"main.x_9": 1})


@pytest.mark.parametrize("value", [1.5, "12", True, None])
def test_values_must_be_integers(value):
    with pytest.raises(FutgenError, match="main.suff_outer_par_0 must be an integer"):
        Tuning(PARAMS, {}, {"main.suff_outer_par_0": value})


def test_a_bad_line_of_a_tuning_file_names_the_file_and_line(tmp_path):
    f = tmp_path / "t.tuning"
    f.write_text("main.suff_outer_par_0=1\nmain.segred_block_1 12\n")
    with pytest.raises(FutgenError, match=r"t.tuning:2: expected a line `name=value`"):
        read_tuning_file(f, PARAMS)


def test_guards_log_futharks_line_and_remember_the_last_call(capsys, monkeypatch):
    monkeypatch.delenv("FUTGEN_LOG", raising=False)
    t = Tuning(PARAMS, {}, {"main.suff_outer_par_0": 10}, log=True)
    assert t.guard("main.suff_outer_par_0", 10) is True
    assert t.guard("main.suff_outer_par_0", 9) is False
    assert capsys.readouterr().err == ("Compared main.suff_outer_par_0 <= 10: true.\n"
                                       "Compared main.suff_outer_par_0 <= 9: false.\n")
    assert t.guards == [("main.suff_outer_par_0", 10, True), ("main.suff_outer_par_0", 9, False)]
    quiet = Tuning(PARAMS, {})
    quiet.guard("main.suff_outer_par_0", 1)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("FUTGEN_LOG", "1")
    assert Tuning(PARAMS, {}).log


def test_default_threshold_sets_the_guards_a_source_does_not_name(tmp_path, monkeypatch):
    """Futhark's global name: every version guard, not the strategy thresholds;
    names the same source gives win, and a later source's default wins over
    an earlier source's values."""
    params = {**PARAMS, "main.suff_intra_par_2": {"class": "threshold", "default": 32768,
                                                   "path": ("!main.suff_outer_par_0",),
                                                   "doc": ""}}
    monkeypatch.delenv("FUTGEN_TUNING", raising=False)
    t = Tuning(params, {}, {"default_threshold": 7, "main.suff_intra_par_2": 9})
    assert t.values == {"main.suff_outer_par_0": 7, "main.suff_intra_par_2": 9,
                        "main.segred_block_1": 8192}
    f = tmp_path / "p.tuning"
    f.write_text("default_threshold=1\n")
    monkeypatch.setenv("FUTGEN_TUNING", str(f))
    t = Tuning(params, {"main.suff_outer_par_0": 5}, {})
    assert t.values["main.suff_outer_par_0"] == 1 and t.values["main.suff_intra_par_2"] == 1


def test_default_tile_size_is_refused_with_the_reason(tmp_path):
    with pytest.raises(FutgenError, match=r"tuning=: default_tile_size cannot be set: futgen's "
                                          r"tile sizes mean something different in each kernel"):
        Tuning(PARAMS, {}, {"default_tile_size": 256})
    # A file found beside a program may be Futhark's own: its tile sizes are left out.
    f = tmp_path / "prog.fut.tuning"
    f.write_text("default_tile_size=16\nmain.suff_outer_par_0=7\n")
    unknown: list[str] = []
    assert read_tuning_file(f, PARAMS, unknown) == {"main.suff_outer_par_0": 7}
    assert unknown == ["default_tile_size"]


BLOCKS = {**PARAMS, "main.segmap_tblock_size_2": {"class": "tblock_size", "default": 256,
                                                  "path": (), "doc": ""},
          "main.segmap_tblock_size_3": {"class": "tblock_size", "default": 256,
                                        "path": (), "doc": ""}}


def test_block_sizes_are_set_one_by_one_or_all_by_default_tblock_size():
    t = Tuning(BLOCKS, {}, {"default_tblock_size": 128, "main.segmap_tblock_size_3": 1024})
    assert t.values["main.segmap_tblock_size_2"] == 128
    assert t.values["main.segmap_tblock_size_3"] == 1024
    assert t.values["main.segred_block_1"] == 8192  # a threshold, not a block size


@pytest.mark.parametrize("value", [0, 100, 2048, -32])
def test_block_sizes_must_be_multiples_of_32_up_to_1024(value):
    for name in ("main.segmap_tblock_size_2", "default_tblock_size"):
        with pytest.raises(FutgenError, match=rf"tuning=: block size {name} must be a multiple "
                                              rf"of 32 from 32 to 1024, got {value}"):
            Tuning(BLOCKS, {}, {name: value})


RUNS = {**BLOCKS, "main.intra_runs_4": {"class": "run_length", "default": 4, "path": (),
                                         "doc": "", "values": (1, 2, 4, 8, 16)}}


def test_run_lengths_take_the_values_their_kernel_allows_and_not_default_tblock_size():
    t = Tuning(RUNS, {}, {"default_tblock_size": 128, "main.intra_runs_4": 8})
    assert t.values["main.intra_runs_4"] == 8 and t.values["main.segmap_tblock_size_2"] == 128
    assert Tuning(RUNS, {}, {"default_tblock_size": 128}).values["main.intra_runs_4"] == 4
    with pytest.raises(FutgenError, match=r"tuning=: run length main.intra_runs_4 must be one "
                                          r"of 1, 2, 4, 8, 16 \(those its kernel allows\), got 3"):
        Tuning(RUNS, {}, {"main.intra_runs_4": 3})


TILES = {**PARAMS, "main.segmap_tile_size_2": {
    "class": "tile_size", "default": 8, "path": (), "doc": "", "values": (8, 16, 32),
    "macro": "FUTGEN_TILE_segmap_tile_size_7"}}


def test_tile_sizes_compile_the_kernels_with_defines_apart_from_the_built_ones():
    assert Tuning(TILES, {}).defines() == {}
    t = Tuning(TILES, {}, {"main.segmap_tile_size_2": 32})
    assert t.defines() == {"FUTGEN_TILE_segmap_tile_size_7": 32}
    # Baked values are in the package's kernels already (source and images).
    baked = Tuning(TILES, {"main.segmap_tile_size_2": 16})
    assert baked.defines() == {}
    baked.set({"main.segmap_tile_size_2": 8})
    assert baked.defines() == {"FUTGEN_TILE_segmap_tile_size_7": 8}
    baked.tile_size("main.segmap_tile_size_2")
    assert baked.sizes_used == {"main.segmap_tile_size_2"}


def test_tile_sizes_must_be_values_their_kernel_allows():
    with pytest.raises(FutgenError, match=r"tuning=: tile size main.segmap_tile_size_2 must be "
                                          r"one of 8, 16, 32 \(those its kernel allows\), "
                                          r"got 12"):
        Tuning(TILES, {}, {"main.segmap_tile_size_2": 12})


def test_values_stay_as_they_were_where_compiling_their_kernels_fails():
    t = Tuning(TILES, {})
    t.set({"main.segmap_tile_size_2": 16}, compile=lambda defines: None)

    def no_nvcc(defines):
        raise FutgenError("nvcc not found")

    with pytest.raises(FutgenError, match="nvcc not found"):
        t.set({"main.segmap_tile_size_2": 32, "main.suff_outer_par_0": 5}, compile=no_nvcc)
    assert t.values["main.segmap_tile_size_2"] == 16
    assert t.values["main.suff_outer_par_0"] == 32768
