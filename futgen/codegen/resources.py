"""Where the templates and the runtime are, installed or in a checkout.

Installed, they are the packages `futgen_templates` and `futgen_runtime`
(see setup.py); run from a checkout with only the repository root on the
path, they are the folders `templates/` and `runtime/futgen_runtime/`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]


def _package_dir(package: str, fallback: Path) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return fallback


def templates_dir() -> Path:
    """The folder of the Jinja templates (`*.j2`)."""
    return _package_dir("futgen_templates", _ROOT / "templates")


def runtime_dir() -> Path:
    """The folder of the `futgen_runtime` package, copied into generated packages."""
    return _package_dir("futgen_runtime", _ROOT / "runtime" / "futgen_runtime")
