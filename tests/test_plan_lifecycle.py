"""Adoption (`import_`) and renames (`aliases`) through the offline plan and the offline diff, every format."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mldiag.diff import diff_plans, render
from mldiag.engine.runtime import run_config
from mldiag.plan.cli import build_report
from mldiag.report import render as plan_render

PROGRAM = textwrap.dedent(
    """
    import pulumi
    from pulumi_kubernetes.core.v1 import Namespace

    cfg = pulumi.Config("ml-diagnostics")
    name, previous, adopt = cfg.require("target"), cfg.get("previousName"), cfg.get_bool("adopt")
    aliases = [pulumi.Alias(name=previous)] if previous else None
    comp = pulumi.ComponentResource("mldiag:index:Target", name, opts=pulumi.ResourceOptions(aliases=aliases))
    child = pulumi.ResourceOptions(parent=comp)
    Namespace(f"{name}-ns", metadata={"name": "diag"}, opts=child)
    if adopt:
        Namespace(
            f"{name}-team",
            metadata={"name": "team-a", "labels": {"managed-mldiagnostics-gke": "true"}},
            opts=pulumi.ResourceOptions(parent=comp, import_="team-a", protect=True),
        )
    comp.register_outputs({})
    """
)
NS = "kubernetes:core/v1:Namespace"


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("lifecycle") / "__main__.py"
    p.write_text(PROGRAM)
    return p


def plan(program: Path, **config: Any) -> dict[str, Any]:
    cfg = {f"ml-diagnostics:{k}": v for k, v in config.items()}
    return build_report(run_config(cfg, stack="dev", program=program), [])


def test_import_id_and_protect_are_recorded_and_shown_in_every_plan_format(program: Path) -> None:
    report = plan(program, target="lab", adopt="true")
    (team,) = [r for r in report["resources"] if r["name"] == "lab-team"]
    assert (team["importId"], team["protect"], team["retainOnDelete"]) == ("team-a", True, False)
    (ns,) = [r for r in report["resources"] if r["name"] == "lab-ns"]
    assert (ns["importId"], ns["protect"], ns["aliases"]) == (None, False, [])
    assert f"= {NS}  lab-team  [import team-a, protect]" in plan_render.render(report, "table")
    md = plan_render.render(report, "markdown")
    assert f"{NS}  lab-team  [import team-a, protect]" in md and "1 to import." in md
    assert json.loads(plan_render.render(report, "json"))["resources"] == report["resources"]


def test_aliases_are_resolved_to_urns_and_inherited_by_children(program: Path) -> None:
    report = plan(program, target="lab2", previousName="lab")
    by_name = {r["name"]: r for r in report["resources"]}
    stack = "urn:pulumi:dev::ml-diagnostics::"
    assert by_name["lab2"]["aliases"] == [f"{stack}mldiag:index:Target::lab"]
    # The child's name starts with its parent's: the engine renames that prefix with the parent's alias.
    assert by_name["lab2-ns"]["aliases"] == [f"{stack}mldiag:index:Target${NS}::lab-ns"]


def test_a_target_renamed_with_its_previous_name_is_a_rename_not_a_replace(program: Path) -> None:
    d = diff_plans(plan(program, target="lab"), plan(program, target="lab2", previousName="lab"))
    assert d["summary"]["rename"] == 2
    assert [(e["action"], e["name"], e["oldUrn"].rsplit("::", 1)[-1]) for e in d["resources"]] == [
        ("rename", "lab2-ns", "lab-ns"),
        ("rename", "lab2", "lab"),
    ]
    assert all(e["changes"] == [] for e in d["resources"])
    table = render(d, "table")
    assert f"~> rename   {NS}  lab2-ns" in table
    assert f"was: urn:pulumi:dev::ml-diagnostics::mldiag:index:Target${NS}::lab-ns" in table
    md = render(d, "markdown")
    assert "| resources | 0 | 0 | 0 | 2 | 0 | 0 | 0 | 0 | 0 |" in md and "~> <b>rename</b>" in md
    assert json.loads(render(d, "json"))["resources"][0]["oldUrn"].endswith("::lab-ns")


def test_the_same_rename_without_previous_name_replaces_everything(program: Path) -> None:
    d = diff_plans(plan(program, target="lab"), plan(program, target="lab2"))
    assert {e["action"] for e in d["resources"]} == {"add", "delete"}
    assert d["summary"]["add"] == d["summary"]["delete"] == 2


def test_an_adopted_resource_is_an_import_with_its_id_in_every_diff_format(program: Path) -> None:
    d = diff_plans(plan(program, target="lab"), plan(program, target="lab", adopt="true"))
    (e,) = d["resources"]
    assert (e["action"], e["name"], e["importId"]) == ("import", "lab-team", "team-a")
    assert {c["path"]: c["new"] for c in e["changes"]}["metadata.name"] == "team-a"
    assert d["summary"]["import"] == 1 and d["summary"]["add"] == 0
    table = render(d, "table")
    assert f" = import   {NS}  lab-team" in table and "import id: team-a" in table
    md = render(d, "markdown")
    assert "= <b>import</b>" in md and "- import id: <code>team-a</code>" in md
    assert json.loads(render(d, "json"))["resources"][0]["importId"] == "team-a"
    # Once imported (the base imports it too) the setting is harmless: no change.
    again = diff_plans(plan(program, target="lab", adopt="true"), plan(program, target="lab", adopt="true"))
    assert again["resources"] == [] and again["summary"]["unchanged"] == 3
