"""`python -m mldiag.plan STACK ...`: the same as `mldiag plan`."""

import sys

from mldiag.plan.cli import run_process

run_process(sys.argv[1:])
