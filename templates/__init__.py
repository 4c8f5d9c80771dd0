"""Jinja templates of generated code (`kernels.cu`, the package module), loaded by futgen.codegen."""
