"""The resources whose replacement or deletion costs most, as data: the diff's headline names each one.

A replaced cluster or node pool drains and recreates nodes (and the jobs on them); an Azure ML extension or a
Model Development Cluster is reinstalled or rebuilt; deleting a namespace deletes everything in it; the
adopted-GKE flag resource turns managed ML diagnostics off when it goes. Only the namespaces the program
creates to hold workloads count (workload opt-in, Diagon, gke-mldiagnostics): a NamespacePatch only labels
a namespace someone else owns.

The types are the kinds' own (each entry of program/kinds declares its `costly`); `classify` is the only
place that reads them.
"""

from __future__ import annotations

from typing import Any

from mldiag.diff.inputs import flatten
from mldiag.diff.rules import unversioned
from program.costly import Costly


def _costly() -> tuple[Costly, ...]:
    """Every kind's costly types (program/kinds: each entry declares its own), each once: a kind's own
    first, in its entry's order, then those several kinds share (the in-cluster namespaces), so the headline
    names a cloud resource before a namespace."""
    from program.kinds.table import KINDS

    declared = [c for kind in KINDS for c in kind.costly]
    unique = list(dict.fromkeys(declared))
    return tuple(sorted(unique, key=lambda c: declared.count(c) > 1))


DANGEROUS: tuple[Costly, ...] = _costly()
DANGER_ACTIONS = ("replace", "delete")

_BY_TYPE: dict[str, list[Costly]] = {}
for _c in DANGEROUS:
    _BY_TYPE.setdefault(unversioned(_c.type), []).append(_c)


def parent_type(urn: str) -> str:
    """The type of a resource's parent component, from its URN's type chain ("" at the top)."""
    parts = urn.split("::")
    chain = parts[2].split("$") if len(parts) >= 4 else []
    return chain[-2] if len(chain) >= 2 else ""


def classify(type_token: str, urn: str) -> Costly | None:
    """The table's entry for a resource, or None when its replacement or deletion is not among the costly."""
    for c in _BY_TYPE.get(unversioned(type_token), ()):
        if not c.parents or parent_type(urn) in c.parents:
            return c
    return None


def _target(urn: str, by_urn: dict[str, dict[str, Any]]) -> str:
    """The name of the top-level component a resource belongs to (its target), or ""."""
    seen: set[str] = set()
    cur = by_urn.get(urn)
    name = ""
    while cur is not None and cur["urn"] not in seen:
        seen.add(cur["urn"])
        name = cur["name"]
        cur = by_urn.get(cur.get("parent") or "")
    return name if name and (by_urn.get(urn) or {}).get("name") != name else ""


def dangerous(
    changed: list[dict[str, Any]], old_by: dict[str, dict[str, Any]], new_by: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The costly replaces and deletes among changed resources (diff entries), in their order:
    [{"action", "kind", "name", "target", "urn", "protect"?, "retainOnDelete"?}]."""
    out: list[dict[str, Any]] = []
    for e in changed:
        if e["action"] not in DANGER_ACTIONS:
            continue
        c = classify(e["type"], e["urn"])
        if c is None:
            continue
        side = old_by if e["action"] == "delete" else new_by
        r = side.get(e["urn"]) or {}
        name = flatten(r.get("inputs") or {}).get(c.name_path) if c.name_path else None
        item: dict[str, Any] = {
            "action": e["action"],
            "kind": c.one,
            "name": name if isinstance(name, str) and name else e["name"],
            "target": _target(e["urn"], side) if c.name_path else "",
            "urn": e["urn"],
        }
        # What the deployed one has (a replace's old one): a protected one fails the update, a retained
        # one stays in the cloud, out of Pulumi's hands.
        was = old_by.get(e.get("oldUrn") or e["urn"]) or {}
        for flag in ("protect", "retainOnDelete"):
            if was.get(flag):
                item[flag] = True
        out.append(item)
    return out


def from_entries(diff: dict[str, Any]) -> list[dict[str, Any]]:
    """The costly replaces and deletes of a diff, also of one saved before diffs listed them."""
    if isinstance(diff.get("dangerous"), list):
        return diff["dangerous"]
    return [
        {"action": e["action"], "kind": c.one, "name": e["name"], "target": "", "urn": e["urn"]}
        for e in diff.get("resources") or []
        if e["action"] in DANGER_ACTIONS and (c := classify(e["type"], e["urn"])) is not None
    ]


def plural(kind: str) -> str:
    for c in DANGEROUS:
        if c.one == kind:
            return c.many
    return kind + "s"


def kinds_order() -> list[str]:
    return list(dict.fromkeys(c.one for c in DANGEROUS))
