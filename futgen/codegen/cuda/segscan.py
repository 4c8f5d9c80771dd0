"""SegScan: a single-pass scan, segmented by flags or by a thread per segment.

One dimension: `templates/cuda/scan.cu.j2`, decoupled look-back over CUB's
tile state, in two launches (reset the tile state; scan).  Operators need
only be associative.  Map-out values are written as elements are computed.

Segmented (more than one dimension), chosen at run time from the segment
size `m` by the threshold `segscan_flags_<k>`:

* `m >= segscan_flags`: the same template over all points, the operator
  lifted to segment-head flags, so long segments use the whole device;
* else one thread per segment scans its row sequentially
  (`segred.per_segment_kernel`).
"""

from __future__ import annotations

import numpy as np

from futgen.codegen.cuda import render
from futgen.codegen.cuda.common import BLOCK, SegCompile, pointer
from futgen.codegen.cuda.segred import per_segment_kernel, value_types
from futgen.codegen.cuda.skeleton import (
    kernel_params,
    operator_slots,
    render_skeleton,
)
from futgen.codegen.plan import DTYPES, KernelPlan, Temp
from futgen.gpu.ir import SegScan

# Elements per thread per tile, at most: twice a reduction's, as every tile
# pays for a look-back and three barriers (on the H100, 2^28 f32: 8 -> 0.93
# of torch.cumsum, 12 -> 0.96, 16 -> 1.04, 20 -> 0.92; 2^26 flagged f32: 4 ->
# 1.38 ms, 8 -> 0.84, 16 -> 0.65).  Fewer for large values: a tile's values
# pass through shared memory (BlockExchange), at most TILE_BYTES of it.
SCAN_ITEMS = 16
TILE_BYTES = 32 * 1024
# Default of the threshold on the segment size from which segmented scans
# run as one flagged scan.
FLAGS_FROM = 16


def compile_segscan(sc: SegCompile, op: SegScan) -> KernelPlan:
    """The plan of `let (pat) = segscan ...`: scan results, then map-out arrays."""
    red, rest = value_types(op)
    pat = sc.stm.pat
    nred = len(red)
    outs = [sc.array(f"{p.name.base}_mem", t, op.space.dims, output=True)
            for p, t in zip(pat, red)]
    mapouts = [sc.array(f"{p.name.base}_mem", t, op.space.dims, output=True)
               for p, t in zip(pat[nred:], rest)]
    if len(op.space.dims) == 1:
        _single_pass(sc, op, red, outs, mapouts)
    else:
        m = sc.host_dim(op.space.dims[-1])
        by_flags = sc.threshold("segscan_flags", FLAGS_FROM,
                                "segment size from which a segmented scan runs as one flagged "
                                "scan", par=m)
        _single_pass(sc, op, red, outs, mapouts, when=by_flags)
        per_segment_kernel(sc, op, red, rest, outs, mapouts, scan=True,
                           when=f"not ({by_flags})")
    return sc.plan([("array", t.name) for t in outs + mapouts])


def _tile(red: list[str], flagged: bool) -> tuple[int, int]:
    """Threads per block and elements per thread of a tile: BLOCK and
    SCAN_ITEMS, the elements halved until a tile of values (their components,
    and a flag padded to the largest one) fits TILE_BYTES, then the threads:
    a value too large for that even one a thread (a fused scan of dozens of
    components) would overflow the 48 KiB of static shared memory a kernel
    may have, as CUB's BlockScan keeps about one value a thread as well."""
    sizes = [np.dtype(DTYPES[t]).itemsize for t in red]
    value_bytes = sum(sizes) + (max(sizes) if flagged else 0)
    block, items = BLOCK, SCAN_ITEMS
    while items > 1 and block * items * value_bytes > TILE_BYTES:
        items //= 2
    while block > 32 and block * items * value_bytes > TILE_BYTES:
        block //= 2
    return block, items


def _single_pass(sc: SegCompile, op: SegScan, red: list[str], outs: list[Temp],
                 mapouts: list[Temp], when: str | None = None) -> None:
    n = sc.host_product(op.space.dims)
    segmented = len(op.space.dims) > 1
    block, items = _tile(red, segmented)
    tiles = f"max(1, -(-({n}) // {block * items}))"
    # CUB's tile state (ScanTileState::AllocationSize, which only device code
    # can call here): per tile a status word and two values, 32 tiles of
    # padding, three 256-byte alignments; 8 bytes per component (and per
    # segment-head flag) bound a value.
    state_bytes = f"({tiles} + 32) * (16 + {16 * (len(red) + segmented) + 16}) + 1024"
    state = sc.temp("tile_state", "u8", state_bytes)
    counter = sc.temp("next_tile", "u32", 1, zeroed=True)
    name = sc.fresh("scan")

    # The reset kernel's parameters have the scan kernel's names.
    init = sc.lowering()
    pointer(init, state)
    init.add_param("state_bytes", "int64_t", False, state_bytes)
    init.add_param("tiles", "int64_t", False, tiles)

    low = sc.lowering()
    slots = operator_slots(sc, low, op, red, mapouts, depth=3, flagged=segmented)
    dims = [render.expr(low.subexp(d)) for d in op.space.dims]
    source = render_skeleton(
        "scan", name=name, **{**slots, "items": items, "block": block}, n=" * ".join(dims),
        m=dims[-1] if segmented else None,
        counter=pointer(low, counter), outs=[pointer(low, t) for t in outs],
        element=slots["element_full"], init_params=kernel_params(init),
        state=f"(void *){pointer(low, state)}",
        state_bytes=low.add_param("state_bytes", "int64_t", False, state_bytes),
        tiles=low.add_param("tiles", "int64_t", False, tiles), params=kernel_params(low))
    # Both kernels are in `source`; the first launch resets the tile state.
    sc.add_kernel(f"{name}_init", source, init, f"{tiles} + 32", when=when)
    sc.add_kernel(name, "", low, f"min({tiles}, b.max_grid({block}) // 8) * {block}",
                  block=block, when=when)
