"""`python -m mldiag.diff ...`: the same as `mldiag diff`."""

import sys

from mldiag.diff.cli import main

sys.exit(main())
