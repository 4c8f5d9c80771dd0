"""Limits that generated kernels and the runtime agree on."""

# Shared memory an intra-block kernel (a block per point, futgen.gpu.ir's
# BLOCKS level) keeps for its block collectives, besides the arrays of its
# block code, which it takes as dynamic shared memory: the code generator
# refuses a kernel that needs more, and `block_fits` counts it.
BLOCK_RESERVED_BYTES = 4096
