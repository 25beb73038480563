"""The gkeClusters entries of the three stack files, planned (program + policy pack) on their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag.plan.cli import ROOT, plan_stack

KEYS = ("ml-diagnostics:environment", "ml-diagnostics:gkeClusters")


def plan_gke_part(stack: str, tmp_path: Path) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    only = {"config": {k: v for k, v in doc["config"].items() if k in KEYS}}
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(only))
    return plan_stack(stack, config_file=path)


def of_type(report: dict[str, Any], token: str) -> list[dict[str, Any]]:
    return [r for r in report["resources"] if r["type"] == token]


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("stacks")
    return {s: plan_gke_part(s, tmp) for s in ("dev", "staging", "prod")}


def test_no_policy_findings(plans: dict[str, dict[str, Any]]) -> None:
    for stack, report in plans.items():
        assert report["policyViolations"] == [], stack


def test_dev_creates_a_cluster_on_auto_resolving_to_managed(plans: dict[str, dict[str, Any]]) -> None:
    report = plans["dev"]
    (cluster,) = of_type(report, "gcp:container/cluster:Cluster")
    assert cluster["inputs"]["managedMachineLearningDiagnosticsConfig"] == {"enabled": True}
    assert cluster["inputs"]["minMasterVersion"] == "1.35.1-gke.1396000"
    assert report["outputs"]["gkeCluster:dev-train"]["mode"] == "managed"
    managed = [r for r in report["resources"] if "::gke-dev-train" in r["urn"]]
    assert [r for r in managed if r["type"] == "kubernetes:helm.sh/v3:Release"] == []


def test_dev_adopts_a_legacy_cluster_on_auto_resolving_to_manual(plans: dict[str, dict[str, Any]]) -> None:
    report = plans["dev"]
    assert report["outputs"]["gkeCluster:legacy-train"]["mode"] == "manual"
    (flag,) = of_type(report, "pulumi-python:dynamic/gke:ManagedMlDiagnostics")
    assert (flag["inputs"]["cluster"], flag["inputs"]["enabled"]) == ("legacy-train", False)
    legacy = [r for r in report["resources"] if "::gke-legacy-train" in r["urn"]]
    releases = sorted(r["inputs"]["name"] for r in legacy if r["type"] == "kubernetes:helm.sh/v3:Release")
    assert releases == [
        "cert-manager",
        "mldiagnostics-connection-operator",
        "mldiagnostics-injection-webhook",
    ]


def test_staging_adopts_an_existing_cluster(plans: dict[str, dict[str, Any]]) -> None:
    report = plans["staging"]
    assert of_type(report, "gcp:container/cluster:Cluster") == []
    (flag,) = of_type(report, "pulumi-python:dynamic/gke:ManagedMlDiagnostics")
    assert {k: flag["inputs"][k] for k in ("cluster", "enabled", "clusterVersion")} == {
        "cluster": "shared-train-a",
        "enabled": True,
        "clusterVersion": "1.35.1-gke.1396000",
    }
    patched = sorted(
        r["inputs"]["metadata"]["name"] for r in of_type(report, "kubernetes:core/v1:NamespacePatch")
    )
    assert patched == ["ai-workloads", "default"]


def test_prod_creates_a_tpu_cluster_with_diagon_on_the_tpu_pool(plans: dict[str, dict[str, Any]]) -> None:
    report = plans["prod"]
    (cluster,) = of_type(report, "gcp:container/cluster:Cluster")
    assert cluster["inputs"]["managedMachineLearningDiagnosticsConfig"] == {"enabled": True}
    pools = {p["inputs"]["name"]: p["inputs"] for p in of_type(report, "gcp:container/nodePool:NodePool")}
    assert pools["tpu-v6e"]["nodeConfig"]["machineType"] == "ct6e-standard-4t"
    assert pools["tpu-v6e"]["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
    (ds,) = of_type(report, "kubernetes:apps/v1:DaemonSet")
    assert ds["inputs"]["spec"]["template"]["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": "tpu-v6e"
    }
    assert report["outputs"]["gkeCluster:prod-tpu"] == {
        "endpoint": report["outputs"]["gkeCluster:prod-tpu"]["endpoint"],
        "mode": "managed",
        "managedFlag": True,
        "workloadMonitoring": True,
    }
