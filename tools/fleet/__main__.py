"""`python -m tools.fleet`: the same as `mldiag fleet`."""

import sys

from tools.fleet.cli import main

sys.exit(main())
