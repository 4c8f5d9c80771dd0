"""Optimisation of the core IR before flattening: simplification, and what fusion needs.

The passes (`futgen.pipeline` lists them in order) each take a core IR
program to an equivalent one:

* `futgen.opt.simplify`: copy propagation, exact constant folding and
  algebraic laws (`futgen.opt.rules`), common subexpressions, dead code and
  hoisting of invariant scalar code out of loops and lambdas, to a fixed
  point;
* fusion (`futgen.flatten.fusion`): the thesis's fusion rules, so that
  fewer, larger SOACs reach flattening (and fewer kernels the GPU).  It
  lives beside flattening, which fuses the kernel bodies it builds with the
  same `fuse_body` (and whose `names` helpers it shares: a module here that
  flattening imported would import it back);
* after flattening, on the GPU IR: `futgen.opt.rearranges` (SegMaps read
  through transpositions rather than have them made, where that keeps their
  reads coalesced), `futgen.opt.simplify_host` (the simplifier's jobs on
  the host code: its scalars, and arrays made anew in every iteration of a
  loop) and `futgen.opt.producers` (a GRID SegMap that an intra-block
  kernel reads at its own points computed by that kernel), leaving kernel
  code otherwise as flattening built it.

What a rewrite must not do (drop a failure, share an array that is
consumed, move work past an in-place update) is decided in one place,
`futgen.opt.effects`.
"""
