"""GkeCluster under the mock runtime: exact Cluster / NodePool / adopt inputs, in-place flag flips,
a token-free kubeconfig, dependency shape and outputs."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mldiag.engine.runtime import PlanResult, run_config
from program.kinds.gke import mocks as gke_mocks

CLUSTER = "gcp:container/cluster:Cluster"
POOL = "gcp:container/nodePool:NodePool"
ADOPT = "pulumi-python:dynamic/gke:ManagedMlDiagnostics"
K8S = "pulumi:providers:kubernetes"
RELEASE = "kubernetes:helm.sh/v3:Release"

# Inputs whose change makes the GKE provider replace the cluster (ForceNew upstream).
CLUSTER_REPLACE_KEYS = (
    "name",
    "location",
    "project",
    "network",
    "subnetwork",
    "initialNodeCount",
    "nodeConfig",
    "ipAllocationPolicy",
    "privateClusterConfig",
    "enableAutopilot",
    "nodeLocations",
)

CREATED: dict[str, Any] = {
    "name": "train",
    "create": True,
    "project": "acme-ml-dev",
    "location": "us-central1",
    "releaseChannel": "RAPID",
    "minMasterVersion": "1.35.1-gke.1396000",
    "network": "projects/acme-ml-dev/global/networks/ml",
    "subnetwork": "projects/acme-ml-dev/regions/us-central1/subnetworks/ml-gke",
    "nodePools": [
        {"name": "system", "machineType": "e2-standard-4"},
        {
            "name": "tpu",
            "machineType": "ct5lp-hightpu-4t",
            "tpuTopology": "2x4",
            "nodeCount": 2,
            "nodeLocations": ["us-central1-a"],
            "labels": {"workload": "training"},
            "taints": [{"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"}],
        },
        {
            "name": "l4",
            "machineType": "g2-standard-8",
            "spot": True,
            "diskSizeGb": 200,
            "autoscaling": {"minNodeCount": 0, "maxNodeCount": 3},
            "guestAccelerator": {"type": "nvidia-l4", "count": 1, "gpuDriverVersion": "LATEST"},
        },
    ],
    "workloadNamespaces": [{"name": "ai", "create": True}],
    "diagon": {"enabled": True},
}

ADOPTED: dict[str, Any] = {
    "name": "shared",
    "project": "acme-ml-staging",
    "location": "us-central1-a",
    "clusterName": "shared-train-a",
    "currentVersion": "1.35.1-gke.1396000",
    "workloadNamespaces": [{"name": "default"}],
}


def run(*targets: dict[str, Any], **top: Any) -> PlanResult:
    config = {"ml-diagnostics:environment": "dev", "ml-diagnostics:gkeClusters": list(targets)}
    config |= {f"ml-diagnostics:{k}": v for k, v in top.items()}
    return run_config(config)


def with_(target: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(target)
    out.update(changes)
    return out


def test_created_cluster_inputs() -> None:
    res = run(CREATED)
    cluster = res.one(CLUSTER, "gke-train-cluster")
    assert cluster.inputs == {
        "name": "train",
        "project": "acme-ml-dev",
        "location": "us-central1",
        "minMasterVersion": "1.35.1-gke.1396000",
        "releaseChannel": {"channel": "RAPID"},
        "network": "projects/acme-ml-dev/global/networks/ml",
        "subnetwork": "projects/acme-ml-dev/regions/us-central1/subnetworks/ml-gke",
        "removeDefaultNodePool": True,
        "initialNodeCount": 1,
        "deletionProtection": True,
        "workloadIdentityConfig": {"workloadPool": "acme-ml-dev.svc.id.goog"},
        "managedMachineLearningDiagnosticsConfig": {"enabled": True},
    }
    assert cluster.parent is not None and cluster.parent.endswith("mldiag:index:GkeCluster::gke-train")


def test_node_pool_inputs() -> None:
    res = run(CREATED)
    scope = "https://www.googleapis.com/auth/cloud-platform"
    common = {"cluster": "train", "project": "acme-ml-dev", "location": "us-central1"}
    management = {"autoRepair": True, "autoUpgrade": True}
    wi = {"mode": "GKE_METADATA"}
    assert res.one(POOL, "gke-train-pool-system").inputs == common | {
        "name": "system",
        "nodeCount": 1,
        "management": management,
        "nodeConfig": {
            "machineType": "e2-standard-4",
            "oauthScopes": [scope],
            "labels": {},
            "taints": [],
            "spot": False,
            "workloadMetadataConfig": wi,
        },
    }
    assert res.one(POOL, "gke-train-pool-tpu").inputs == common | {
        "name": "tpu",
        "nodeCount": 2,
        "nodeLocations": ["us-central1-a"],
        "management": management,
        "placementPolicy": {"type": "COMPACT", "tpuTopology": "2x4"},
        "nodeConfig": {
            "machineType": "ct5lp-hightpu-4t",
            "oauthScopes": [scope],
            "labels": {"workload": "training"},
            "taints": [{"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"}],
            "spot": False,
            "workloadMetadataConfig": wi,
        },
    }
    assert res.one(POOL, "gke-train-pool-l4").inputs == common | {
        "name": "l4",
        "autoscaling": {"minNodeCount": 0, "maxNodeCount": 3},
        "management": management,
        "nodeConfig": {
            "machineType": "g2-standard-8",
            "oauthScopes": [scope],
            "labels": {},
            "taints": [],
            "spot": True,
            "diskSizeGb": 200,
            "workloadMetadataConfig": wi,
            "guestAccelerators": [
                {
                    "type": "nvidia-l4",
                    "count": 1,
                    "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
                }
            ],
        },
    }
    # every pool hangs off the cluster (its name is the cluster's output)
    cluster_urn = res.one(CLUSTER).urn
    assert all(cluster_urn in p.dependencies for p in res.by_type(POOL))


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"mode": "managed"}, {"mode": "manual", "manualInstall": {"jaxVersion": "0.9"}}),
        ({"mode": "manual", "manualInstall": {"jaxVersion": "0.9"}}, {"mode": "auto"}),
    ],
)
def test_flipping_the_flag_is_an_in_place_update_of_the_cluster_only(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    one, two = run(with_(CREATED, **before)), run(with_(CREATED, **after))
    c1, c2 = one.one(CLUSTER), two.one(CLUSTER)
    enabled = [c["managedMachineLearningDiagnosticsConfig"]["enabled"] for c in (c1.inputs, c2.inputs)]
    assert enabled[0] is not enabled[1]
    assert set(enabled) == {True, False}
    # same URN (no rename/reparent) and only the flag differs among the cluster's inputs
    assert c1.urn == c2.urn
    changed = {k for k in c1.inputs.keys() | c2.inputs.keys() if c1.inputs.get(k) != c2.inputs.get(k)}
    assert changed == {"managedMachineLearningDiagnosticsConfig"}
    for key in CLUSTER_REPLACE_KEYS:
        assert c1.inputs.get(key) == c2.inputs.get(key), key
    # node pools are separate resources and do not change at all
    assert {p.urn: p.inputs for p in one.by_type(POOL)} == {p.urn: p.inputs for p in two.by_type(POOL)}


def test_manual_mode_disables_the_flag_explicitly_and_installs_the_releases() -> None:
    res = run(with_(CREATED, mode="manual", manualInstall={"jaxVersion": "0.8"}))
    assert res.one(CLUSTER).inputs["managedMachineLearningDiagnosticsConfig"] == {"enabled": False}
    assert sorted(r.inputs["name"] for r in res.by_type(RELEASE)) == [
        "cert-manager",
        "mldiagnostics-connection-operator",
        "mldiagnostics-injection-webhook",
    ]
    assert res.outputs["gkeCluster:train"]["mode"] == "manual"


def test_managed_mode_installs_no_releases() -> None:
    res = run(CREATED)
    assert res.by_type(RELEASE) == []
    assert res.outputs["gkeCluster:train"]["mode"] == "managed"


def _kubeconfig(res: PlanResult, name: str) -> dict[str, Any]:
    provider = res.one(K8S, name)
    assert set(provider.inputs) == {"kubeconfig"}
    return json.loads(provider.unmasked_inputs["kubeconfig"])


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


@pytest.mark.parametrize(("target", "provider"), [(CREATED, "gke-train-k8s"), (ADOPTED, "gke-shared-k8s")])
def test_kubeconfig_uses_the_auth_plugin_and_holds_no_token(target: dict[str, Any], provider: str) -> None:
    res = run(target)
    kc = _kubeconfig(res, provider)
    gke = target.get("clusterName", target["name"])
    ref = f"gke_{target['project']}_{target['location']}_{gke}"
    endpoint = gke_mocks._gke_endpoint(target["project"], target["location"], gke)
    assert kc["clusters"] == [
        {
            "name": ref,
            "cluster": {
                "server": f"https://{endpoint}",
                "certificate-authority-data": gke_mocks._FAKE_GKE_CA,
            },
        }
    ]
    assert kc["current-context"] == ref
    assert kc["users"] == [
        {
            "name": ref,
            "user": {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                    "command": "gke-gcloud-auth-plugin",
                    "installHint": kc["users"][0]["user"]["exec"]["installHint"],
                    "provideClusterInfo": True,
                }
            },
        }
    ]
    forbidden = {"token", "tokenFile", "password", "username", "client-key-data", "client-certificate-data"}
    assert not (_keys(kc) & forbidden)
    assert "token" not in res.one(K8S, provider).unmasked_inputs["kubeconfig"].lower()


def test_adopted_cluster_uses_the_dynamic_resource_and_no_cluster_resource() -> None:
    res = run(ADOPTED, googleApi={"quotaProject": "acme-billing"})
    assert res.by_type(CLUSTER) == [] and res.by_type(POOL) == []
    flag = res.one(ADOPT, "gke-shared-managed-mldiagnostics")
    inputs = {k: v for k, v in flag.inputs.items() if k != "__provider"}
    assert inputs == {
        "project": "acme-ml-staging",
        "location": "us-central1-a",
        "cluster": "shared-train-a",
        "enabled": True,
        "clusterVersion": "1.35.1-gke.1396000",
        "quotaProject": "acme-billing",
    }
    # the in-cluster resources wait for the flag through their provider
    assert flag.urn in res.one(K8S, "gke-shared-k8s").dependencies
    assert res.outputs["gkeCluster:shared"] == {
        "endpoint": gke_mocks._gke_endpoint("acme-ml-staging", "us-central1-a", "shared-train-a"),
        "mode": "managed",
        "managedFlag": True,
        "workloadMonitoring": False,
    }


def test_adopted_manual_sends_enabled_false_and_custom_endpoint() -> None:
    target = with_(ADOPTED, currentVersion="1.34.3-gke.1000", manualInstall={"jaxVersion": "0.9"})
    res = run(target, googleApi={"endpoints": {"container": "https://container.private.example"}})
    inputs = res.one(ADOPT).inputs
    assert (inputs["enabled"], inputs["clusterVersion"]) == (False, "1.34.3-gke.1000")
    assert inputs["apiEndpoint"] == "https://container.private.example"
    assert res.outputs["gkeCluster:shared"]["mode"] == "manual"
    # the manual releases wait for the flag (turned off first) via the provider
    provider = res.one(K8S).urn
    assert res.by_type(RELEASE) and all(
        r.provider and r.provider.startswith(provider) for r in res.by_type(RELEASE)
    )


def test_only_helm_releases_wait_for_the_node_pools() -> None:
    res = run(
        with_(CREATED, mode="manual", minMasterVersion="1.34.3-gke.1000", manualInstall={"jaxVersion": "0.9"})
    )
    pools = {p.urn for p in res.by_type(POOL)}
    cluster = res.one("gcp:container/cluster:Cluster").urn
    provider = res.one(K8S, "gke-train-k8s")
    # The provider needs the API server only (its kubeconfig comes from the cluster's outputs).
    assert provider.dependencies == [cluster]
    ds = res.one("kubernetes:apps/v1:DaemonSet")
    assert ds.provider is not None and ds.provider.startswith(provider.urn)
    assert not pools & set(ds.dependencies)
    # Releases await pod readiness: cert-manager waits for the pools, the others for cert-manager.
    releases = {r.inputs["name"]: r for r in res.by_type(RELEASE)}
    assert set(releases["cert-manager"].dependencies) == pools
    cm = releases["cert-manager"].urn
    for name in ("mldiagnostics-injection-webhook", "mldiagnostics-connection-operator"):
        assert cm in releases[name].dependencies and not pools & set(releases[name].dependencies)


@pytest.mark.parametrize(
    ("version", "expected"),
    [("1.36.4-gke.1247000", True), ("1.36.4-gke.1246999", False), ("1.37.0-gke.100", True)],
)
def test_workload_monitoring_output(version: str, expected: bool) -> None:
    res = run(with_(CREATED, minMasterVersion=version), with_(ADOPTED, currentVersion=version))
    assert res.outputs["gkeCluster:train"]["workloadMonitoring"] is expected
    assert res.outputs["gkeCluster:shared"]["workloadMonitoring"] is expected


def test_auto_resolves_by_version_at_the_threshold() -> None:
    below = with_(CREATED, minMasterVersion="1.35.0-gke.3064999", manualInstall={"jaxVersion": "0.9"})
    at = with_(ADOPTED, currentVersion="1.35.0-gke.3065000")
    res = run(below, at)
    assert res.outputs["gkeCluster:train"]["mode"] == "manual"
    assert res.one(CLUSTER).inputs["managedMachineLearningDiagnosticsConfig"] == {"enabled": False}
    assert res.outputs["gkeCluster:shared"]["mode"] == "managed"
    assert res.one(ADOPT).inputs["enabled"] is True


def test_workload_identity_off_and_deletion_protection_off() -> None:
    res = run(with_(CREATED, workloadIdentity=False, deletionProtection=False))
    inputs = res.one(CLUSTER).inputs
    assert "workloadIdentityConfig" not in inputs
    assert inputs["deletionProtection"] is False
    assert all("workloadMetadataConfig" not in p.inputs["nodeConfig"] for p in res.by_type(POOL))


GCP = "pulumi:providers:gcp"
SA = "deployer@acme-ml-dev.iam.gserviceaccount.com"


def test_every_gcp_resource_uses_the_explicit_provider_of_its_project() -> None:
    other = with_(ADOPTED, name="other", project="acme-ml-other", location="europe-west4")
    res = run(CREATED, ADOPTED, other)
    providers = {p.urn: p for p in res.by_type(GCP)}
    assert sorted((p.name, p.unmasked_inputs["project"]) for p in providers.values()) == [
        ("gke-other-gcp", "acme-ml-other"),
        ("gke-shared-gcp", "acme-ml-staging"),
        ("gke-train-gcp", "acme-ml-dev"),
    ]
    gcp_resources = [r for r in res.resources if r.type.startswith("gcp:")]
    assert len(gcp_resources) == 1 + 3  # the created cluster and its node pools
    for r in gcp_resources:
        assert providers[r.provider].name == "gke-train-gcp", r.name
    # A zone gives the provider its zone and region; a region only the region.
    assert res.one(GCP, "gke-shared-gcp").unmasked_inputs == {
        "project": "acme-ml-staging",
        "region": "us-central1",
        "zone": "us-central1-a",
    }
    assert res.one(GCP, "gke-train-gcp").unmasked_inputs == {
        "project": "acme-ml-dev",
        "region": "us-central1",
    }


def test_impersonation_and_quota_project_reach_the_gcp_provider_and_the_exec_credential() -> None:
    target = with_(CREATED, googleApi={"impersonateServiceAccount": SA, "quotaProject": "acme-billing"})
    res = run(target)
    assert res.one(GCP).unmasked_inputs == {
        "project": "acme-ml-dev",
        "region": "us-central1",
        "impersonateServiceAccount": SA,
        "billingProject": "acme-billing",
        "userProjectOverride": "true",
    }
    exec_cfg = _kubeconfig(res, "gke-train-k8s")["users"][0]["user"]["exec"]
    assert exec_cfg["command"] == "gke-gcloud-auth-plugin"
    assert exec_cfg["env"] == [
        {"name": "CLOUDSDK_AUTH_IMPERSONATE_SERVICE_ACCOUNT", "value": SA},
        {"name": "CLOUDSDK_BILLING_QUOTA_PROJECT", "value": "acme-billing"},
    ]


def test_stack_level_settings_apply_and_a_target_overrides_them() -> None:
    other = with_(ADOPTED, googleApi={"quotaProject": "shared-billing"})
    res = run(CREATED, other, googleApi={"impersonateServiceAccount": SA, "quotaProject": "stack-billing"})
    train, shared = (
        res.one(GCP, "gke-train-gcp").unmasked_inputs,
        res.one(GCP, "gke-shared-gcp").unmasked_inputs,
    )
    assert (train["impersonateServiceAccount"], train["billingProject"]) == (SA, "stack-billing")
    assert (shared["impersonateServiceAccount"], shared["billingProject"]) == (SA, "shared-billing")


def test_diagon_on_an_adopted_autopilot_cluster_is_a_clear_error():
    """The cluster lookup says Autopilot: privileged pods are refused there, so Diagon is an error naming why
    and what to do (the mock answers report `autopilot-train` as Autopilot)."""
    from ml_diagnostics.gke_cluster import AutopilotError

    target = {
        "name": "ap",
        "project": "acme-ml-dev",
        "location": "us-central1",
        "clusterName": "autopilot-train",
        "currentVersion": "1.35.1-gke.1396000",
        "mode": "managed",
        "diagon": {
            "enabled": True,
            "image": "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0",
        },
    }
    with pytest.raises(AutopilotError) as e:
        run_config({"ml-diagnostics:environment": "dev", "ml-diagnostics:gkeClusters": [target]})
    assert str(e.value) == (
        "GKE cluster acme-ml-dev/us-central1/autopilot-train is an Autopilot cluster, and Autopilot admits no "
        "privileged pods: the Diagon daemon (privileged, hostNetwork) cannot run there. Set diagon.enabled: false "
        "for this target (managed ML Diagnostics and the workload opt-in work on Autopilot), or run Diagon on a "
        "GKE Standard cluster"
    )
    # without Diagon the same cluster plans
    del target["diagon"]
    result = run_config({"ml-diagnostics:environment": "dev", "ml-diagnostics:gkeClusters": [target]})
    assert result.one("pulumi-python:dynamic/gke:ManagedMlDiagnostics")
