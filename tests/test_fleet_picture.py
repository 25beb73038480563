"""The rollout plan as a picture (mldiag/fleet/picture.py): waves -> clusters -> gates as Mermaid and dot, and
the PR comment's section for the fleet files a pull request changes."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mldiag.common import ROOT
from mldiag.diff.cli import COMMENT_MARKER, render_all
from mldiag.fleet import model, picture
from mldiag.fleet.planner import EnvTarget, Plan, resolve

SMALL = """\
environment: lab
waves:
  - {name: canary, targets: [a], soak: 10m}
  - name: rest
    targets: [b, gkeClusters/c]
    maxParallel: 2
    failureTolerance: 50%
    gate: {verifyWait: 5m, approval: true}
"""
TARGETS = [
    EnvTarget("kubernetesClusters", "a", "k8s", {}),
    EnvTarget("kubernetesClusters", "b", "k8s", {}),
    EnvTarget("gkeClusters", "c", "gke", {}),
]
CLASS_DEFS = """\
  classDef pending fill:#eeeeee,stroke:#9e9e9e,color:#111
  classDef outdated fill:#fff1b8,stroke:#b38f00,color:#111
  classDef deploying fill:#d6e6ff,stroke:#2f6fd0,color:#111
  classDef failed fill:#ffd4d4,stroke:#c62828,color:#111
  classDef verified fill:#d3f5d3,stroke:#2a8a2a,color:#111
  classDef soaked fill:#d3f5d3,stroke:#2a8a2a,color:#111
  classDef approved fill:#d3f5d3,stroke:#2a8a2a,color:#111
  classDef gate fill:#ffffff,stroke:#7a4fc9,color:#111
"""


def plan_of(tmp_path: Path, text: str, targets: list[EnvTarget]) -> Plan:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return resolve(model.read(path), "dev", targets)


def test_mermaid_of_a_small_fleet_with_the_clusters_states(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, SMALL, TARGETS)
    states = {"lab.k8s-a": "verified", "lab.k8s-b": "failed"}
    assert picture.mermaid(plan, states) == (
        """\
flowchart LR
  start(["lab: 3 cluster(s)"])
  subgraph w0["wave 1: canary (1 cluster(s), at most 1 at a time)"]
    direction TB
    w0c0["kubernetesClusters/a<br/>lab.k8s-a"]
  end
  g0{{"gate of canary<br/>verify (wait 10m)<br/>tolerate 0 failed<br/>soak 10m"}}
  start --> w0
  w0 --> g0
  subgraph w1["wave 2: rest (2 cluster(s), at most 2 at a time)"]
    direction TB
    w1c0["kubernetesClusters/b<br/>lab.k8s-b"]
    w1c1["gkeClusters/c<br/>lab.gke-c"]
  end
  g1{{"gate of rest<br/>verify (wait 5m)<br/>tolerate 1 failed (50%)<br/>approval"}}
  g0 --> w1
  w1 --> g1
  done(["rolled out"])
  g1 --> done
  class w1c0 failed
  class g0,g1 gate
  class w1c1 pending
  class w0c0 verified
"""
        + CLASS_DEFS
    )
    # without states (the plan), only the gates have a class
    assert "\n  class g0,g1 gate\n  classDef pending" in picture.mermaid(plan)


def test_dot_of_the_same_fleet(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, SMALL, TARGETS)
    assert picture.dot(plan) == (
        """\
digraph "lab rollout" {
  rankdir=LR; compound=true;
  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, fillcolor="#ffffff"];
  start [shape=oval, label="lab: 3 cluster(s)"];
  subgraph cluster_w0 {
    label="wave 1: canary (1 cluster(s), at most 1 at a time)"; style="rounded";
    w0c0 [label="kubernetesClusters/a\\nlab.k8s-a", fillcolor="#ffffff", color="#555555"];
  }
  start -> w0c0 [lhead=cluster_w0];
  g0 [shape=hexagon, label="gate of canary\\nverify (wait 10m)\\ntolerate 0 failed\\nsoak 10m", color="#7a4fc9"];
  w0c0 -> g0 [ltail=cluster_w0];
  subgraph cluster_w1 {
    label="wave 2: rest (2 cluster(s), at most 2 at a time)"; style="rounded";
    w1c0 [label="kubernetesClusters/b\\nlab.k8s-b", fillcolor="#ffffff", color="#555555"];
    w1c1 [label="gkeClusters/c\\nlab.gke-c", fillcolor="#ffffff", color="#555555"];
  }
  g0 -> w1c0 [lhead=cluster_w1];
  g1 [shape=hexagon, label="gate of rest\\nverify (wait 5m)\\ntolerate 1 failed (50%)\\napproval", color="#7a4fc9"];
  w1c0 -> g1 [ltail=cluster_w1];
  done [shape=oval, label="rolled out"];
  g1 -> done;
}
"""
    )


def big_plan(tmp_path: Path, n: int) -> Plan:
    targets = [EnvTarget("kubernetesClusters", f"c{i:04d}", "k8s", {}) for i in range(n)]
    waves = "".join(
        f"  - {{name: w{w}, targets: [{', '.join(t.name for t in targets[w::10])}], maxParallel: 20}}\n"
        for w in range(10)
    )
    return plan_of(tmp_path, f"environment: big\nwaves:\n{waves}", targets)


def test_a_large_wave_shows_its_first_clusters_and_counts_the_rest(tmp_path: Path) -> None:
    plan = big_plan(tmp_path, 1000)
    text = picture.mermaid(plan)
    assert text.count('    w0more["... and 89 more"]') == 1
    assert 'w0c10["kubernetesClusters/c0100<br/>big.k8s-c0100"]' in text and "w0c11[" not in text
    assert len(text) < 50_000 and text.count("-->") < 500  # what GitHub's Mermaid renders
    assert '    w9more [label="... and 89 more"];' in picture.dot(plan)


def test_mermaid_parses_the_pictures(
    tmp_path: Path, mermaid_parse: Callable[[list[str]], list[dict[str, Any]]]
) -> None:
    small = plan_of(tmp_path, SMALL, TARGETS)
    sources = [
        picture.mermaid(small),
        picture.mermaid(small, {"lab.k8s-a": "deploying"}),
        picture.mermaid(big_plan(tmp_path, 1000)),
    ]
    parsed = mermaid_parse(sources)
    assert all(p["ok"] for p in parsed), parsed
    assert (parsed[0]["subgraphs"], parsed[0]["edges"]) == (2, 5)
    assert parsed[2]["subgraphs"] == 10


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
        timeout=60,
    )


def test_the_pr_comment_shows_the_fleets_a_pull_request_changes(tmp_path: Path) -> None:
    for rel in ("Pulumi.yaml", "stacks/Pulumi.prod.yaml", "stacks/Pulumi.dev.yaml", "fleet/prod.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    assert picture.comment_section(tmp_path, "HEAD") == ""
    (tmp_path / "stacks" / "Pulumi.dev.yaml").write_text(
        (tmp_path / "stacks" / "Pulumi.dev.yaml").read_text() + "\n"
    )
    assert picture.comment_section(tmp_path, "HEAD") == ""  # not prod's stack file
    fleet = tmp_path / "fleet" / "prod.yaml"
    fleet.write_text(fleet.read_text().replace("  - name: last\n", "  - name: last\n    soak: 1h\n"))
    section = picture.comment_section(tmp_path, "HEAD")
    assert section.startswith(
        "## Fleet rollouts changed by this pull request\n\n"
        "### Fleet `fleet/prod.yaml`: prod in 3 wave(s): canary (1) → main (2) → last (1)\n\n```mermaid\nflowchart LR\n"
    )
    assert "gate of last<br/>verify (wait 10m)<br/>tolerate 0 failed<br/>soak 1h" in section
    assert picture.comment_section(tmp_path, "HEAD", max_chars=len(section) - 1).endswith(
        "→ last (1)\n\n`mldiag fleet plan fleet/prod.yaml --format mermaid` draws it.\n"
    )
    comment = render_all([], "markdown", "main", fleets=section)
    assert comment.startswith(COMMENT_MARKER) and comment.endswith(section)
    fleet.write_text(fleet.read_text().replace("targets: [aks-prod]", "targets: [aks-prd]"))
    invalid = picture.comment_section(tmp_path, "HEAD").splitlines()
    assert invalid[2:4] == ["### Fleet `fleet/prod.yaml`: invalid", ""]
    assert invalid[4].startswith("- waves[2].targets[0]: unknown target 'aks-prd' (did you mean 'aks-prod'?)")
