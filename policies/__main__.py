"""Builds the ml-diagnostics policy pack. Everything it needs is in this directory (mldiag_policy/) and in
requirements.txt: a copy of policies/ alone loads, analyzes and passes its own tests (tests/)."""

from mldiag_policy import serving
from mldiag_policy.pack import POLICIES, may_check
from pulumi_policy import EnforcementLevel, PolicyPack

# each request's inputs converted once for all policies, and run by the policies of its type (serving.py)
serving.share_conversions(may_check)
PolicyPack(
    name="ml-diagnostics",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=POLICIES,
)
