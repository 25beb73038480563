"""A program of a library user: every component with the README's imports, enums as their strings."""

import pulumi
import pulumi_kubernetes as kubernetes

from ml_diagnostics import (
    AzureMlExtension,
    ClusterMlDiagnostics,
    Diagon,
    GkeCluster,
    GkeNodePoolArgs,
    InvalidArgsError,
    KubernetesCluster,
    MlDiagnosticsMode,
    ModelDevelopmentCluster,
    WorkloadOptIn,
)

cluster = kubernetes.Provider("cluster", context="lab")
diagnostics = ClusterMlDiagnostics(
    "ml-diagnostics",
    {
        "mode": "manual",
        "workload_namespaces": [{"name": "ai-workloads", "create": True}],
        "manual_install": {"jax_version": "0.8"},
        "diagon": {"image": "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"},
    },
    pulumi.ResourceOptions(providers=[cluster]),
)
mode: pulumi.Output[str] = diagnostics.mode
also_managed = ClusterMlDiagnostics("managed", {"mode": MlDiagnosticsMode.MANAGED})
Diagon("diagon", {"namespace": "kube-system", "create_namespace": False})
WorkloadOptIn("opt-in", {"namespaces": [{"name": "research"}]})
KubernetesCluster("lab", {"context": "lab", "mode": "auto", "manual_install": {"jax_version": "0.9"}})

pools: list[GkeNodePoolArgs] = [{"name": "tpu", "machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x4"}]
gke = GkeCluster(
    "train",
    {
        "project": "acme-ml-dev",
        "location": "us-central1",
        "cluster_name": "train",
        "create": True,
        "min_master_version": "1.35.1-gke.1396000",
        "node_pools": pools,
        "deletion_policy": "PREVENT",
    },
)
endpoint: pulumi.Output[str] = gke.endpoint
extension = AzureMlExtension(
    "azureml",
    {
        "cluster": {
            "kind": "aks",
            "subscription_id": "00000000-0000-0000-0000-000000000001",
            "resource_group": "rg-ml",
            "name": "aks-ml",
            "location": "East US",
            "node_count": 3,
        },
        "extension_name": "azureml",
        "training": True,
    },
)
extension_id: pulumi.Output[str] = extension.extension_id
mdc = ModelDevelopmentCluster(
    "slurm",
    {
        "project": "acme-ml-dev",
        "region": "us-central1",
        "model_development_cluster_id": "mdc1",
        "network": {"network": "projects/acme-ml-dev/global/networks/net"},
        "node_pools": [
            {
                "id": "login",
                "machine_spec": {"machine_type": "n2-standard-8"},
                "scaling_spec": {"min_node_count": 1, "max_node_count": 1},
                "zone": "us-central1-a",
            },
        ],
        "orchestrator_spec": {
            "slurm_spec": {
                "home_directory_storage": "projects/acme-ml-dev/locations/us-central1-a/instances/home",
                "login_node_pool_id": "login",
                "partitions": [{"id": "login", "node_pool_ids": ["login"]}],
            }
        },
    },
)
state: pulumi.Output[str] = mdc.state


def refused(error: InvalidArgsError) -> list[str]:
    return error.problems
