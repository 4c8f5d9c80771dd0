"""Settings for the whole test suite."""

from __future__ import annotations

import os

# Every pipeline run in the tests type-checks the IR before and after each
# pass (futgen.pipeline.Options.check_ir), in test workers too.  Set
# FUTGEN_CHECK_IR=0 to run the suite without the checks.
os.environ.setdefault("FUTGEN_CHECK_IR", "1")
