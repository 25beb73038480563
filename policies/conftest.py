"""Lets `pytest policies/tests` run from the repository root as `pytest tests` runs from here: the pack's
tests import `mldiag_policy` and `harness` as top-level modules, as a standalone copy of policies/ does."""

import sys
from pathlib import Path

for _dir in (Path(__file__).parent, Path(__file__).parent / "tests"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))
