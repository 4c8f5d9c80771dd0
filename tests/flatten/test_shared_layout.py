"""Shared-memory slots of block code (`futgen.flatten.shared_layout`): arrays of
an intra-block kernel share a slot only where their lifetimes are apart by
a barrier.  (Run on CUDA, the kernels these layouts make are checked
against the interpreter by the `gpu` tests of intra-block versions.)"""

from __future__ import annotations

from futgen.core import internalise, ir
from futgen.flatten.shared_layout import SharedLayout
from futgen.frontend import check_source
from futgen.gpu.check import check_program
from futgen.gpu.ir import BLOCKS, SegMap
from futgen.opt.parts import host_stms
from futgen.pipeline import Options, run_passes


def _block_code(src: str) -> ir.Body:
    """The body of the (one) intra-block version of `main`."""
    prog = run_passes(internalise(check_source(src)), options=Options("incremental"))
    check_program(prog)
    found = [s.exp.body for s in host_stms(prog.function("main").body)
             if isinstance(s.exp, SegMap) and s.exp.level == BLOCKS]
    assert len(found) == 1
    return found[0]


def _slots_by_op(body: ir.Body) -> list[int]:
    """The slot of each top-level statement's first array, in order."""
    layout = SharedLayout.of(body)
    return [layout.slot_of[s.pat[0].name] for s in body.stms
            if s.pat and s.pat[0].name in layout.slot_of]


CHAIN = """
entry main [m][n] (xss: [m][n]f32) : [m][n]f32 =
  map (\\xs -> let a = scan (+) 0 xs
               let b = scan (*) 1 a
               let c = scan (+) 0 b
               let d = scan (*) 1 c
               in scan (+) 0 d) xss"""


def test_a_chain_of_block_scans_takes_turns_in_two_slots() -> None:
    """Each scan reads the one before (so the two overlap) and nothing
    reads further back: five arrays alternate between two slots."""
    body = _block_code(CHAIN)
    assert _slots_by_op(body) == [0, 1, 0, 1, 0]
    assert len(SharedLayout.of(body).slots) == 2


def test_an_array_read_again_later_keeps_its_slot() -> None:
    body = _block_code("""
entry main [m][n] (xss: [m][n]f32) : [m][n]f32 =
  map (\\xs -> let a = scan (+) 0 xs
               let b = scan (*) 1 a
               let c = scan (+) 0 b
               in map2 (+) a (scan (*) 1 c)) xss""")
    slots = _slots_by_op(body)
    assert slots[0] not in slots[1:]  # a is live to the end
    assert slots[1] == slots[3]  # b is dead once c is made: the fourth array takes its slot


def test_a_scalar_read_without_a_barrier_after_it_blocks_reuse() -> None:
    """`a[0]` is read by each thread on its own, with no barrier after it
    before `c`'s scan writes: `c` must not take `a`'s slot."""
    body = _block_code("""
entry main [m][n] (xss: [m][n]f32) : [m][n]f32 =
  map (\\xs -> let a = scan (+) 0 xs
               let b = scan (*) 1 a
               let s = a[0]
               let c = scan (+) s b
               in scan (*) 1 c) xss""")
    layout = SharedLayout.of(body)
    arrays = [s.pat[0].name for s in body.stms if s.pat and s.pat[0].name in layout.slot_of]
    a, b, c = arrays[:3]
    assert layout.slot_of[c] not in (layout.slot_of[a], layout.slot_of[b])


def test_arrays_of_different_shapes_do_not_share() -> None:
    body = _block_code("""
entry main [m][n][k] (xss: [m][n]f32) (yss: [m][k]f32) : [m]f32 =
  map2 (\\xs ys -> let a = scan (+) 0 xs
                   let b = scan (*) 1 a
                   let c = scan (+) 0 ys
                   let d = scan (*) 1 c
                   in reduce (+) 0 b + reduce (+) 0 d) xss yss""")
    layout = SharedLayout.of(body)
    shapes = {}
    for v, slot in layout.slot_of.items():
        t = next(p.type for s in body.stms for p in s.pat if p.name == v)
        shapes.setdefault(slot, set()).add(t.shape)
    assert all(len(s) == 1 for s in shapes.values())
    assert len(layout.slots) == 4  # a and c are dead in time, but of other sizes
