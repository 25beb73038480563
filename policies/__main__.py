"""Builds the ml-diagnostics policy pack. Rules live in policies/rules/ as plain functions.

The repo root goes on sys.path so rules can use components/compat.py (pure Python: the version rules from
the docs live there once, for the components and the pack alike).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402
from rules import POLICIES  # noqa: E402

PolicyPack(
    name="ml-diagnostics",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=POLICIES,
)
