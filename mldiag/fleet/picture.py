"""The rollout plan as a picture: waves (boxes of clusters), each followed by its gate, in order.

`mermaid(plan)` is a `flowchart LR` for a Markdown comment (```mermaid), `dot(plan)` the same for Graphviz.
With the clusters' states (`mldiag fleet status`), each cluster is coloured by where it is. A wave shows at
most MAX_SHOWN clusters and then one line for the others, so a fleet of a thousand clusters stays a
picture GitHub renders (Mermaid's limits: 50,000 characters, 500 edges).

`comment_section(project_dir, base)` is the PR comment's part: the plan of every fleet file that the pull
request changes, or whose environment stack file it changes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from mldiag.fleet.planner import Member, Plan, Wave

MAX_SHOWN = 12
FLEET_DIR = "fleet"
STATE_STYLE = {
    "pending": ("#eeeeee", "#9e9e9e"),
    "outdated": ("#fff1b8", "#b38f00"),
    "deploying": ("#d6e6ff", "#2f6fd0"),
    "failed": ("#ffd4d4", "#c62828"),
    "verified": ("#d3f5d3", "#2a8a2a"),
    "soaked": ("#d3f5d3", "#2a8a2a"),
    "approved": ("#d3f5d3", "#2a8a2a"),
}
GATE_STYLE = ("#ffffff", "#7a4fc9")
_MERMAID_ESCAPES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;"}


def _m(text: str) -> str:
    return "".join(_MERMAID_ESCAPES.get(ch, ch) for ch in text)


def _d(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _wave_title(i: int, w: Wave) -> str:
    return f"wave {i + 1}: {w.name} ({len(w.members)} cluster(s), at most {w.max_parallel} at a time)"


def _shown(w: Wave) -> tuple[list[Member], int]:
    if len(w.members) <= MAX_SHOWN:
        return list(w.members), 0
    return list(w.members[: MAX_SHOWN - 1]), len(w.members) - (MAX_SHOWN - 1)


def _gate_lines(w: Wave) -> list[str]:
    return [f"gate of {w.name}", *w.describe_gate().split(", ")]


def mermaid(plan: Plan, states: dict[str, str] | None = None) -> str:
    """The plan as a Mermaid flowchart (no ``` fence); `states`: member stack -> state."""
    out = ["flowchart LR", f'  start(["{_m(plan.environment_stack)}: {len(plan.members)} cluster(s)"])']
    classes: dict[str, list[str]] = {}
    prev = "start"
    for i, w in enumerate(plan.waves):
        out.append(f'  subgraph w{i}["{_m(_wave_title(i, w))}"]')
        out.append("    direction TB")
        shown, more = _shown(w)
        for j, m in enumerate(shown):
            out.append(f'    w{i}c{j}["{_m(m.ref)}<br/>{_m(m.stack)}"]')
            if states is not None:
                classes.setdefault(states.get(m.stack, "pending"), []).append(f"w{i}c{j}")
        if more:
            out.append(f'    w{i}more["... and {more} more"]')
        out.append("  end")
        gate = "<br/>".join(_m(t) for t in _gate_lines(w))
        out.append(f'  g{i}{{{{"{gate}"}}}}')
        classes.setdefault("gate", []).append(f"g{i}")
        out.append(f"  {prev} --> w{i}")
        out.append(f"  w{i} --> g{i}")
        prev = f"g{i}"
    out.append(f'  done(["rolled out"])\n  {prev} --> done')
    for name, ids in sorted(classes.items()):
        out.append(f"  class {','.join(ids)} {name}")
    for state, (fill, stroke) in STATE_STYLE.items():
        out.append(f"  classDef {state} fill:{fill},stroke:{stroke},color:#111")
    out.append(f"  classDef gate fill:{GATE_STYLE[0]},stroke:{GATE_STYLE[1]},color:#111")
    return "\n".join(out) + "\n"


def mermaid_block(plan: Plan, states: dict[str, str] | None = None) -> str:
    return f"```mermaid\n{mermaid(plan, states)}```\n"


def dot(plan: Plan, states: dict[str, str] | None = None) -> str:
    """The same picture for Graphviz (`dot -Tsvg`)."""
    out = [
        f'digraph "{_d(plan.environment_stack)} rollout" {{',
        "  rankdir=LR; compound=true;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, fillcolor="#ffffff"];',
        f'  start [shape=oval, label="{_d(plan.environment_stack)}: {len(plan.members)} cluster(s)"];',
    ]
    prev = "start"
    for i, w in enumerate(plan.waves):
        out.append(f"  subgraph cluster_w{i} {{")
        out.append(f'    label="{_d(_wave_title(i, w))}"; style="rounded";')
        shown, more = _shown(w)
        for j, m in enumerate(shown):
            fill, stroke = (
                STATE_STYLE[states.get(m.stack, "pending")] if states is not None else ("#ffffff", "#555555")
            )
            out.append(
                f'    w{i}c{j} [label="{_d(m.ref)}\\n{_d(m.stack)}", fillcolor="{fill}", color="{stroke}"];'
            )
        if more:
            out.append(f'    w{i}more [label="... and {more} more"];')
        out.append("  }")
        first = f"w{i}c0"
        out.append(f"  {prev} -> {first} [lhead=cluster_w{i}];")
        label = "\\n".join(_d(t) for t in _gate_lines(w))
        out.append(f'  g{i} [shape=hexagon, label="{label}", color="{GATE_STYLE[1]}"];')
        out.append(f"  {first} -> g{i} [ltail=cluster_w{i}];")
        prev = f"g{i}"
    out.append('  done [shape=oval, label="rolled out"];')
    out.append(f"  {prev} -> done;")
    out.append("}")
    return "\n".join(out) + "\n"


def _git(project_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(project_dir), *args], capture_output=True, text=True, timeout=120)


def changed_fleets(project_dir: Path, base: str) -> list[Path]:
    """Fleet files the working tree changes against `base`, or whose environment stack file it changes."""
    from mldiag.fleet.model import FleetError, read
    from mldiag.fleet.planner import EnvironmentError, environment_stack_file

    files = sorted((project_dir / FLEET_DIR).glob("*.yaml"))
    out = []
    for f in files:
        paths = [str(f.relative_to(project_dir))]
        try:
            env_file = environment_stack_file(project_dir, read(f).environment)
            paths.append(str(env_file.relative_to(project_dir)))
        except (FleetError, EnvironmentError, ValueError):
            pass  # an unreadable fleet file: only its own change counts
        if _git(project_dir, "diff", "--quiet", base, "--", *paths).returncode != 0:
            out.append(f)
    return out


def comment_section(project_dir: Path, base: str, max_chars: int | None = None) -> str:
    """Markdown: the rollout plan of each changed fleet file (its problems when it is invalid); "" for none.
    Longer than `max_chars`, the pictures are left out."""
    from mldiag.fleet.model import FleetError
    from mldiag.fleet.planner import EnvironmentError, load

    parts, short = [], []
    for f in changed_fleets(project_dir, base):
        rel = f.relative_to(project_dir)
        try:
            plan = load(f, project_dir)
        except (FleetError, EnvironmentError) as e:
            lines = "\n".join(f"- {p}" for p in getattr(e, "problems", [str(e)]))
            parts.append(f"### Fleet `{rel}`: invalid\n\n{lines}\n")
            short.append(parts[-1])
            continue
        waves = " → ".join(f"{w.name} ({len(w.members)})" for w in plan.waves)
        heading = f"### Fleet `{rel}`: {plan.environment_stack} in {len(plan.waves)} wave(s): {waves}\n\n"
        parts.append(heading + mermaid_block(plan))
        short.append(heading + f"`mldiag fleet plan {rel} --format mermaid` draws it.\n")
    if not parts:
        return ""
    head = "## Fleet rollouts changed by this pull request\n\n"
    text = head + "\n".join(parts)
    if max_chars is not None and len(text) > max_chars:
        text = head + "\n".join(short)
    return text[:max_chars] if max_chars is not None else text
