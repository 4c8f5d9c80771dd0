"""futgen: compile a practical subset of Futhark into importable Python packages.

The pipeline, stage by stage, is described in ARCHITECTURE.md.
"""

from futgen.errors import CompileError, FutgenError, FutharkError, Loc

__version__ = "0.1.0"
__all__ = ["CompileError", "FutgenError", "FutharkError", "Loc", "__version__"]
