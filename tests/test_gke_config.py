"""gkeClusters config: every bad input is a ConfigError naming its key path and what is allowed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from program.config import ConfigError, parse

CREATED: dict[str, Any] = {
    "name": "train",
    "create": True,
    "project": "acme-ml-dev",
    "location": "us-central1",
    "minMasterVersion": "1.35.1-gke.1396000",
    "nodePools": [
        {"name": "system", "machineType": "e2-standard-4"},
        {"name": "tpu", "machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x4"},
    ],
}
ADOPTED: dict[str, Any] = {
    "name": "shared",
    "project": "acme-ml-staging",
    "location": "us-central1-a",
    "currentVersion": "1.35.1-gke.1396000",
}
P = "ml-diagnostics:gkeClusters[0]"


def problems(target: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse({"ml-diagnostics:environment": "dev", "ml-diagnostics:gkeClusters": [target]})
    return e.value.problems


def ok(target: dict[str, Any]) -> Any:
    return parse({"ml-diagnostics:environment": "dev", "ml-diagnostics:gkeClusters": [target]}).gke_clusters[
        0
    ]


def with_(target: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(target)
    out.update(changes)
    return out


def test_valid_targets_resolve_their_mode() -> None:
    assert ok(CREATED).resolved_mode == "managed"
    assert ok(ADOPTED).resolved_mode == "managed"
    assert ok(ADOPTED).gke_name == "shared"
    assert ok(with_(ADOPTED, clusterName="shared-a")).gke_name == "shared-a"
    manual = ok(with_(ADOPTED, currentVersion="1.35.0-gke.3064999", manualInstall={"jaxVersion": "0.9"}))
    assert manual.resolved_mode == "manual"


def test_managed_on_an_old_version_names_the_mode_key() -> None:
    assert problems(with_(CREATED, mode="managed", minMasterVersion="1.35.0-gke.3064999")) == [
        f"{P}.mode: managed ML diagnostics needs GKE >= 1.35.0-gke.3065000, the cluster runs "
        "1.35.0-gke.3064999; use mode manual or auto, or upgrade the cluster"
    ]
    assert problems(with_(ADOPTED, mode="managed", currentVersion="1.34.9-gke.1")) == [
        f"{P}.mode: managed ML diagnostics needs GKE >= 1.35.0-gke.3065000, the cluster runs 1.34.9-gke.1; "
        "use mode manual or auto, or upgrade the cluster"
    ]


def test_unknown_mode() -> None:
    assert problems(with_(CREATED, mode="on")) == [f"{P}.mode: must be one of 'managed', 'manual' or 'auto'"]


def test_bad_version_string() -> None:
    assert problems(with_(CREATED, minMasterVersion="1.35")) == [
        f"{P}.minMasterVersion: '1.35' is not a GKE version; expected MAJOR.MINOR.PATCH-gke.BUILD, "
        "e.g. 1.35.0-gke.3065000"
    ]


def test_auto_needs_a_version() -> None:
    target = with_(CREATED)
    del target["minMasterVersion"]
    assert problems(target) == [
        f"{P}.minMasterVersion: required with mode auto (the version decides: managed from "
        "1.35.0-gke.3065000, manual before); or set mode managed or manual"
    ]
    # managed without a version is left to the API (and to the policy pack)
    assert ok(with_(target, mode="managed")).resolved_mode == "managed"


def test_manual_needs_the_jax_version() -> None:
    assert problems(with_(ADOPTED, mode="manual")) == [
        f"{P}.manualInstall.jaxVersion: required for the manual install (it picks the connection-operator "
        "chart and args); supported: 0.8.x, 0.9.x and later"
    ]


def test_adopted_needs_its_version_and_refuses_create_only_keys() -> None:
    target = with_(ADOPTED, releaseChannel="RAPID", nodePools=[], workloadIdentity=True, network="n")
    del target["currentVersion"]
    assert problems(target) == [
        f"{P}.currentVersion: required for an adopted cluster (create: false): its current GKE version, e.g. "
        "1.35.1-gke.1396000 (it decides the mode and what the cluster supports)",
        f"{P}.network: only for clusters the program creates (create: true)",
        f"{P}.nodePools: only for clusters the program creates (create: true)",
        f"{P}.releaseChannel: only for clusters the program creates (create: true)",
        f"{P}.workloadIdentity: only for clusters the program creates (create: true)",
    ]


def test_created_needs_node_pools_and_refuses_current_version() -> None:
    assert problems(with_(CREATED, nodePools=[], currentVersion="1.35.1-gke.1396000")) == [
        f"{P}.currentVersion: only for adopted clusters (create: false); a created cluster's version is "
        "minMasterVersion",
        f"{P}.nodePools: a created cluster needs at least one node pool (its default pool is removed)",
    ]


def test_node_pool_problems() -> None:
    pools = [
        {"name": "a", "machineType": "e2-standard-4", "nodeCount": 1, "autoscaling": {"maxNodeCount": 2}},
        {"name": "a", "machineType": "e2-standard-4", "tpuTopology": "2x4"},
        {
            "name": "t",
            "machineType": "ct6e-standard-4t",
            "tpuTopology": "2by4",
            "guestAccelerator": {"type": "nvidia-l4", "count": 1},
            "taints": [{"key": "google.com/tpu", "effect": "NoSchedule"}],
            "labels": {"cloud.google.com/gke-nodepool": "x"},
        },
        {
            "name": "Bad_Name",
            "machineType": "e2-standard-4",
            "autoscaling": {"minNodeCount": 3, "maxNodeCount": 2},
        },
    ]
    assert problems(with_(CREATED, nodePools=pools)) == [
        f"{P}.nodePools[0].nodeCount: give nodeCount or autoscaling, not both",
        f"{P}.nodePools[1].tpuTopology: only for TPU machine types (ct5lp-..., ct6e-...), not 'e2-standard-4'",
        f"{P}.nodePools[2].taints[0].effect: must be one of 'NO_SCHEDULE', 'PREFER_NO_SCHEDULE' or 'NO_EXECUTE'",
        f"{P}.nodePools[3].autoscaling.maxNodeCount: must be at least 1 and at least minNodeCount",
        f"{P}.nodePools[3].name: 'Bad_Name' is not allowed: must be 1-40 lowercase letters, digits and '-', starting with a letter and "
        "not ending with '-'",
    ]
    pools[2]["taints"] = []
    pools = pools[:3]
    assert problems(with_(CREATED, nodePools=pools)) == [
        f"{P}.nodePools[0].nodeCount: give nodeCount or autoscaling, not both",
        f"{P}.nodePools[1].tpuTopology: only for TPU machine types (ct5lp-..., ct6e-...), not 'e2-standard-4'",
        f"{P}.nodePools[2].guestAccelerator: TPU machine types take no GPUs; remove guestAccelerator",
        f"{P}.nodePools[2].labels.cloud.google.com/gke-nodepool: is reserved (set by GKE or Kubernetes); use "
        "your own prefix",
        f"{P}.nodePools[2].tpuTopology: must look like 2x4 or 4x4x4",
    ]


def test_duplicate_pool_names() -> None:
    pools = [{"name": "a", "machineType": "e2-standard-4"}, {"name": "a", "machineType": "e2-standard-8"}]
    assert problems(with_(CREATED, nodePools=pools)) == [
        f"{P}.nodePools[1].name: duplicate node pool 'a' (also nodePools[0])"
    ]


def test_diagon_needs_an_accelerator_pool_or_an_existing_selected_pool() -> None:
    cpu_only = with_(CREATED, nodePools=[{"name": "system", "machineType": "e2-standard-4"}])
    assert problems(with_(cpu_only, diagon={"enabled": True})) == [
        f"{P}.diagon.enabled: Diagon runs on GPU/TPU nodes and the cluster has no accelerator node pool; add "
        "one (TPU machine type or guestAccelerator) or set diagon.nodeSelector"
    ]
    selector = {"cloud.google.com/gke-nodepool": "tpu-v6e"}
    assert problems(with_(CREATED, diagon={"enabled": True, "nodeSelector": selector})) == [
        f"{P}.diagon.nodeSelector.cloud.google.com/gke-nodepool: no node pool 'tpu-v6e'; node pools: "
        "system, tpu"
    ]
    assert ok(
        with_(CREATED, diagon={"enabled": True, "nodeSelector": {"cloud.google.com/gke-nodepool": "tpu"}})
    )
    assert ok(with_(CREATED, diagon={"enabled": True}))


def test_diagon_workload_identity_needs_workload_identity() -> None:
    diagon = {"enabled": True, "gcpServiceAccount": "diagon-daemon@acme-ml-dev.iam.gserviceaccount.com"}
    assert problems(with_(CREATED, workloadIdentity=False, diagon=diagon)) == [
        f"{P}.diagon.gcpServiceAccount: needs workloadIdentity: true"
    ]


def test_location_and_cluster_name_shapes() -> None:
    assert problems(with_(ADOPTED, location="US-Central", clusterName="Shared_A")) == [
        f"{P}.clusterName: 'Shared_A' is not allowed: must be 1-40 lowercase letters, digits and '-', starting with a letter and not "
        "ending with '-'",
        f"{P}.location: 'US-Central' is not allowed: must be a region (us-central1) or a zone (us-central1-a) "
        "(did you mean 'us-central1'?)",
    ]


def test_unknown_key_lists_allowed_keys() -> None:
    (problem,) = problems(with_(ADOPTED, enableManagedMldiagnostics=True))
    assert problem.startswith(f"{P}.enableManagedMldiagnostics: unknown key; allowed keys: ")
    assert "currentVersion" in problem and "nodePools" in problem and "diagon" in problem
