"""Builds the ml-diagnostics policy pack. Everything it needs is in this directory (mldiag_policy/) and in
requirements.txt: a copy of policies/ alone loads, analyzes and passes its own tests (tests/)."""

from mldiag_policy import serving
from mldiag_policy.pack import POLICIES
from pulumi_policy import EnforcementLevel, PolicyPack

serving.share_conversions()  # each request's inputs converted once for all policies (see serving.py)
PolicyPack(
    name="ml-diagnostics",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=POLICIES,
)
