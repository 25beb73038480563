"""The plan/diff graph: Mermaid parsed by Mermaid's own parser, size budgets, dot, --from-json, pictures."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from dev.gen import pictures as plan_pictures
from mldiag.common import GITHUB_COMMENT_LIMIT, ROOT
from mldiag.diff import diff_plans, render, render_markdown
from mldiag.plan.cli import plan_stack
from mldiag.report import render as plan_render
from mldiag.report.graph import LEVELS, Graph, Node, build, nodes
from mldiag.report.graph_text import MAX_EDGES, MERMAID_BUDGET, dot, fitted, mermaid
from tests.fixtures.mermaid import mermaid_blocks
from tests.fixtures.plan_cli import run_plan
from tests.fixtures.stacks import STACK_NAMES

STACKS = STACK_NAMES
LEGEND_NODES = 9  # one per operation, the critical path, a policy finding


@pytest.fixture(scope="module")
def reports() -> dict[str, dict[str, Any]]:
    return {s: plan_stack(s) for s in STACKS}


@pytest.fixture(scope="module")
def sample_diff(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return plan_pictures.sample_diff(reports["dev"])


@pytest.fixture(scope="module")
def big_diffs() -> dict[str, dict[str, Any]]:
    return plan_pictures.synthetic_diffs(500)


def test_every_example_stack_plan_starts_with_a_mermaid_graph_mermaid_parses(reports, mermaid_parse) -> None:
    texts = {s: plan_render.render(r, "markdown") for s, r in reports.items()}
    blocks = {s: mermaid_blocks(t) for s, t in texts.items()}
    assert all(len(b) == 1 for b in blocks.values())
    for s, t in texts.items():
        first, second = t.split("\n\n", 2)[:2]
        assert first.startswith(f"### Offline plan: `{s}`") and second.startswith("```mermaid\nflowchart LR")
    parsed = dict(zip(blocks, mermaid_parse([b[0] for b in blocks.values()]), strict=True))
    for s, result in parsed.items():
        assert result["ok"], (s, result)
        res = reports[s]["resources"]
        # A plan collapses nothing: every custom resource a node, every component a box (+ the legend).
        assert result["vertices"] == sum(r["custom"] for r in res) + LEGEND_NODES, s
        assert result["subgraphs"] == sum(not r["custom"] for r in res) + 1, s
        assert len(blocks[s][0]) <= MERMAID_BUDGET


def test_dev_plan_graph_marks_critical_path_and_findings(reports) -> None:
    report = reports["dev"]
    graph = build(report)
    text = mermaid(graph)
    critical = [n for n in _nodes(graph) if n.critical]
    assert len(critical) == report["criticalPath"]["depth"]
    assert text.count("==>") == report["criticalPath"]["depth"] - 1
    flagged = {n.label for n in _nodes(graph) if n.findings}
    assert flagged and len(flagged) == len({v["urn"] for v in report["policyViolations"] if v["urn"]})
    assert "⚠ 1 policy finding(s)" in text and "class " in text and "classDef finding" in text


def test_sample_diff_graph_shows_each_operation_and_collapses_unchanged(sample_diff, mermaid_parse) -> None:
    assert {e["action"] for e in sample_diff["resources"]} >= {"add", "update", "replace", "delete"}
    md = render_markdown(sample_diff)
    (block,) = mermaid_blocks(md)
    assert md.index("```mermaid") < md.index("| resources |")
    (result,) = mermaid_parse([block])
    assert result["ok"], result
    graph, _ = fitted(sample_diff)
    assert graph.level == LEVELS[0]
    counts = graph.counts()
    s = sample_diff["summary"]
    assert (counts["create"], counts["update"], counts["replace"], counts["delete"]) == (
        s["add"],
        s["update"],
        s["replace"],
        s["delete"],
    )
    unchanged = [n for n in _nodes(graph) if n.op == "same"]
    assert unchanged and all(n.label.endswith("unchanged") for n in unchanged)
    total = sum(int(n.label.split()[0]) for n in unchanged if n.label.split()[0].isdigit())
    assert total == s["unchanged"] - sum(not r["custom"] for r in sample_diff["unchangedResources"])


@pytest.mark.parametrize("case", ["few targets changed", "every target changed"])
def test_500_target_diff_fits_the_budget_and_parses(big_diffs, mermaid_parse, case: str) -> None:
    d = big_diffs[case]
    md = render_markdown(d)
    assert len(md) < GITHUB_COMMENT_LIMIT
    (block,) = mermaid_blocks(md)
    assert len(block) <= MERMAID_BUDGET
    (result,) = mermaid_parse([block])
    assert result["ok"], result
    assert result["edges"] <= MAX_EDGES
    graph, _ = fitted(d)
    if case == "few targets changed":
        # The changed targets stay drawn in full; the 497 unchanged ones are one line.
        assert graph.level == "one unchanged line"
        assert "t003 · KubernetesCluster" in block and "t007 · KubernetesCluster" in block
        assert "t499 · KubernetesCluster" in block and "497 unchanged targets: 2485 unchanged" in block
        assert "~ diagon" in block and "- webhook" in block and "+ webhook" in block
    else:
        assert graph.level == "first targets"
        # Every target is one summary line, as many as fit; the last line counts the rest (t499 is new).
        shown = block.count("· KubernetesCluster: ")
        assert 100 < shown < 500 and block.count("· KubernetesCluster: 1 update, 4 unchanged") == shown
        rest = 500 - shown
        assert f"{rest} more targets: {rest - 1} update, 5 create, {4 * (rest - 1)} unchanged" in block


def test_import_and_rename_are_their_own_operations_in_the_graph() -> None:
    base = plan_pictures.synthetic_plan(2)
    head = plan_pictures.synthetic_plan(2)
    adopted = dict(head["resources"][-1], name="t001-mldiag-adopted", importId="diagon/diagon-daemon")
    adopted["urn"] = adopted["urn"].replace("::t001-mldiag-diagon", "::t001-mldiag-adopted")
    head["resources"].append(adopted)
    renamed = head["resources"][0]
    renamed["aliases"] = [renamed["urn"]]
    renamed["urn"], renamed["name"] = renamed["urn"].replace("::t000", "::t000-new"), "t000-new"
    d = diff_plans(base, head, rules={})
    assert {e["action"] for e in d["resources"]} == {"import", "rename"}
    text = mermaid(build(d))
    assert '"= adopted<br/>DaemonSet"' in text and "class " in text
    assert 'subgraph b1["~#gt; t000-new · KubernetesCluster"]' in text or "~#gt; t000-new" in text
    assert "= import" in render(d, "dot") and "t000-new" in render(d, "dot")


def test_dot_format_is_the_same_graph(reports) -> None:
    report = reports["dev"]
    text = plan_render.render(report, "dot")
    graph = build(report)
    assert text.startswith('digraph "ml-diagnostics/dev" {')
    assert text.count("subgraph cluster_") == sum(not r["custom"] for r in report["resources"]) + 1
    assert text.count(" -> ") == len(graph.edges)
    assert text.count('penwidth=3, color="#111111"') >= report["criticalPath"]["depth"]
    assert text.rstrip().endswith("}")
    assert text == dot(graph, "ml-diagnostics/dev")


def test_from_json_renders_any_saved_plan_or_diff(reports, sample_diff, tmp_path: Path) -> None:
    plan_file, diff_file, bad = tmp_path / "plan.json", tmp_path / "diff.json", tmp_path / "bad.json"
    plan_file.write_text(json.dumps(reports["dev"]))
    diff_file.write_text(json.dumps([sample_diff, sample_diff]))
    bad.write_text(json.dumps({"resources": 3}))
    for fmt in ("markdown", "dot", "table"):
        proc = run_plan("--from-json", str(plan_file), "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == plan_render.render(reports["dev"], fmt)
    proc = run_plan("--from-json", str(diff_file), "--format", "dot")
    assert proc.returncode == 0 and proc.stdout.count("digraph ") == 2
    proc = run_plan("--from-json", str(bad), "--format", "dot")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"error: {bad}: not a plan report (keys resources, policyViolations) nor a diff (keys summary, resources)\n"
    )
    proc = run_plan("--format", "dot")
    assert proc.returncode == 2 and "give a STACK to plan or --from-json FILE to render" in proc.stderr


def test_pictures_in_docs_are_rendered_from_fresh_sources(reports, sample_diff) -> None:
    """`make pictures` regenerates docs/*.mmd and renders them; this fails when either is stale."""
    docs = ROOT / "docs"
    lock = json.loads((docs / "pictures.lock.json").read_text())
    for name, text in plan_pictures.sources(reports["dev"], sample_diff).items():
        committed = (docs / name).read_text()
        assert committed == text, f"docs/{name} is stale: run `make pictures`"
        digest = hashlib.sha256(committed.encode()).hexdigest()
        assert lock[name] == digest, (
            f"docs/{name} changed since its picture was rendered: run `make pictures`"
        )
        for ext in (".svg", ".png"):
            assert (docs / name.replace(".mmd", ext)).stat().st_size > 1000
    readme = (ROOT / "README.md").read_text()
    assert "docs/plan-dev.png" in readme and "docs/diff-sample.png" in readme


def _nodes(graph: Graph) -> list[Node]:
    return nodes(graph.boxes)
