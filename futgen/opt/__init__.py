"""Optimisation of the core IR, before flattening: simplification, inlining, fusion.

The passes (in `futgen.pipeline`'s order) each take a core IR program to an
equivalent one:

* `simplify` (`futgen.opt.simplify`): copy propagation, exact constant
  folding and algebraic laws (`futgen.opt.rules`), common subexpressions,
  dead code and hoisting of invariant scalar code out of loops and lambdas,
  to a fixed point;
* `fuse` (`futgen.opt.fusion`): the thesis's fusion rules, so that fewer,
  larger SOACs reach flattening (and fewer kernels the GPU).

What a rewrite must not do (drop a failure, share an array that is
consumed, move work past an in-place update) is decided in one place,
`futgen.opt.effects`.
"""

from __future__ import annotations

from futgen.opt.simplify import simplify

__all__ = ["simplify"]
