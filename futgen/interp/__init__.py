"""The reference interpreter: runs checked source programs on NumPy values."""

from futgen.interp.interpreter import Interpreter

__all__ = ["Interpreter"]
