"""Compiling CUDA source to cubins with nvcc, cached on disk.

Separate from the CUDA backend and free of PyCUDA, so that compilation and
the cache can be tested on machines with nvcc but no GPU.  The cache key is
the sha256 of the source, the options and the architecture: a changed
kernel, flag or GPU never reuses a stale image.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

DEFAULT_OPTIONS = ("-O3", "-std=c++17")


def default_cache_dir() -> Path:
    """`$FUTGEN_CACHE_DIR`, else `$XDG_CACHE_HOME/futgen`, else `~/.cache/futgen`."""
    env = os.environ.get("FUTGEN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "futgen"


def find_nvcc() -> str:
    """The nvcc executable: on PATH, else under `$CUDA_HOME` or `/usr/local/cuda`."""
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    raise RuntimeError("nvcc not found (needed to compile the kernels for this GPU; "
                       "install the CUDA toolkit or use a package built with --wheel)")


def cache_key(source: str, options: Sequence[str], arch: str) -> str:
    """sha256 over source, options and architecture."""
    h = hashlib.sha256()
    for part in (source, "\0".join(options), arch):
        h.update(part.encode())
        h.update(b"\x01")
    return h.hexdigest()


def compile_cubin(source: str, arch: str, options: Sequence[str] = DEFAULT_OPTIONS,
                  cache_dir: str | Path | None = None) -> tuple[bytes, bool]:
    """The cubin of `source` for `arch` (`"sm_90"`) and whether it came from the cache."""
    cdir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = cdir / f"{cache_key(source, options, arch)}.cubin"
    try:
        return path.read_bytes(), True
    except OSError:
        pass
    cubin = _nvcc(source, arch, options)
    try:
        cdir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cdir, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        os.replace(tmp, path)  # atomic: concurrent processes never read half a file
    except OSError:
        pass  # an unwritable cache only costs a recompilation next time
    return cubin, False


def _nvcc(source: str, arch: str, options: Sequence[str]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="futgen-nvcc-") as d:
        src, out = Path(d) / "kernels.cu", Path(d) / "kernels.cubin"
        src.write_text(source)
        cmd = [find_nvcc(), "-cubin", f"-arch={arch}", *options, "-o", str(out), str(src)]
        r = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nvcc failed ({' '.join(cmd)}):\n{r.stderr.strip()}")
        return out.read_bytes()
