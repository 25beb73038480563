"""`python -m mldiag COMMAND ...`: the same as the `mldiag` console script."""

import sys

from mldiag.cli import run

run(sys.argv[1:])
