"""The plan or diff as a graph: one box per target, its components and resources inside, dependency edges.

Built from the JSON alone (`mldiag plan STACK --format json` or a diff's JSON), so any plan file can be
drawn. Each resource carries its operation (create/import/update/rename/replace/delete/same), whether it
is on the critical path, and its policy findings. Unchanged resources collapse into one count per
component; past a size budget, whole unchanged targets collapse to one line each, then into one line, then
changed targets to one summary line each, and last the targets that still do not fit into a final line.
mldiag/report/graph_text.py writes it as Mermaid or Graphviz dot and measures the budget.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mldiag.common import is_provider

OPS = ("replace", "delete", "update", "rename", "import", "create", "same")  # most consequential first
DIFF_OPS = {"add": "create", **{a: a for a in ("import", "update", "rename", "replace", "delete")}}
SYMBOL = {
    "create": "+",
    "import": "=",
    "update": "~",
    "rename": "~>",
    "replace": "+-",
    "delete": "-",
    "same": "",
}
# Collapse levels, applied in turn until the text fits the budget.
LEVELS = ("components", "unchanged targets", "one unchanged line", "changed targets", "first targets")


@dataclass
class Node:
    id: str
    label: str
    op: str
    critical: bool = False
    findings: int = 0
    kind: str = ""  # the resource type's short name; "" for a collapsed count
    invented: bool = False  # a diff's change of this resource involves a value the offline plan invented


@dataclass
class Box:
    id: str
    label: str
    op: str
    findings: int = 0
    items: list[Node | Box] = field(default_factory=list)


@dataclass
class Graph:
    boxes: list[Box | Node]
    edges: list[tuple[str, str, bool]]  # (from, to, on the critical path): `to` waits for `from`
    notes: list[str]
    level: str = LEVELS[0]

    def counts(self) -> Counter[str]:
        return Counter(_walk_ops(self.boxes))


def _walk_ops(items: list[Node | Box]) -> list[str]:
    out: list[str] = []
    for i in items:
        out += _walk_ops(i.items) if isinstance(i, Box) else [i.op]
    return out


def kind(type_token: str) -> str:
    if is_provider(type_token):
        return f"provider {type_token.rsplit(':', 1)[-1]}"
    return type_token.rsplit(":", 1)[-1]


def _relative(name: str, parent_name: str) -> str:
    return name[len(parent_name) + 1 :] if parent_name and name.startswith(parent_name + "-") else name


def resources_of(report: dict[str, Any]) -> tuple[list[dict[str, Any]], Counter[str], list[str], list[str]]:
    """(resources with an "op", findings per URN, critical-path URNs, notes) of a plan or a diff."""
    if "summary" in report:  # an offline diff
        items = [
            {**e, "op": DIFF_OPS[e["action"]], "inventedChange": bool(e.get("invented"))}
            for e in report["resources"]
        ]
        items += [{**r, "op": "same"} for r in report.get("unchangedResources", [])]
        seen = {(v.get("policy"), v.get("urn"), v.get("message")): v for v in report["newPolicyViolations"]}
        for v in report.get("headMandatoryViolations", []):
            seen.setdefault((v.get("policy"), v.get("urn"), v.get("message")), v)
        findings = [v for v in seen.values()]
        critical = (report.get("criticalPath") or {}).get("headUrns", [])
    else:
        items = [{**r, "op": "import" if r.get("importId") else "create"} for r in report["resources"]]
        findings = report.get("policyViolations", [])
        critical = (report.get("criticalPath") or {}).get("urns", [])
    by_urn = Counter(v.get("urn") or "" for v in findings)
    notes = [f"{by_urn['']} stack-level policy finding(s)"] if by_urn.get("") else []
    return items, by_urn, critical, notes


class _Builder:
    def __init__(self, report: dict[str, Any]) -> None:
        self.items, self.findings, self.critical, self.notes = resources_of(report)
        self.by_urn = {r["urn"]: r for r in self.items}
        self.children: dict[str | None, list[dict[str, Any]]] = {}
        for r in self.items:
            parent = r.get("parent") if r.get("parent") in self.by_urn else None
            self.children.setdefault(parent, []).append(r)
        for kids in self.children.values():
            kids.sort(key=lambda r: (r["custom"], r["name"], r["urn"]))
        self.ops: dict[str, list[str]] = {}  # urn -> ops of the custom resources below (and of itself)
        for r in self.items:
            self._ops(r["urn"])
        self.rep: dict[str, str] = {}
        self.ancestors: dict[str, set[str]] = {}
        self.ids = 0

    def _ops(self, urn: str) -> list[str]:
        if urn not in self.ops:
            r = self.by_urn[urn]
            own = [r["op"]] if r["custom"] else []
            self.ops[urn] = own + [o for c in self.children.get(urn, []) for o in self._ops(c["urn"])]
        return self.ops[urn]

    def new_id(self, prefix: str) -> str:
        self.ids += 1
        return f"{prefix}{self.ids}"

    def findings_under(self, urn: str) -> int:
        return self.findings.get(urn, 0) + sum(
            self.findings_under(c["urn"]) for c in self.children.get(urn, [])
        )

    def claim(self, urn: str, node_id: str, inside: set[str]) -> None:
        """Every resource at or below urn is drawn as node_id."""
        self.rep[urn] = node_id
        self.ancestors[node_id] = inside
        for c in self.children.get(urn, []):
            self.claim(c["urn"], node_id, inside)

    def summary(self, r: dict[str, Any], label: str, inside: set[str]) -> Node:
        ops = Counter(self.ops[r["urn"]])
        node = Node(self.new_id("n"), label, _worst(ops), findings=self.findings_under(r["urn"]))
        node.label += ": " + ", ".join(f"{n} {'unchanged' if o == 'same' else o}" for o, n in _ranked(ops))
        self.claim(r["urn"], node.id, inside)
        return node

    def box(self, r: dict[str, Any], parent_name: str, inside: set[str]) -> Box:
        b = Box(self.new_id("b"), f"{_relative(r['name'], parent_name)} · {kind(r['type'])}", r["op"])
        b.findings = self.findings.get(r["urn"], 0)
        self.rep[r["urn"]], self.ancestors[b.id] = b.id, inside
        inner = inside | {b.id}
        same: list[dict[str, Any]] = []
        for c in self.children.get(r["urn"], []):
            if set(self.ops[c["urn"]]) <= {"same"} and c["op"] == "same":
                same.append(c)
            elif c["custom"] and not self.children.get(c["urn"]):
                n = Node(self.new_id("n"), _relative(c["name"], r["name"]), c["op"], kind=kind(c["type"]))
                n.findings = self.findings.get(c["urn"], 0)
                n.invented = bool(c.get("inventedChange"))
                self.rep[c["urn"]], self.ancestors[n.id] = n.id, inner
                b.items.append(n)
            else:
                b.items.append(self.box(c, r["name"], inner))
        if same:
            count = sum(len(self.ops[c["urn"]]) for c in same)
            n = Node(
                self.new_id("n"),
                f"{count} unchanged" if count else f"{len(same)} unchanged component(s)",
                "same",
            )
            n.findings = sum(self.findings_under(c["urn"]) for c in same)
            b.items.append(n)
            for c in same:
                self.claim(c["urn"], n.id, inner)
        return b

    def build(self, level: int, keep: int | None = None) -> Graph:
        self.rep, self.ancestors, self.ids = {}, {}, 0
        tops = sorted(self.children.get(None, []), key=self._target_order)
        boxes: list[Box | Node] = []
        unchanged = [t for t in tops if set(self.ops[t["urn"]]) <= {"same"}]
        shown = [t for t in tops if t not in unchanged or level < 2]
        if keep is not None:
            shown, rest = shown[:keep], shown[keep:]
        else:
            rest = []
        for t in shown:
            label = f"{t['name']} · {kind(t['type'])}"
            if level >= 3 or (level >= 1 and t in unchanged):
                boxes.append(self.summary(t, label, set()))
            elif t["custom"] and not self.children.get(t["urn"]):
                n = Node(self.new_id("n"), t["name"], t["op"], findings=self.findings.get(t["urn"], 0))
                n.kind = kind(t["type"])
                n.invented = bool(t.get("inventedChange"))
                self.rep[t["urn"]], self.ancestors[n.id] = n.id, set()
                boxes.append(n)
            else:
                boxes.append(self.box(t, "", set()))
        for group, what in ((unchanged if level >= 2 else [], "unchanged targets"), (rest, "more targets")):
            if group:
                n = Node(self.new_id("n"), f"{len(group)} {what}", "same")
                ops = Counter(o for t in group for o in self.ops[t["urn"]])
                n.op = _worst(ops)
                n.label += ": " + ", ".join(
                    f"{c} {'unchanged' if o == 'same' else o}" for o, c in _ranked(ops)
                )
                n.findings = sum(self.findings_under(t["urn"]) for t in group)
                for t in group:
                    self.claim(t["urn"], n.id, set())
                boxes.append(n)
        return Graph(boxes, self.edges(_ops_by_id(boxes)), list(self.notes), LEVELS[level])

    def _target_order(self, r: dict[str, Any]) -> tuple[int, str, str]:
        return (OPS.index(_worst(Counter(self.ops[r["urn"]]))), r["name"], r["urn"])

    def edges(self, ops_of: dict[str, str]) -> list[tuple[str, str, bool]]:
        """Dependency and provider edges between what is drawn; none between two unchanged things."""
        steps = list(zip(self.critical, self.critical[1:], strict=False))
        critical = set(steps)
        found: dict[tuple[str, str], bool] = {}
        for r in self.items:
            for dep in [*(r.get("dependencies") or []), r.get("provider")]:
                a, b = self.rep.get(dep or ""), self.rep.get(r["urn"])
                if a is None or b is None or a == b or (dep, r["urn"]) in critical:
                    continue
                if (
                    ops_of.get(a) == ops_of.get(b) == "same"
                    or a in self.ancestors[b]
                    or b in self.ancestors[a]
                ):
                    continue
                found.setdefault((a, b), False)
        for dep, urn in steps:
            a, b = self.rep.get(dep), self.rep.get(urn)
            if a and b and a != b and a not in self.ancestors[b] and b not in self.ancestors[a]:
                found[(a, b)] = True
        return [(a, b, crit) for (a, b), crit in found.items()]

    def mark_critical(self, graph: Graph) -> None:
        on_path = {self.rep[u] for u in self.critical if u in self.rep}
        for n in nodes(graph.boxes):
            n.critical = n.id in on_path


def _ops_by_id(items: list[Node | Box]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i in items:
        if isinstance(i, Box):
            out[i.id] = _worst(Counter([i.op, *_walk_ops(i.items)]))
            out |= _ops_by_id(i.items)
        else:
            out[i.id] = i.op
    return out


def nodes(items: list[Node | Box]) -> list[Node]:
    out: list[Node] = []
    for i in items:
        out += nodes(i.items) if isinstance(i, Box) else [i]
    return out


def _worst(ops: Counter[str]) -> str:
    return next((o for o in OPS if ops.get(o)), "same")


def _ranked(ops: Counter[str]) -> list[tuple[str, int]]:
    return [(o, ops[o]) for o in OPS if ops.get(o)]


def build(report: dict[str, Any], level: int = 0, keep: int | None = None) -> Graph:
    """The graph at a collapse level (index into LEVELS); `keep` limits the targets shown (last level)."""
    builder = _Builder(report)
    graph = builder.build(level, keep)
    builder.mark_critical(graph)
    return graph
