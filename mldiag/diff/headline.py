"""The first line of a stack's diff: what it costs, before anything else of the stack.

    ⚠️ dev: replaces GKE cluster gke-dev-train-cluster, 2 node pools (gke-dev-train-pool-l4,
        gke-dev-train-pool-system); deletes namespace ml-dev in gke-dev-train — 4 replaces, 1 delete
    ❌ staging: blocked by 1 mandatory policy violation — 2 updates
    ✅ prod: no changes (61 resources unchanged)

Every costly replace or delete (danger.py) is named, up to NAMES_SHOWN per kind (then `+N more`), followed
by the count of all replaces and deletes and the other changes. A blocked plan says so on the same line.
"""

from __future__ import annotations

from typing import Any

from mldiag.common import code, md
from mldiag.diff.danger import DANGER_ACTIONS, from_entries, kinds_order, plural

NAMES_SHOWN = 5
COUNT_ORDER = ("replace", "delete", "update", "rename", "import", "add")
_NOUN = {a: (a, a + "s") for a in COUNT_ORDER}
_VERB = {"replace": "replaces", "delete": "deletes"}


def counted(n: int, action: str) -> str:
    return f"{n} {_NOUN[action][n != 1]}"


def is_quiet(diff: dict[str, Any]) -> bool:
    """Nothing to review: no resource change, no new or resolved finding, nothing blocking (one line)."""
    if "error" in diff:
        return False
    s = diff["summary"]
    return not (
        diff["resources"]
        or s["newPolicyViolations"]
        or s["resolvedPolicyViolations"]
        or s["mandatoryViolations"]
    )


def _blocked(m: int) -> str:
    return f"blocked by {m} mandatory policy violation{'s' if m != 1 else ''}"


def headline(diff: dict[str, Any], markdown: bool = False) -> str:
    """One line (Markdown: HTML-escaped, names as <code>) saying what the stack's change costs."""

    def name(text: Any) -> str:
        return code(text) if markdown else str(text)

    def plain(text: str) -> str:
        return md(text) if markdown else text

    stack = name(diff.get("stack"))
    if "error" in diff:
        return f"❌ {stack}: the offline plan failed"
    s = diff["summary"]
    m = s["mandatoryViolations"]
    changes = [counted(s.get(a, 0), a) for a in COUNT_ORDER if s.get(a)]
    items = from_entries(diff)
    if items:
        phrases = []
        for action in DANGER_ACTIONS:
            groups = []
            for kind in kinds_order():
                these = [i for i in items if i["action"] == action and i["kind"] == kind]
                if not these:
                    continue
                labels = [_label(i, name, plain) for i in these[:NAMES_SHOWN]]
                if len(these) > NAMES_SHOWN:
                    labels.append(f"+{len(these) - NAMES_SHOWN} more")
                if len(these) == 1:
                    groups.append(f"{plain(kind)} {labels[0]}")
                else:
                    groups.append(f"{len(these)} {plain(plural(kind))} ({', '.join(labels)})")
            if groups:
                phrases.append(f"{_VERB[action]} {', '.join(groups)}")
        counts = [counted(s.get(a, 0), a) for a in DANGER_ACTIONS]
        counts += [counted(s[a], a) for a in COUNT_ORDER if a not in DANGER_ACTIONS and s.get(a)]
        line = f"⚠️ {stack}: {'; '.join(phrases)} — {', '.join(counts)}"
        return line + (f"; ❌ {_blocked(m)}" if m else "")
    if not diff["resources"]:
        n = s["unchanged"]
        text = f"no changes ({n} resource{'s' if n != 1 else ''} unchanged)"
        if m:
            return f"❌ {stack}: {text}, but {_blocked(m)}"
        if is_quiet(diff):
            return f"✅ {stack}: {text}"
        found = s["newPolicyViolations"]
        gone = s["resolvedPolicyViolations"]
        return (
            f"{stack}: no resource changes; {found} new policy finding{'s' if found != 1 else ''}, "
            f"{gone} resolved"
        )
    if m:
        return f"❌ {stack}: {_blocked(m)} — {', '.join(changes)}"
    return f"{stack}: {', '.join(changes)}"


def _label(item: dict[str, Any], name: Any, plain: Any) -> str:
    out = name(item["name"])
    if item.get("target"):
        out += f" {plain('in')} {name(item['target'])}"
    if item.get("protect"):
        out += plain(" (protected: the update fails)")
    elif item.get("retainOnDelete"):
        out += plain(" (retainOnDelete: the old one stays in the cloud)")
    return out
