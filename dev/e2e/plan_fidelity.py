"""Offline plan vs `pulumi preview --json`: the same resources (URN, type, parent) with the same inputs?

    python -m dev.e2e.plan_fidelity PLAN.json PREVIEW.json     # prints every difference, exit 1 if any
                                                                  # is not an accepted one

The preview's inputs are what the provider's Check returned (the engine shows checked inputs), so
provider-side defaults appear there and not in the offline plan, which records what the program sent.
Those, and the resources only the engine has, are the ACCEPTED differences (docs/e2e.md, "End-to-end tests").
Secrets compare as equal when both sides hold a secret; unknowns when both sides hold an unknown.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
SECRET_SIG = "4dabf18193072939515e22adb298388d"


@dataclass(frozen=True)
class Difference:
    urn: str
    what: str  # only-in-plan | only-in-preview | type | parent | input
    path: str
    plan: Any
    preview: Any

    def __str__(self) -> str:
        name = self.urn.rsplit("::", 1)[-1]
        if self.what.startswith("only-in"):
            return f"{self.what}: {name} ({self.plan or self.preview})"
        return f"{self.what} {name}{'.' + self.path if self.path else ''}: plan={self.plan!r} preview={self.preview!r}"


# (what, urn regex, path regex): differences that are explained, not bugs. Each is listed in the README.
ACCEPTED: tuple[tuple[str, str, str, str], ...] = (
    (
        "only-in-preview",
        r"::pulumi:pulumi:Stack::",
        "",
        "the stack resource is the engine's own; the offline plan is its children",
    ),
    (
        "only-in-preview",
        r"pulumi:providers:pulumi-python::default",
        "",
        "the default provider of dynamic resources is created by the engine",
    ),
    (
        "input",
        r"kubernetes:helm\.sh/v3:Release::",
        r"^(resourceNames|status|allowNullValues|valueYamlFiles|skipCrds|forceUpdate|recreatePods|"
        r"cleanupOnFail|atomic|maxHistory|resetValues|reuseValues|replace|lint|skipAwait|waitForJobs|"
        r"verify|disableWebhooks|disableCRDHooks|disableOpenapiValidation|dependencyUpdate|keyring|"
        r"postrender|devel|description|renderSubchartNotes|manifest|createNamespace|timeout|"
        r"repositoryOpts\.([a-zA-Z]+File|username|password))(\.|$)",
        "Helm Release defaults filled in by the provider's Check",
    ),
    (
        "input",
        r"kubernetes:helm\.sh/v3:Release::",
        r"^compat$",
        "the SDK sends `compat: true` on a Helm Release; the provider's Check drops it",
    ),
    (
        "input",
        r"pulumi:providers:",
        r"^(version|__internal)$",
        "the engine adds the plugin version (and its __internal map) to a provider's inputs",
    ),
    (
        "input",
        r"kubernetes:",
        r"^__defaults$|^metadata\.annotations\.pulumi\.com/",
        "Kubernetes provider bookkeeping added by its Check",
    ),
)


def _norm(v: Any) -> Any:
    if v == UNKNOWN:
        return "<unknown>"
    if v == "[secret]" or (isinstance(v, dict) and SECRET_SIG in v):
        return "<secret>"
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def _diff(urn: str, plan: Any, preview: Any, path: str, out: list[Difference]) -> None:
    if isinstance(plan, dict) and isinstance(preview, dict):
        for k in sorted(set(plan) | set(preview)):
            sub = f"{path}.{k}" if path else k
            if k not in plan:
                out.append(Difference(urn, "input", sub, None, preview[k]))
            elif k not in preview:
                out.append(Difference(urn, "input", sub, plan[k], None))
            else:
                _diff(urn, plan[k], preview[k], sub, out)
    elif isinstance(plan, list) and isinstance(preview, list) and len(plan) == len(preview):
        for i, (a, b) in enumerate(zip(plan, preview, strict=True)):
            _diff(urn, a, b, f"{path}[{i}]", out)
    elif plan != preview:
        out.append(Difference(urn, "input", path, plan, preview))


def compare(plan: dict[str, Any], preview: dict[str, Any]) -> tuple[int, list[Difference]]:
    """(resources present on both sides, differences)."""
    ours = {r["urn"]: r for r in plan["resources"]}
    theirs = {s["urn"]: s["newState"] for s in preview.get("steps", []) if s.get("newState")}
    out: list[Difference] = []
    for urn in sorted(set(theirs) - set(ours)):
        out.append(Difference(urn, "only-in-preview", "", None, theirs[urn]["type"]))
    for urn in sorted(set(ours) - set(theirs)):
        out.append(Difference(urn, "only-in-plan", "", ours[urn]["type"], None))
    both = sorted(set(ours) & set(theirs))
    for urn in both:
        a, b = ours[urn], theirs[urn]
        if a["type"] != b["type"]:
            out.append(Difference(urn, "type", "", a["type"], b["type"]))
        if (a.get("parent") or "") != (b.get("parent") or ""):
            out.append(Difference(urn, "parent", "", a.get("parent"), b.get("parent")))
        _diff(urn, _norm(a.get("inputs") or {}), _norm(b.get("inputs") or {}), "", out)
    return len(both), out


def accepted_reason(d: Difference) -> str | None:
    for what, urn_re, path_re, reason in ACCEPTED:
        if d.what == what and re.search(urn_re, d.urn) and (not path_re or re.search(path_re, d.path)):
            return reason
    return None


def main(argv: list[str]) -> int:
    with open(argv[0]) as f:
        plan = json.load(f)
    with open(argv[1]) as f:
        preview = json.load(f)
    n, diffs = compare(plan, preview)
    bad = [d for d in diffs if accepted_reason(d) is None]
    for d in diffs:
        print(f"{'accepted' if accepted_reason(d) else 'DIFFERENT'}: {d}")
    print(
        f"plan fidelity: {n} resources on both sides, {len(diffs) - len(bad)} accepted differences, {len(bad)} other"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
