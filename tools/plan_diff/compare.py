"""The plan diff: two offline plan reports in, the changed resources and policy findings out."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tools.plan_common import EXIT_ERROR, EXIT_MANDATORY, EXIT_OK
from tools.plan_diff.inputs import diff_inputs, flatten, has_secret, under
from tools.plan_diff.rules import REFUSED, ProviderDiffRule, Rule, default_rules, replace_reasons

ACTIONS = ("replace", "delete", "update", "add")  # most consequential first


def _qualified(urn: str) -> tuple[str, str, str]:
    """(stack::project prefix, parent type chain, name) of a URN, with the resource's own type dropped."""
    try:
        prefix, rest = urn.split("::", 1)[0], urn.split("::", 1)[1]
        project, qtype, name = rest.split("::", 2)
    except (IndexError, ValueError):
        return urn, "", ""
    return f"{prefix}::{project}", qtype.rsplit("$", 1)[0] if "$" in qtype else "", name


def _is_default_provider(urn: str | None) -> bool:
    return bool(urn) and "::pulumi:providers:" in urn and urn.rsplit("::", 1)[-1].startswith("default")


def compare_violations(
    base: list[dict[str, Any]], head: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(new, resolved) findings. Matched by policy, resource and level; a reworded message is not new."""
    groups: dict[tuple[str, str, str], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for side, items in ((0, base), (1, head)):
        for v in items:
            key = (v.get("policy", ""), v.get("urn") or "", v.get("enforcementLevel", ""))
            groups.setdefault(key, ([], []))[side].append(v)
    new: list[dict[str, Any]] = []
    resolved: list[dict[str, Any]] = []
    for olds, news in groups.values():
        old_msgs = [v.get("message") for v in olds]
        unmatched_new = []
        for v in news:
            if v.get("message") in old_msgs:
                old_msgs.remove(v.get("message"))
            else:
                unmatched_new.append(v)
        # Leftovers on both sides pair up as the same finding with a reworded message.
        paired = min(len(unmatched_new), len(old_msgs))
        new.extend(unmatched_new[paired:])
        leftover = old_msgs[paired:]
        for v in olds:
            if v.get("message") in leftover:
                leftover.remove(v.get("message"))
                resolved.append(v)
    return new, resolved


def diff_plans(
    base: dict[str, Any] | None,
    head: dict[str, Any],
    rules: dict[str, Rule] | None = None,
) -> dict[str, Any]:
    """Compares two offline plan reports (the JSON of `python -m tools.plan STACK --format json`).

    `base` None (the stack does not exist at the base ref) makes everything an add. Returns
    {"project", "stack", "summary", "resources": [...changed...], "newPolicyViolations",
    "resolvedPolicyViolations", "headMandatoryViolations", "criticalPath", "notes"}.
    """
    rules = default_rules() if rules is None else rules
    base = base or {"resources": [], "policyViolations": [], "criticalPath": {"depth": 0, "urns": []}}
    old_by = {r["urn"]: r for r in base.get("resources", [])}
    new_by = {r["urn"]: r for r in head.get("resources", [])}
    notes: list[str] = []
    changed: list[dict[str, Any]] = []
    unchanged = 0
    digests_missing = False
    default_moves: Counter[tuple[str, str]] = Counter()

    removed = [u for u in old_by if u not in new_by]
    added = [u for u in new_by if u not in old_by]
    # Same parent chain and name but another type: Pulumi deletes the old and creates the new one.
    old_keys: dict[tuple[str, str, str], list[str]] = {}
    for u in removed:
        old_keys.setdefault(_qualified(u), []).append(u)
    retyped: dict[str, str] = {}
    for u in added:
        cands = old_keys.get(_qualified(u))
        if cands and len(cands) == 1 and new_by[u]["type"] != old_by[cands[0]]["type"]:
            retyped[u] = cands.pop()

    def entry(r: dict[str, Any], action: str, **extra: Any) -> dict[str, Any]:
        e = {"urn": r["urn"], "type": r["type"], "name": r["name"], "custom": r.get("custom", True)}
        e["action"] = action
        e.update(extra)
        return e

    for urn, new in new_by.items():
        if urn in retyped:
            old = old_by[retyped[urn]]
            changes = diff_inputs(old.get("inputs") or {}, new.get("inputs") or {})
            reason = f"type changed from {old['type']} to {new['type']} (no alias)"
            changed.append(entry(new, "replace", oldUrn=old["urn"], replaceReasons=[reason], changes=changes))
            continue
        if urn not in old_by:
            changes = diff_inputs({}, new.get("inputs") or {})
            changed.append(entry(new, "add", changes=changes))
            continue
        old = old_by[urn]
        old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
        changes = diff_inputs(old_in, new_in)
        od, nd = old.get("secretDigests"), new.get("secretDigests")
        res_notes: list[str] = []
        if od is None or nd is None:
            if has_secret(old_in) or has_secret(new_in):
                digests_missing = True
                res_notes.append("secret values not compared (no secretDigests in the plan)")
        else:
            by_path = {c["path"]: c for c in changes}
            flat_old, flat_new = flatten(old_in), flatten(new_in)
            for p in sorted(set(od) | set(nd)):
                if od.get(p) == nd.get(p):
                    continue
                c = by_path.get(p)
                if c is None:
                    c = {"path": p}
                    if p in flat_old:
                        c["old"] = flat_old[p]
                    if p in flat_new:
                        c["new"] = flat_new[p]
                    changes.append(c)
                c["secret"] = True
            changes.sort(key=lambda c: c["path"])
        reasons: list[str] = []
        if (old.get("provider") or None) != (new.get("provider") or None):
            op, np_ = old.get("provider"), new.get("provider")
            if _is_default_provider(op) and _is_default_provider(np_):
                default_moves[(op, np_)] += 1
            else:
                reasons.append(f"provider changed from {op} to {np_}")
        forced = replace_reasons(new["type"], old_in, new_in, [c["path"] for c in changes], rules, res_notes)
        for c in changes:
            if any(under(c["path"], f) or under(f, c["path"]) for f in forced):
                c["forcesReplace"] = True
        if isinstance(rules.get(new["type"]), ProviderDiffRule):
            reasons += [f"{f} cannot change in place (the provider's own diff)" for f in forced]
        else:
            reasons += [f"{f} changed" for f in forced]
        # A refusal fails the real preview: repeat it where the summary shows it.
        notes.extend(f"{new['name']}: {n}" for n in res_notes if n.startswith(REFUSED))
        if reasons:
            changed.append(entry(new, "replace", replaceReasons=reasons, changes=changes, notes=res_notes))
        elif changes:
            changed.append(entry(new, "update", changes=changes, notes=res_notes))
        else:
            unchanged += 1
    retyped_old = set(retyped.values())
    for urn in removed:
        if urn not in retyped_old:
            changed.append(
                entry(old_by[urn], "delete", changes=diff_inputs(old_by[urn].get("inputs") or {}, {}))
            )

    order = {a: i for i, a in enumerate(ACTIONS)}
    changed.sort(key=lambda e: (order[e["action"]], e["type"], e["urn"]))
    for (op, np_), n in sorted(default_moves.items()):
        notes.append(
            f"{n} resource(s) move from default provider {op} to {np_}: not a replacement by itself "
            "(the engine compares default providers by their configuration)"
        )
    if digests_missing:
        notes.append(
            "the plans carry no secretDigests: secret values could not be compared and are treated as unchanged"
        )

    new_v, resolved_v = compare_violations(base.get("policyViolations", []), head.get("policyViolations", []))
    mandatory = [v for v in head.get("policyViolations", []) if v.get("enforcementLevel") == "mandatory"]
    counts = Counter(e["action"] for e in changed)
    return {
        "project": head.get("project"),
        "stack": head.get("stack"),
        "summary": {
            "add": counts["add"],
            "update": counts["update"],
            "replace": counts["replace"],
            "delete": counts["delete"],
            "unchanged": unchanged,
            "newPolicyViolations": len(new_v),
            "resolvedPolicyViolations": len(resolved_v),
            "mandatoryViolations": len(mandatory),
        },
        "resources": changed,
        "newPolicyViolations": new_v,
        "resolvedPolicyViolations": resolved_v,
        "headMandatoryViolations": mandatory,
        "criticalPath": {
            "base": (base.get("criticalPath") or {}).get("depth", 0),
            "head": (head.get("criticalPath") or {}).get("depth", 0),
        },
        "notes": notes,
    }


def exit_code(diff: dict[str, Any]) -> int:
    if "error" in diff:
        return EXIT_ERROR
    return EXIT_MANDATORY if diff["summary"]["mandatoryViolations"] else EXIT_OK
