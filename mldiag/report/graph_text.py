"""Writes a plan graph (mldiag/report/graph.py) as a Mermaid flowchart or Graphviz dot, within a size budget.

GitHub renders ```mermaid blocks in comments with Mermaid's defaults: at most 50,000 characters of diagram
text and 500 edges. `mermaid_block` collapses the graph level by level until it fits MERMAID_BUDGET (or a
smaller share of the comment) and MAX_EDGES.
"""

from __future__ import annotations

from typing import Any

from mldiag.report.graph import LEVELS, OPS, SYMBOL, Box, Graph, Node, build

MERMAID_BUDGET = 20_000  # characters of one diagram (Mermaid's maxTextSize is 50,000)
MAX_EDGES = 300  # Mermaid's maxEdges is 500
FILL = {
    "create": "#d3f5d3",
    "import": "#d6e6ff",
    "update": "#fff1b8",
    "rename": "#eadcff",
    "replace": "#ffd8b0",
    "delete": "#ffd4d4",
    "same": "#eeeeee",
}
STROKE = {
    "create": "#2a8a2a",
    "import": "#2f6fd0",
    "update": "#b38f00",
    "rename": "#7a4fc9",
    "replace": "#d06a00",
    "delete": "#c62828",
    "same": "#9e9e9e",
}
CRITICAL = "#111111"
FINDING = "#d00000"
# Under a changed resource whose change involves a value the offline plan invented (an endpoint, an id).
INVENTED_CHANGE = "(offline: invented value)"
_MERMAID_ESCAPES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;"}


def _m(text: str) -> str:
    return "".join(_MERMAID_ESCAPES.get(ch, ch) for ch in text)


def node_text(n: Node) -> list[str]:
    """Label lines of a node: operation symbol and name, the resource kind, findings."""
    head = f"{SYMBOL[n.op]} {n.label}".strip()
    lines = [head] + ([n.kind] if n.kind else [])
    if n.findings:
        lines.append(f"⚠ {n.findings} policy finding(s)")
    if n.invented:
        lines.append(INVENTED_CHANGE)
    return lines


def box_text(b: Box) -> str:
    return f"{SYMBOL[b.op]} {b.label}".strip() + (f" ⚠ {b.findings}" if b.findings else "")


def mermaid(graph: Graph) -> str:
    """A `flowchart LR` of the graph, its legend and notes (without the ``` fence)."""
    out = ["flowchart LR"]
    classes: dict[str, list[str]] = {}

    def emit(items: list[Node | Box], indent: str) -> None:
        for i in items:
            if isinstance(i, Box):
                out.append(f'{indent}subgraph {i.id}["{_m(box_text(i))}"]')
                emit(i.items, indent + "  ")
                out.append(f"{indent}end")
                classes.setdefault(f"box_{i.op}", []).append(i.id)
                continue
            out.append(f'{indent}{i.id}["{"<br/>".join(_m(t) for t in node_text(i))}"]')
            classes.setdefault(i.op, []).append(i.id)
            if i.critical:
                classes.setdefault("critical", []).append(i.id)
            if i.findings:
                classes.setdefault("finding", []).append(i.id)

    emit(graph.boxes, "  ")
    for a, b, crit in graph.edges:
        out.append(f"  {a} {'==>' if crit else '-->'} {b}")
    out.append('  subgraph legend["Legend"]')
    for op in OPS:
        out.append(f'    legend_{op}["{_m(f"{SYMBOL[op]} {op}".strip())}"]:::{op}')
    out.append('    legend_critical["critical path"]:::critical')
    out.append('    legend_finding["⚠ policy finding"]:::finding')
    out.append("  end")
    for note in graph.notes:
        out.append(f"  %% {note}")
    for name, ids in sorted(classes.items()):
        out.append(f"  class {','.join(ids)} {name}")
    for op in OPS:
        out.append(f"  classDef {op} fill:{FILL[op]},stroke:{STROKE[op]},color:#111")
        out.append(f"  classDef box_{op} fill:#ffffff,stroke:{STROKE[op]}")
    out.append(f"  classDef critical stroke:{CRITICAL},stroke-width:4px")
    out.append(f"  classDef finding stroke:{FINDING},stroke-width:3px,stroke-dasharray:5 3")
    return "\n".join(out) + "\n"


def edge_count(graph: Graph) -> int:
    return len(graph.edges)


def fitted(
    report: dict[str, Any], budget: int = MERMAID_BUDGET, max_edges: int = MAX_EDGES
) -> tuple[Graph, str]:
    """The least collapsed graph whose Mermaid text fits the budget, and that text."""
    for level in range(len(LEVELS) - 1):
        graph = build(report, level)
        text = mermaid(graph)
        if len(text) <= budget and edge_count(graph) <= max_edges:
            return graph, text
    # Last level: as many targets as fit (binary search), the rest in one line.
    lo, hi = 0, len(build(report, len(LEVELS) - 1).boxes)
    best = build(report, len(LEVELS) - 1, 0)
    while lo <= hi:
        mid = (lo + hi) // 2
        graph = build(report, len(LEVELS) - 1, mid)
        if len(mermaid(graph)) <= budget and edge_count(graph) <= max_edges:
            best, lo = graph, mid + 1
        else:
            hi = mid - 1
    return best, mermaid(best)


def mermaid_block(report: dict[str, Any], budget: int = MERMAID_BUDGET) -> str:
    """A fenced ```mermaid block for a Markdown comment, with a line saying how much was collapsed."""
    fence_and_note = 300
    graph, text = fitted(report, max(budget - fence_and_note, 2_000))
    counts = graph.counts()
    said = ", ".join(f"{n} {op}" for op in OPS if (n := counts.get(op)))
    note = f"Graph: {said or 'no resources'}; unchanged resources collapsed per component"
    if graph.level != LEVELS[0]:
        note += f"; collapsed further to fit ({graph.level})"
    return f"```mermaid\n{text}```\n\n<sub>{note}. Bold edges: the critical path.</sub>\n"


def _d(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def dot(graph: Graph, name: str = "plan") -> str:
    """The same graph for Graphviz (`dot -Tsvg`): clusters for boxes, filled nodes, bold critical edges."""
    out = [
        f'digraph "{_d(name)}" {{',
        "  rankdir=LR; compound=true;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '  edge [color="#777777"];',
    ]
    anchors: dict[str, str] = {}

    def emit(items: list[Node | Box], indent: str) -> None:
        for i in items:
            if isinstance(i, Box):
                out.append(f"{indent}subgraph cluster_{i.id} {{")
                out.append(f'{indent}  label="{_d(box_text(i))}"; color="{STROKE[i.op]}"; style="rounded";')
                anchors[i.id] = f"{i.id}_anchor"
                out.append(f'{indent}  {i.id}_anchor [shape=point, style=invis, label=""];')
                emit(i.items, indent + "  ")
                out.append(f"{indent}}}")
                continue
            attrs = f'fillcolor="{FILL[i.op]}", color="{STROKE[i.op]}"'
            if i.critical:
                attrs += f', penwidth=3, color="{CRITICAL}"'
            if i.findings:
                attrs += f', penwidth=3, color="{FINDING}", style="rounded,filled,dashed"'
            out.append(f'{indent}{i.id} [label="{_d(chr(10).join(node_text(i)))}", {attrs}];')

    emit(graph.boxes, "  ")
    for a, b, crit in graph.edges:
        attrs = [f"ltail=cluster_{a}"] if a in anchors else []
        attrs += [f"lhead=cluster_{b}"] if b in anchors else []
        if crit:
            attrs += ["penwidth=3", f'color="{CRITICAL}"']
        out.append(
            f"  {anchors.get(a, a)} -> {anchors.get(b, b)}{' [' + ', '.join(attrs) + ']' if attrs else ''};"
        )
    out.append('  subgraph cluster_legend { label="Legend";')
    for op in OPS:
        label = _d(f"{SYMBOL[op]} {op}".strip())
        out.append(f'    legend_{op} [label="{label}", fillcolor="{FILL[op]}", color="{STROKE[op]}"];')
    out.append(
        f'    legend_critical [label="critical path", fillcolor="#ffffff", penwidth=3, color="{CRITICAL}"];'
    )
    out.append(
        f'    legend_finding [label="policy finding", fillcolor="#ffffff", penwidth=3, color="{FINDING}",'
        ' style="rounded,filled,dashed"];'
    )
    out.append("  }")
    out += [f"  // {n}" for n in graph.notes]
    out.append("}")
    return "\n".join(out) + "\n"


def render_dot(report: dict[str, Any]) -> str:
    return dot(build(report), f"{report.get('project', 'plan')}/{report.get('stack', '')}")
