"""`python -m mldiag.fleet`: the same as `mldiag fleet`."""

import sys

from mldiag.fleet.cli import main

sys.exit(main())
