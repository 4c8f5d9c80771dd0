"""The runtime's copy of the primitive-type tables agrees with the compiler's."""

from futgen_runtime import dtypes as D

from futgen.frontend import types as T


def test_tables_agree() -> None:
    assert D.PRIM_DTYPES == T.PRIM_DTYPES
    assert D.DTYPE_PRIMS == T.DTYPE_PRIMS
    assert (D.SIGNED_INTS, D.UNSIGNED_INTS, D.FLOATS) == (T.SIGNED_INTS, T.UNSIGNED_INTS, T.FLOATS)


def test_one_futhark_error_class() -> None:
    import futgen_runtime.errors

    import futgen.errors

    assert futgen.errors.FutharkError is futgen_runtime.errors.FutharkError
    assert issubclass(futgen.errors.FutharkError, futgen.errors.FutgenError)
