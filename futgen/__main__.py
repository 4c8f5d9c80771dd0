"""`python -m futgen` is the `futgen` command."""

import sys

from futgen.cli import main

sys.exit(main())
