"""Limits that generated kernels and the runtime agree on."""

# Shared memory an intra-block kernel (a block per point, futgen.gpu.ir's
# BLOCKS level) keeps for its block collectives, besides the arrays of its
# block code, which it takes as dynamic shared memory: the code generator
# refuses a kernel that needs more, and `block_fits` counts it.
BLOCK_RESERVED_BYTES = 4096

# The fewest and most lanes an intra-block kernel gives a point when fewer
# than a warp's do: several points then share a warp, each with its lanes
# (a power of two: CUB scans a logical warp of them) and its shared memory.
MIN_GROUP_LANES = 4
MAX_GROUP_LANES = 16


def intra_shape(widest: int, runs: int, cap: int, nbytes: int,
                max_shared: int) -> tuple[int, int]:
    """(lanes, groups): the threads an intra-block kernel gives each point,
    and the points one block runs at once.  A point takes its widest block
    operation's elements, `runs` to a thread: a multiple of 32 lanes within
    `cap` (the tunable `intra_tblock_size`, a multiple of 32), a point to a
    block; or, where MAX_GROUP_LANES or fewer do, a power of two of lanes
    and a warp of such groups (LocVolCalib's rows of 32 on a full device:
    two rows to a warp, two elements a lane), as many as their `nbytes` of
    shared memory each leave room for."""
    need = -(-widest // max(runs, 1))
    if need > MAX_GROUP_LANES:
        return min(cap, -(-need // 32) * 32), 1
    lanes = MIN_GROUP_LANES
    while lanes < need:
        lanes *= 2
    room = (max_shared - BLOCK_RESERVED_BYTES) // nbytes if nbytes > 0 else 32
    return lanes, max(1, min(32 // lanes, room))
