"""The plan diff: two offline plan reports in, the changed resources and policy findings out."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypeGuard

from mldiag.common import EXIT_ERROR, EXIT_MANDATORY, EXIT_OK
from mldiag.diff.danger import dangerous
from mldiag.diff.inputs import diff_inputs, flatten, has_secret, under
from mldiag.diff.rules import REFUSED, ProviderDiffRule, Rule, default_rules, replace_reasons, rule_of
from mldiag.diff.urns import is_mock_scheme, to_engine_urns
from mldiag.exit_codes import Exit

ACTIONS = ("replace", "delete", "update", "rename", "import", "add")  # most consequential first
SUMMARY_ACTIONS = ("add", "import", "update", "rename", "replace", "delete")


def _qualified(urn: str) -> tuple[str, str, str]:
    """(stack::project prefix, parent type chain, name) of a URN, with the resource's own type dropped."""
    try:
        prefix, rest = urn.split("::", 1)[0], urn.split("::", 1)[1]
        project, qtype, name = rest.split("::", 2)
    except (IndexError, ValueError):
        return urn, "", ""
    return f"{prefix}::{project}", qtype.rsplit("$", 1)[0] if "$" in qtype else "", name


def _is_default_provider(urn: str | None) -> TypeGuard[str]:
    return urn is not None and "::pulumi:providers:" in urn and urn.rsplit("::", 1)[-1].startswith("default")


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


def mark_invented(
    changes: list[dict[str, Any]], old: dict[str, Any] | None, new: dict[str, Any] | None
) -> list[str]:
    """Flags each change whose old or new value the offline plan invented (`oldInvented`/`newInvented`);
    returns the paths of those changes.

    A plan lists the input paths it invented (`invented`, mldiag/engine/invented.py). A base planned before the
    plan recorded them has no such list: its values came from the same mock answers, so the new side's
    paths stand in for the old side's.
    """
    new_paths = (new or {}).get("invented") or []
    old_paths = (old or {}).get("invented")
    if old_paths is None:
        old_paths = new_paths if old is not None else []
    found: list[str] = []
    for c in changes:
        p = c["path"]
        for side, paths in (("old", old_paths), ("new", new_paths)):
            if side in c and any(under(p, i) or under(i, p) for i in paths):
                c[f"{side}Invented"] = True
        if c.get("oldInvented") or c.get("newInvented"):
            found.append(p)
    return found


def _skeleton(r: dict[str, Any]) -> dict[str, Any]:
    """What the graph needs of a resource (diff JSON alone draws it: see mldiag/report/graph.py)."""
    return {
        "urn": r["urn"],
        "type": r["type"],
        "name": r["name"],
        "custom": r.get("custom", True),
        "parent": r.get("parent"),
        "provider": r.get("provider"),
        "dependencies": r.get("dependencies") or [],
    }


class _Diff:
    """State of one diff_plans call: the resources of both sides and what was found so far."""

    def __init__(self, base: dict[str, Any], head: dict[str, Any], rules: dict[str, Rule]) -> None:
        self.rules = rules
        self.old_by = {r["urn"]: r for r in base.get("resources", [])}
        self.new_by = {r["urn"]: r for r in head.get("resources", [])}
        self.notes: list[str] = []
        self.changed: list[dict[str, Any]] = []
        self.unchanged: list[dict[str, Any]] = []
        self.digests_missing = False
        self.default_moves: Counter[tuple[str, str]] = Counter()
        removed = [u for u in self.old_by if u not in self.new_by]
        added = [u for u in self.new_by if u not in self.old_by]
        # An alias naming a removed URN: the engine moves that resource to the new URN (a rename).
        self.renamed: dict[str, str] = {}
        claimed: set[str] = set()
        for u in added:
            old = next(
                (a for a in self.new_by[u].get("aliases") or [] if a in removed and a not in claimed), None
            )
            if old is not None:
                self.renamed[u] = old
                claimed.add(old)
        # Same parent chain and name but another type: Pulumi deletes the old and creates the new one.
        old_keys: dict[tuple[str, str, str], list[str]] = {}
        for u in removed:
            if u not in claimed:
                old_keys.setdefault(_qualified(u), []).append(u)
        self.retyped: dict[str, str] = {}
        for u in added:
            cands = old_keys.get(_qualified(u))
            if (
                u not in self.renamed
                and cands
                and len(cands) == 1
                and self.new_by[u]["type"] != self.old_by[cands[0]]["type"]
            ):
                self.retyped[u] = cands.pop()
        self.removed = [u for u in removed if u not in claimed and u not in set(self.retyped.values())]

    def add(self, r: dict[str, Any], action: str, old: dict[str, Any] | None = None, **extra: Any) -> None:
        """A changed resource: `r` as it will be (as it was, for a delete); `old` as it was, if it was."""
        e = _skeleton(r)
        e["action"] = action
        e.update(extra)
        new = None if action == "delete" else r
        invented = mark_invented(e.get("changes") or [], r if action == "delete" else old, new)
        if invented:
            e["invented"] = invented
        self.changed.append(e)

    def run(self) -> None:
        for urn, new in self.new_by.items():
            if urn in self.retyped:
                old = self.old_by[self.retyped[urn]]
                changes = diff_inputs(old.get("inputs") or {}, new.get("inputs") or {})
                reason = f"type changed from {old['type']} to {new['type']} (no alias)"
                self.add(new, "replace", old, oldUrn=old["urn"], replaceReasons=[reason], changes=changes)
            elif urn in self.old_by or urn in self.renamed:
                self.compare(self.old_by[self.renamed.get(urn, urn)], new)
            elif new.get("importId"):
                self.add(
                    new, "import", importId=new["importId"], changes=diff_inputs({}, new.get("inputs") or {})
                )
            else:
                self.add(new, "add", changes=diff_inputs({}, new.get("inputs") or {}))
        for urn in self.removed:
            old = self.old_by[urn]
            self.add(old, "delete", changes=diff_inputs(old.get("inputs") or {}, {}))

    def compare(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
        res_notes: list[str] = []
        changes = self.changes(old, new, res_notes)
        reasons: list[str] = []
        op, np_ = old.get("provider") or None, new.get("provider") or None
        if op != self.renamed.get(np_ or "", np_):
            if _is_default_provider(op) and _is_default_provider(np_):
                self.default_moves[(op, np_)] += 1
            else:
                reasons.append(f"provider changed from {op} to {np_}")
        forced = replace_reasons(
            new["type"], old_in, new_in, [c["path"] for c in changes], self.rules, res_notes
        )
        for c in changes:
            if any(under(c["path"], f) or under(f, c["path"]) for f in forced):
                c["forcesReplace"] = True
        if isinstance(rule_of(new["type"], self.rules), ProviderDiffRule):
            reasons += [f"{f} cannot change in place (the provider's own diff)" for f in forced]
        else:
            reasons += [f"{f} changed" for f in forced]
        # A refusal fails the real preview: repeat it where the summary shows it.
        self.notes.extend(f"{new['name']}: {n}" for n in res_notes if n.startswith(REFUSED))
        extra: dict[str, Any] = {"oldUrn": old["urn"]} if old["urn"] != new["urn"] else {}
        if reasons:
            self.add(new, "replace", old, **extra, replaceReasons=reasons, changes=changes, notes=res_notes)
        elif extra:
            self.add(new, "rename", old, **extra, changes=changes, notes=res_notes)
        elif changes:
            self.add(new, "update", old, changes=changes, notes=res_notes)
        else:
            self.unchanged.append(_skeleton(new))

    def changes(self, old: dict[str, Any], new: dict[str, Any], res_notes: list[str]) -> list[dict[str, Any]]:
        """Changed input leaves, secrets included: a secret changed when its digest did."""
        old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
        changes = diff_inputs(old_in, new_in)
        od, nd = old.get("secretDigests"), new.get("secretDigests")
        if od is None or nd is None:
            if has_secret(old_in) or has_secret(new_in):
                self.digests_missing = True
                res_notes.append("secret values not compared (no secretDigests in the plan)")
            return changes
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
        return sorted(changes, key=lambda c: c["path"])

    def final_notes(self) -> list[str]:
        notes = list(self.notes)
        for (op, np_), n in sorted(self.default_moves.items()):
            notes.append(
                f"{n} resource(s) move from default provider {op} to {np_}: not a replacement by itself "
                "(the engine compares default providers by their configuration)"
            )
        if self.digests_missing:
            notes.append(
                "the plans carry no secretDigests: secret values could not be compared and are treated as unchanged"
            )
        return notes


def diff_plans(
    base: dict[str, Any] | None,
    head: dict[str, Any],
    rules: dict[str, Rule] | None = None,
) -> dict[str, Any]:
    """Compares two offline plan reports (the JSON of `mldiag plan STACK --format json`).

    `base` None (the stack does not exist at the base ref) makes everything an add (or an import). Returns
    {"project", "stack", "summary", "dangerous", "resources": [...changed...], "unchangedResources", "newPolicyViolations",
    "resolvedPolicyViolations", "headMandatoryViolations", "criticalPath", "pendingSteps", "notes"}.
    """
    base = base or {"resources": [], "policyViolations": [], "criticalPath": {"depth": 0, "urns": []}}
    if not is_mock_scheme(head):  # a base planned before the plan recorded the engine's URNs
        base = to_engine_urns(base)
    d = _Diff(base, head, default_rules() if rules is None else rules)
    d.run()
    order = {a: i for i, a in enumerate(ACTIONS)}
    d.changed.sort(key=lambda e: (order[e["action"]], e["type"], e["urn"]))
    new_v, resolved_v = compare_violations(base.get("policyViolations", []), head.get("policyViolations", []))
    mandatory = [v for v in head.get("policyViolations", []) if v.get("enforcementLevel") == "mandatory"]
    counts = Counter(e["action"] for e in d.changed)
    head_path = head.get("criticalPath") or {}
    # What this update leaves to the next one (the program's `pendingSteps` output), in the order it happens.
    pending = [str(p) for p in ((head.get("outputs") or {}).get("pendingSteps") or []) if p]
    return {
        "project": head.get("project"),
        "stack": head.get("stack"),
        "summary": {
            **{a: counts[a] for a in SUMMARY_ACTIONS},
            "unchanged": len(d.unchanged),
            "newPolicyViolations": len(new_v),
            "resolvedPolicyViolations": len(resolved_v),
            "mandatoryViolations": len(mandatory),
        },
        # The costly replaces and deletes (clusters, node pools, ...: danger.py), for the headline.
        "dangerous": dangerous(d.changed, d.old_by, d.new_by),
        "resources": d.changed,
        "unchangedResources": sorted(d.unchanged, key=lambda r: r["urn"]),
        "newPolicyViolations": new_v,
        "resolvedPolicyViolations": resolved_v,
        "headMandatoryViolations": mandatory,
        "criticalPath": {
            "base": (base.get("criticalPath") or {}).get("depth", 0),
            "head": head_path.get("depth", 0),
            "headUrns": head_path.get("urns", []),
        },
        "pendingSteps": pending,
        "notes": [f"order: {p}" for p in pending] + d.final_notes(),
    }


def exit_code(diff: dict[str, Any]) -> Exit:
    if "error" in diff:
        return EXIT_ERROR
    if diff["summary"]["mandatoryViolations"]:
        return EXIT_MANDATORY
    return Exit.INCOMPLETE if diff.get("unopenedEnvironments") else EXIT_OK
