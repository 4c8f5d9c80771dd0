"""Futhark's scalar semantics on NumPy values: a re-export of `futgen_runtime.prims`.

The definitions live in the runtime so that generated CPU code and the
interpreter share one implementation; this module keeps the interpreter's
imports (`from futgen.interp import prims as P`) working.
"""

from __future__ import annotations

from futgen_runtime.prims import *
