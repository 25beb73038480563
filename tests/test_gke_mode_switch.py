"""Manual -> managed on a GKE cluster takes two updates: the releases go, then the flag.

The program reads what the last deployment exported (a StackReference to its own stack, answered here by
the plan runtime from `previous_outputs`); the offline diff of each step shows what it does and in which
order.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from mldiag.diff import diff_plans
from mldiag.engine.runtime import PlanResult, run_config
from mldiag.plan import cli as plan_cli
from mldiag.plan.cli import build_report
from tests import test_gke_config as gke_config
from tests.test_gke_cluster import ADOPTED

CLUSTER = "gcp:container/cluster:Cluster"
FLAG = "pulumi-python:dynamic/gke:ManagedMlDiagnostics"
RELEASE = "kubernetes:helm.sh/v3:Release"
MANUAL_RELEASES = ["cert-manager", "mldiagnostics-connection-operator", "mldiagnostics-injection-webhook"]

# the config tests' created cluster with only its system pool, and a workload namespace
CREATED: dict[str, Any] = gke_config.CREATED | {
    "nodePools": [{"name": "system", "machineType": "e2-standard-4"}],
    "workloadNamespaces": [{"name": "ai", "create": True}],
}


def manual(target: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(target)
    out |= {"mode": "manual", "manualInstall": {"jaxVersion": "0.8"}}
    return out


def managed(target: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(target) | {"mode": "managed"}


def run(target: dict[str, Any], previous: dict[str, Any] | None = None) -> PlanResult:
    config = {"ml-diagnostics:environment": "staging", "ml-diagnostics:gkeClusters": [target]}
    return run_config(config, previous_outputs=previous)


def flag_of(res: PlanResult) -> bool:
    flags = res.by_type(FLAG)
    if flags:
        return flags[0].inputs["enabled"]
    return res.one(CLUSTER).inputs["managedMachineLearningDiagnosticsConfig"]["enabled"]


@pytest.mark.parametrize("target", [ADOPTED, CREATED], ids=["adopted", "created"])
def test_manual_to_managed_takes_two_updates(target: dict[str, Any]) -> None:
    name = target["name"]
    before = run(manual(target))
    assert flag_of(before) is False
    assert sorted(r.inputs["name"] for r in before.by_type(RELEASE)) == MANUAL_RELEASES
    assert before.outputs[f"gkeCluster:{name}"]["managedFlag"] is False

    # Step 1: no release is declared any more (the engine deletes them at the end of this update) and the
    # flag stays off; the step left for the next update is exported and said.
    step1 = run(managed(target), previous=before.outputs)
    assert step1.by_type(RELEASE) == []
    assert flag_of(step1) is False
    export = step1.outputs[f"gkeCluster:{name}"]
    assert (export["mode"], export["managedFlag"]) == ("managed", False)
    assert step1.outputs["pendingSteps"] == [
        f"gke-{name}: manual -> managed, step 1 of 2: this update deletes the manual releases and leaves the "
        "managed flag off; run `pulumi up` again to turn the flag on (the two webhooks never run side by side)"
    ]

    # Step 2: the last deployment exported managed: the flag goes on, nothing else changes.
    step2 = run(managed(target), previous=step1.outputs)
    assert flag_of(step2) is True
    assert step2.outputs["pendingSteps"] == []
    assert step2.outputs[f"gkeCluster:{name}"]["managedFlag"] is True
    # Later updates stay there.
    assert flag_of(run(managed(target), previous=step2.outputs)) is True


@pytest.mark.parametrize("target", [ADOPTED, CREATED], ids=["adopted", "created"])
def test_first_deployment_and_managed_to_manual_need_no_extra_update(target: dict[str, Any]) -> None:
    first = run(managed(target))
    assert flag_of(first) is True and first.outputs["pendingSteps"] == []
    # managed -> manual: the flag goes off in the same update as the releases come (they wait for it).
    back = run(manual(target), previous=first.outputs)
    assert flag_of(back) is False
    assert sorted(r.inputs["name"] for r in back.by_type(RELEASE)) == MANUAL_RELEASES
    assert back.outputs["pendingSteps"] == []


def test_a_renamed_target_reads_its_previous_name() -> None:
    before = run(manual(ADOPTED))
    renamed = managed(ADOPTED) | {"name": "shared2", "previousName": "shared"}
    step1 = run(renamed, previous=before.outputs)
    assert flag_of(step1) is False
    assert step1.outputs["pendingSteps"][0].startswith("gke-shared2: manual -> managed, step 1 of 2")


def report(res: PlanResult) -> dict[str, Any]:
    return json.loads(json.dumps(build_report(res, [])))


def test_the_offline_diff_shows_the_order_of_the_two_updates() -> None:
    before = run(manual(ADOPTED))
    step1 = run(managed(ADOPTED), previous=before.outputs)
    step2 = run(managed(ADOPTED), previous=step1.outputs)

    d1 = diff_plans(report(before), report(step1))
    deleted = sorted(e["name"] for e in d1["resources"] if e["action"] == "delete" and e["type"] == RELEASE)
    assert deleted == [
        "gke-shared-mldiag-cert-manager-release",
        "gke-shared-mldiag-manual-connection-operator",
        "gke-shared-mldiag-manual-injection-webhook",
    ]
    # The flag resource does not change in step 1.
    assert not [e for e in d1["resources"] if e["type"] == FLAG]
    assert d1["pendingSteps"] == step1.outputs["pendingSteps"]
    assert d1["notes"][0] == "order: " + step1.outputs["pendingSteps"][0]

    d2 = diff_plans(report(step1), report(step2))
    assert [(e["action"], e["type"]) for e in d2["resources"]] == [("update", FLAG)]
    (change,) = d2["resources"][0]["changes"]
    assert (change["path"], change["old"], change["new"]) == ("enabled", False, True)
    assert d2["pendingSteps"] == [] and not any(n.startswith("order: ") for n in d2["notes"])


def test_plan_cli_reads_previous_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = tmp_path / "Pulumi.s.yaml"
    stack.write_text(
        json.dumps(
            {
                "config": {
                    "ml-diagnostics:environment": "staging",
                    "ml-diagnostics:gkeClusters": [managed(ADOPTED)],
                }
            }
        )
    )
    previous = tmp_path / "previous.json"
    # `pulumi stack output --json` shape
    previous.write_text(json.dumps({"gkeCluster:shared": {"mode": "manual", "managedFlag": False}}))
    args = ["s", "--config-file", str(stack), "--format", "json", "-q", "--skip-policies"]
    assert plan_cli.main([*args, "--previous-outputs", str(previous)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert len(first["outputs"]["pendingSteps"]) == 1
    # a saved plan report works as the previous outputs too
    previous.write_text(json.dumps(first))
    assert plan_cli.main([*args, "--previous-outputs", str(previous)]) == 0
    assert json.loads(capsys.readouterr().out)["outputs"]["pendingSteps"] == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "--previous-outputs: {path} does not exist"),
        (
            "{not json",
            "--previous-outputs: {path}: not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        ),
        (
            "[1, 2]",
            "--previous-outputs: {path}: expected a JSON object of stack outputs (`pulumi stack output --json`) or a plan report, got list",
        ),
    ],
)
def test_plan_cli_refuses_bad_previous_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "previous.json"
    if content is not None:
        path.write_text(content)
    assert plan_cli.main(["dev", "--previous-outputs", str(path), "-q"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "error: " + message.format(path=path) + "\n"
    assert captured.out == ""
