"""The compiler and the runtime share one definition of types and errors."""

from futgen_runtime import dtypes as D

from futgen.frontend import types as T


def test_prim_dtype_takes_futhark_and_numpy_names() -> None:
    assert D.prim_dtype("f32") == D.prim_dtype("float32") == T.Scalar("f32").dtype
    assert D.DTYPE_PRIMS[D.prim_dtype("u16")] == "u16"


def test_one_futhark_error_class() -> None:
    import futgen_runtime.errors

    import futgen.errors

    assert futgen.errors.FutharkError is futgen_runtime.errors.FutharkError
    assert issubclass(futgen.errors.FutharkError, futgen.errors.FutgenError)
