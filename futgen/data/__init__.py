"""Futhark values: the data format (text and binary) and comparison of results.

Importing this package also makes the `futhark_data` package usable under
NumPy 2 (see `futgen.data.compat`).
"""

from futgen.data.compare import Mismatch, compare_values
from futgen.data.values import (
    DataScanner,
    Value,
    check_arguments,
    encode_binary,
    format_scalar,
    format_value,
    load_file,
    read_values,
    value_type,
)

__all__ = [
    "DataScanner",
    "Mismatch",
    "Value",
    "check_arguments",
    "compare_values",
    "encode_binary",
    "format_scalar",
    "format_value",
    "load_file",
    "read_values",
    "value_type",
]
