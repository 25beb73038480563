"""The PR comment puts danger first: headline, one-line stacks, findings before the graph, the size budget."""

from __future__ import annotations

from typing import Any

from tests.test_plan_diff import daemonset, plan, res
from tools.plan_diff import diff_plans, render_json
from tools.plan_diff.danger import DANGEROUS, classify

GKE = "mldiag:index:GkeCluster"


# --- fixtures -----------------------------------------------------------------------------------------


def cluster(target: str = "gke-dev-train", location: str = "us-central1", **extra: Any) -> dict[str, Any]:
    r = res(
        "gcp:container/cluster:Cluster",
        f"{target}-cluster",
        {"name": target.removeprefix("gke-"), "location": location, "project": "acme"},
        parent_type=GKE,
        provider=None,
    )
    return r | extra


def pool(pool_name: str, target: str = "gke-dev-train", location: str = "us-central1") -> dict[str, Any]:
    return res(
        "gcp:container/nodePool:NodePool",
        f"{target}-pool-{pool_name}",
        {"name": pool_name, "cluster": target, "location": location, "project": "acme"},
        parent_type=GKE,
        provider=None,
    )


def namespace(name: str, parent: str = "mldiag:index:WorkloadOptIn", rname: str = "") -> dict[str, Any]:
    return res(
        "kubernetes:core/v1:Namespace",
        rname or f"gke-dev-train-mldiag-opt-in-{name}",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        parent_type=parent,
    )


def moved_cluster() -> dict[str, Any]:
    """A GKE cluster and its two node pools move to another region; a workload namespace goes."""
    base = plan(cluster(), pool("system"), pool("l4"), namespace("ml-dev"), daemonset())
    head = plan(
        cluster(location="us-east1"), pool("system", location="us-east1"), pool("l4", location="us-east1")
    )
    head["resources"].append(daemonset(image="diagon:v3"))
    return diff_plans(base, head)


# --- 1. the costly replaces and deletes -----------------------------------------------------------------


def test_the_diff_lists_the_costly_replaces_and_deletes() -> None:
    d = moved_cluster()
    assert [(i["action"], i["kind"], i["name"]) for i in d["dangerous"]] == [
        ("replace", "GKE cluster", "gke-dev-train-cluster"),
        ("replace", "node pool", "gke-dev-train-pool-l4"),
        ("replace", "node pool", "gke-dev-train-pool-system"),
        ("delete", "namespace", "ml-dev"),
    ]
    assert render_json(d).count('"kind": "node pool"') == 2


def test_every_costly_kind_is_in_one_table_and_matched_from_it() -> None:
    types = {c.type for c in DANGEROUS}
    assert types == {
        "gcp:container/cluster:Cluster",
        "gcp:container/nodePool:NodePool",
        "azure-native:kubernetesconfiguration:Extension",
        "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster",
        "pulumi-python:dynamic/gke:ManagedMlDiagnostics",
        "kubernetes:core/v1:Namespace",
    }
    urn = "urn:pulumi:dev::ml-diagnostics::mldiag:index:AzureMlExtension$"
    for token in (
        "azure-native:kubernetesconfiguration:Extension",
        "azure-native:kubernetesconfiguration/v20230501:Extension",
        "azure-native:kubernetesconfiguration/v20240401preview:Extension",
    ):
        assert classify(token, f"{urn}{token}::x").one == "Azure ML extension", token
    ns = "kubernetes:core/v1:Namespace"
    for parent in ("mldiag:index:WorkloadOptIn", "mldiag:index:Diagon", "mldiag:index:MlDiagnosticsManual"):
        assert classify(ns, f"urn:pulumi:dev::p::{GKE}${parent}${ns}::x").one == "namespace"
    assert classify(ns, f"urn:pulumi:dev::p::mldiag:index:Other${ns}::x") is None
    assert classify("kubernetes:core/v1:NamespacePatch", f"urn:pulumi:dev::p::{GKE}${ns}Patch::x") is None
    assert (
        classify("kubernetes:apps/v1:DaemonSet", "urn:pulumi:dev::p::kubernetes:apps/v1:DaemonSet::x") is None
    )
