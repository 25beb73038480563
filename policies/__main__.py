"""Builds the ml-diagnostics policy pack. Rules live in policies/rules/ as plain functions."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from rules.images import images_pinned  # noqa: E402

PolicyPack(
    name="ml-diagnostics",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=[images_pinned],
)
