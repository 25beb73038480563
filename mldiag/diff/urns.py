"""Plans written before the offline plan recorded the engine's URNs: rewritten to them before a diff.

Those plans built URNs as the SDK's mock monitor does: the parent's own type only, and `pulumi:pulumi:Stack$`
in front of top-level resources. The engine keeps the whole parent type chain and leaves the stack out. A
base plan made by such a commit is rewritten from its parent links, so a diff across the change compares
the same resources instead of showing every nested one deleted and added.
"""

from __future__ import annotations

import copy
from typing import Any

from mldiag.common import STACK_TYPE, engine_urn

OLD_TOP_LEVEL = f"::{STACK_TYPE}$"


def is_mock_scheme(report: dict[str, Any]) -> bool:
    return any(OLD_TOP_LEVEL in str(r.get("urn", "")) for r in report.get("resources") or [])


def to_engine_urns(report: dict[str, Any]) -> dict[str, Any]:
    """The report with every resource URN (and reference to one) in the engine's scheme; unchanged when
    it already is."""
    if not is_mock_scheme(report):
        return report
    by_urn = {r["urn"]: r for r in report.get("resources") or []}
    memo: dict[str, str] = {}

    def new(urn: str) -> str:
        if urn in memo:
            return memo[urn]
        r = by_urn.get(urn)
        if r is None:  # the root stack, or a URN that is not a resource of this plan
            return urn
        head, project, qualified, name = urn.split("::", 3)
        stack = head.removeprefix("urn:pulumi:")
        parent = r.get("parent") or ""
        memo[urn] = engine_urn(new(parent) if parent else "", qualified.split("$")[-1], name, stack, project)
        return memo[urn]

    out = copy.deepcopy(report)
    for r in out.get("resources") or []:
        r["urn"] = new(r["urn"])
        if r.get("parent"):
            r["parent"] = new(r["parent"])
        if r.get("provider"):
            r["provider"] = new(r["provider"])
        r["dependencies"] = [new(u) for u in r.get("dependencies") or []]
        if isinstance(r.get("propertyDependencies"), dict):
            r["propertyDependencies"] = {k: [new(u) for u in v] for k, v in r["propertyDependencies"].items()}
    for v in out.get("policyViolations") or []:
        if v.get("urn"):
            v["urn"] = new(v["urn"])
    path = out.get("criticalPath")
    if isinstance(path, dict) and isinstance(path.get("urns"), list):
        path["urns"] = [new(u) for u in path["urns"]]
    return out
