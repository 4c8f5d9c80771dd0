"""The reference interpreter: runs checked source programs on NumPy values."""

from futgen.interp.interpreter import EntryPoint, Interpreter

__all__ = ["EntryPoint", "Interpreter"]
