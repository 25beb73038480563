"""The library keeps the program's promises: a component called directly refuses bad Args before it creates
anything (itself included), with one InvalidArgsError naming every problem by its Args key path, and the
same rule says the same thing to a stack file (in its spelling). The cases run as a real program under the
SDK's mocks, through the offline engine that records every resource registration."""

from __future__ import annotations

import copy
import json
import pydoc
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mldiag.engine.runtime import run_config
from program.config import ConfigError, parse

ROOT = Path(__file__).resolve().parents[1]
NS = "ml-diagnostics"

GKE = {
    "project": "acme-ml-dev",
    "location": "us-central1",
    "cluster_name": "train",
    "create": True,
    "min_master_version": "1.35.1-gke.1396000",
    "node_pools": [{"name": "cpu", "machine_type": "e2-standard-4", "node_count": 1}],
}
ADOPTED = {
    "project": "acme-ml-dev",
    "location": "us-central1-a",
    "cluster_name": "legacy",
    "current_version": "1.35.1-gke.1396000",
}
AKS = {
    "kind": "aks",
    "subscription_id": "00000000-0000-0000-0000-000000000001",
    "resource_group": "rg-ml",
    "name": "aks-ml",
    "location": "eastus",
    "node_count": 3,
}
AZURE = {"cluster": AKS, "extension_name": "azureml", "training": True}
MDC = {
    "project": "acme-ml-dev",
    "region": "us-central1",
    "model_development_cluster_id": "mdc1",
    "network": {"network": "projects/acme-ml-dev/global/networks/net"},
    "node_pools": [
        {"id": "cpu", "machine_spec": {"machine_type": "n2-standard-8"}, "zone": "us-central1-a",
         "scaling_spec": {"min_node_count": 0, "max_node_count": 2}},
        {"id": "login", "machine_spec": {"machine_type": "n2-standard-8"}, "zone": "us-central1-a",
         "scaling_spec": {"min_node_count": 1, "max_node_count": 1}},
    ],
    "orchestrator_spec": {
        "slurm_spec": {
            "home_directory_storage": "projects/acme-ml-dev/locations/us-central1-a/instances/home",
            "partitions": [{"id": "cpu", "node_pool_ids": ["cpu"]}],
            "login_node_pool_id": "login",
        }
    },
}  # fmt: skip
MANUAL = {"mode": "manual", "manual_install": {"jax_version": "0.8"}}


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`base` with the key at a dotted path (list indexes as numbers) set to `value`; `...` deletes it."""
    out = copy.deepcopy(base)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = out
    for p in parents:
        node = node[p]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


# (component, args, the problem it gets). Every one is refused before anything is registered.
CASES: list[tuple[str, dict[str, Any], str]] = [
    # ClusterMlDiagnostics
    ("ClusterMlDiagnostics", {}, "ClusterMlDiagnosticsArgs.mode: required key is missing"),
    ("ClusterMlDiagnostics", {"mode": "magic"}, "ClusterMlDiagnosticsArgs.mode: must be one of 'managed', 'manual' or 'auto'"),
    ("ClusterMlDiagnostics", {"mode": "manual"}, "ClusterMlDiagnosticsArgs.manual_install.jax_version: required for the manual install (it picks the connection-operator chart and args); supported: 0.8.x, 0.9.x and later"),
    ("ClusterMlDiagnostics", _with(MANUAL, "manual_install.jax_version", "0.7"), "ClusterMlDiagnosticsArgs.manual_install.jax_version: unsupported JAX version '0.7'; supported: 0.8.x, 0.9.x and later (e.g. 0.8.1, 0.9)"),
    ("ClusterMlDiagnostics", _with(MANUAL, "manual_install.connection_operator", {"version": "0.24.0-rc.1"}), "ClusterMlDiagnosticsArgs.manual_install.connection_operator.version: JAX 0.8.x needs connection-operator chart 0.24.0, not 0.24.0-rc.1"),
    ("ClusterMlDiagnostics", {"mode": "managed", "self_managed": True}, "ClusterMlDiagnosticsArgs.mode: managed ML diagnostics exists only on GKE; self-managed clusters allow: manual, auto (= manual)"),
    ("ClusterMlDiagnostics", {"mode": "auto"}, "ClusterMlDiagnosticsArgs.mode: mode auto needs the cluster's GKE version to choose; set the version, or mode managed (GKE >= 1.35.0-gke.3065000) or manual"),
    ("ClusterMlDiagnostics", {"mode": "managed", "modee": "x"}, "ClusterMlDiagnosticsArgs.modee: unknown key (did you mean 'mode'?); allowed keys: cert_manager, context, diagon, gke_version, kubeconfig, manual_install, mode, self_managed, verify_rbac, workload_namespaces"),
    ("ClusterMlDiagnostics", {"mode": "managed", "workload_namespaces": [{"name": "Bad_NS"}]}, "ClusterMlDiagnosticsArgs.workload_namespaces[0].name: 'Bad_NS' is not a Kubernetes namespace name: 1-63 lowercase letters, digits and '-', starting and ending with a letter or digit"),
    ("ClusterMlDiagnostics", {"mode": "managed", "workload_namespaces": [{"name": "a"}, {"name": "a"}]}, "ClusterMlDiagnosticsArgs.workload_namespaces[1].name: duplicate namespace 'a' (also workload_namespaces[0])"),
    ("ClusterMlDiagnostics", {"mode": "managed", "workload_namespaces": [{"name": "a", "labels": {"team": "x"}}]}, "ClusterMlDiagnosticsArgs.workload_namespaces[0].labels: allowed only with create: true (existing namespaces keep their labels)"),
    ("ClusterMlDiagnostics", {"mode": "managed", "verify_rbac": {}}, "ClusterMlDiagnosticsArgs.verify_rbac.subjects: name at least one subject (User, Group or ServiceAccount) to bind the role to"),
    ("ClusterMlDiagnostics", {"mode": "managed", "gke_version": "1.35"}, "ClusterMlDiagnosticsArgs.gke_version: '1.35' is not a GKE version; expected MAJOR.MINOR.PATCH-gke.BUILD, e.g. 1.35.0-gke.3065000"),
    ("ClusterMlDiagnostics", {**MANUAL, "cert_manager": {"enabled": False, "adopt": True}}, "ClusterMlDiagnosticsArgs.cert_manager.adopt: needs enabled: true (with enabled: false nothing is managed to adopt)"),
    # Diagon
    ("Diagon", {"max_unavailable": "lots"}, "DiagonArgs.max_unavailable: must be a positive integer or a percentage like 10%"),
    ("Diagon", {"namespace": "kube-system"}, "DiagonArgs.namespace: 'kube-system' always exists; set create_namespace: false to deploy into it"),
    ("Diagon", {"node_selector": {}}, "DiagonArgs.node_selector: must name at least one label; omit it for accelerator nodes"),
    ("Diagon", {"accelerator_node_labels": ["bad key!"]}, "DiagonArgs.accelerator_node_labels[0]: 'bad key!' is not a Kubernetes label key: [prefix/]name, name 1-63 of [A-Za-z0-9-_.] starting and ending with a letter or digit, prefix a DNS subdomain"),
    ("Diagon", {"gcp_service_account": "nope"}, "DiagonArgs.gcp_service_account: 'nope' is not allowed: must be a service account email (NAME@PROJECT.iam.gserviceaccount.com)"),
    ("Diagon", {"namspace": "x"}, "DiagonArgs.namspace: unknown key (did you mean 'namespace'?)"),
    ("Diagon", {"create_namespace": "no"}, "DiagonArgs.create_namespace: must be true or false (not a string or number)"),
    # WorkloadOptIn
    ("WorkloadOptIn", {}, "WorkloadOptInArgs.namespaces: required key is missing"),
    ("WorkloadOptIn", {"namespaces": "ai"}, "WorkloadOptInArgs.namespaces: must be a list"),
    ("WorkloadOptIn", {"namespaces": [{"name": "ai", "adopt": True}]}, "WorkloadOptInArgs.namespaces[0].adopt: needs create: true"),
    # KubernetesCluster
    ("KubernetesCluster", {"manual_install": {"jax_version": "0.8"}}, "KubernetesClusterArgs.kubeconfig: give a kubeconfig (secret) or a context name (of the ambient kubeconfig), or both"),
    ("KubernetesCluster", {"context": "lab"}, "KubernetesClusterArgs.manual_install.jax_version: required for the manual install"),
    ("KubernetesCluster", {"context": "lab", **MANUAL, "mode": "managed"}, "KubernetesClusterArgs.mode: managed ML diagnostics exists only on GKE"),
    # GkeCluster
    ("GkeCluster", _with(GKE, "node_pools.0.node_count", -1), "GkeClusterArgs.node_pools[0].node_count: must be 0 or more"),
    ("GkeCluster", {**GKE, "mode": "managed", "min_master_version": "1.30.1-gke.100"}, "GkeClusterArgs.mode: managed ML diagnostics needs GKE >= 1.35.0-gke.3065000, the cluster runs 1.30.1-gke.100; use mode manual or auto, or upgrade the cluster"),
    ("GkeCluster", {**GKE, "location": "mars-1"}, "GkeClusterArgs.location: 'mars-1' is not allowed: must be a region (us-central1) or a zone (us-central1-a)"),
    ("GkeCluster", _with(GKE, "project", ...), "GkeClusterArgs.project: required key is missing"),
    ("GkeCluster", {**GKE, "project": "Acme"}, "GkeClusterArgs.project: 'Acme' is not allowed: a Google Cloud project id is 6-30 lowercase letters, digits and '-', starting with a letter and not ending with '-'"),
    ("GkeCluster", {**GKE, "node_pools": []}, "GkeClusterArgs.node_pools: a created cluster needs at least one node pool (its default pool is removed)"),
    ("GkeCluster", {**ADOPTED, "node_pools": GKE["node_pools"]}, "GkeClusterArgs.node_pools: only for clusters the component creates (create: true)"),
    ("GkeCluster", _with(ADOPTED, "current_version", ...), "GkeClusterArgs.current_version: required for an adopted cluster (create: false)"),
    ("GkeCluster", _with(GKE, "node_pools.0.tpu_topology", "2x4"), "GkeClusterArgs.node_pools[0].tpu_topology: only for TPU machine types (ct5lp-..., ct6e-...), not 'e2-standard-4'"),
    ("GkeCluster", _with(GKE, "node_pools.0.taints", [{"key": "a", "effect": "NoSchedule"}]), "GkeClusterArgs.node_pools[0].taints[0].effect: must be one of 'NO_SCHEDULE', 'PREFER_NO_SCHEDULE' or 'NO_EXECUTE'"),
    ("GkeCluster", _with(_with(GKE, "node_pools.0.node_count", ...), "node_pools.0.autoscaling", {"min_node_count": 3, "max_node_count": 2}), "GkeClusterArgs.node_pools[0].autoscaling.max_node_count: must be at least 1 and at least min_node_count"),
    ("GkeCluster", _with(GKE, "node_pools.0.autoscaling", {"max_node_count": 2}), "GkeClusterArgs.node_pools[0].node_count: give node_count or autoscaling, not both"),
    ("GkeCluster", {**GKE, "release_channel": "FAST"}, "GkeClusterArgs.release_channel: must be one of 'RAPID', 'REGULAR', 'STABLE', 'EXTENDED' or 'UNSPECIFIED'"),
    ("GkeCluster", {**GKE, "google_api": {"emulator": True}}, "GkeClusterArgs.google_api: emulator: true needs endpoints (aiplatform and/or container) on the loopback"),
    ("GkeCluster", {**GKE, "deletion_policy": "KEEP"}, "GkeClusterArgs.deletion_policy: must be one of 'DELETE', 'ABANDON' or 'PREVENT'"),
    ("GkeCluster", _with(GKE, "node_pools.0.labels", {"cloud.google.com/x": "y"}), "GkeClusterArgs.node_pools[0].labels.cloud.google.com/x: is reserved (set by GKE or Kubernetes); use your own prefix"),
    # AzureMlExtension
    ("AzureMlExtension", _with(AZURE, "cluster.kind", "eks"), "AzureMlExtensionArgs.cluster.kind: must be one of 'aks' or 'arc'"),
    ("AzureMlExtension", _with(AZURE, "cluster.node_count", -2), "AzureMlExtensionArgs.cluster.node_count: must be at least 1"),
    ("AzureMlExtension", _with(AZURE, "extension_name", ...), "AzureMlExtensionArgs.extension_name: required key is missing"),
    ("AzureMlExtension", _with(AZURE, "cluster.subscription_id", ...), "AzureMlExtensionArgs.cluster.subscription_id: required key is missing"),
    ("AzureMlExtension", _with(AZURE, "cluster.location", "Mars Central"), "AzureMlExtensionArgs.cluster.location: 'Mars Central' is not an Azure region"),
    ("AzureMlExtension", {**AZURE, "version": "1.1.39"}, "AzureMlExtensionArgs.auto_upgrade_minor_version: must be false to pin version '1.1.39' (set auto_upgrade_minor_version: false, or remove version to follow the release train)"),
    ("AzureMlExtension", {**AZURE, "training": False}, "AzureMlExtensionArgs.training: either training or inference.enabled must be true (the extension is installed for training, inference or both)"),
    ("AzureMlExtension", {**AZURE, "inference": {"enabled": True, "allow_insecure_connections": True}}, "AzureMlExtensionArgs.inference.router_service_type: required when inference.enabled is true; allowed: 'LoadBalancer', 'NodePort' or 'ClusterIP'"),
    ("AzureMlExtension", {**_with(AZURE, "cluster.node_count", 2), "inference": {"enabled": True, "router_service_type": "loadbalancer", "allow_insecure_connections": True, "router_ha": True}}, "AzureMlExtensionArgs.inference.router_ha: true needs at least 3 nodes (cluster.node_count is 2); set router_ha: false or leave it unset"),
    ("AzureMlExtension", {**_with(AZURE, "cluster.kind", "arc"), "nginx_ingress_controller": "k8s.io/amlarc-ingress-nginx"}, "AzureMlExtensionArgs.nginx_ingress_controller: only for kind aks: the extension installs its nginx ingress on AKS, not on Arc"),
    ("AzureMlExtension", {**AZURE, "kubeconfig": "apiVersion: v1"}, "AzureMlExtensionArgs.verify_rbac: kubeconfig and aks_user_credentials are how the verify role is created: give verify_rbac too, or remove them"),
    ("AzureMlExtension", {**_with(AZURE, "cluster.kind", "arc"), "aks_user_credentials": True, "verify_rbac": {"subjects": [{"kind": "User", "name": "ci"}]}}, "AzureMlExtensionArgs.aks_user_credentials: only for kind aks; an Arc cluster needs a kubeconfig secret"),
    ("AzureMlExtension", {**AZURE, "verify_rbac": {"subjects": [{"kind": "User", "name": "ci"}]}}, "AzureMlExtensionArgs.verify_rbac: needs kubeconfig (a secret), or aks_user_credentials on AKS: the role is created through it"),
    # ModelDevelopmentCluster
    ("ModelDevelopmentCluster", _with(MDC, "network", ...), "ModelDevelopmentClusterArgs.network: required key is missing"),
    ("ModelDevelopmentCluster", _with(MDC, "node_pools.1.id", "cpu"), "ModelDevelopmentClusterArgs.node_pools[1].id: duplicate node pool id 'cpu' (also node_pools[0])"),
    ("ModelDevelopmentCluster", _with(MDC, "orchestrator_spec.slurm_spec.login_node_pool_id", "gpu"), "ModelDevelopmentClusterArgs.orchestrator_spec.slurm_spec.login_node_pool_id: login node pool 'gpu' is not a node pool id; node pools: cpu, login"),
    ("ModelDevelopmentCluster", {**MDC, "region": "mars"}, "ModelDevelopmentClusterArgs.region: 'mars' is not allowed: must be a Google Cloud region such as us-central1"),
    ("ModelDevelopmentCluster", {**MDC, "display_name": "x" * 129}, "ModelDevelopmentClusterArgs.display_name: at most 128 characters (129 given)"),
    # the clouds' own constraints (docs/constraints.md)
    ("GkeCluster", _with(GKE, "node_pools.0.node_locations", ["us-east1-b"]), "GkeClusterArgs.node_pools[0].node_locations[0]: 'us-east1-b' is not in the region of location 'us-central1': a zone of us-central1 (e.g. us-central1-a)"),
    ("ClusterMlDiagnostics", {**MANUAL, "cert_manager": {"repository": "charts.jetstack.io"}}, "ClusterMlDiagnosticsArgs.cert_manager.repository: must be an oci://, https:// or http:// URL"),
    ("ClusterMlDiagnostics", _with(MANUAL, "manual_install.injection_webhook", {"chart": "https://example.com/webhook.tgz"}), "ClusterMlDiagnosticsArgs.manual_install.injection_webhook.chart: must be a chart name in repository, or a full oci:// URL"),
    ("ClusterMlDiagnostics", _with(MANUAL, "manual_install.connection_operator", {"repository": "ftp://charts"}), "ClusterMlDiagnosticsArgs.manual_install.connection_operator.repository: must be an oci://, https:// or http:// URL"),
    ("ClusterMlDiagnostics", {"mode": "managed", "verify_rbac": {"subjects": [{"kind": "ServiceAccount", "name": "Bad_SA", "namespace": "ci"}]}}, "ClusterMlDiagnosticsArgs.verify_rbac.subjects[0].name: 'Bad_SA' is not a ServiceAccount name: up to 253 characters of lowercase letters, digits, '-' and '.'"),
    ("ModelDevelopmentCluster", _with(MDC, "node_pools.0.zone", "us-east1-b"), "ModelDevelopmentClusterArgs.node_pools[0].zone: 'us-east1-b' is not in region 'us-central1': a zone of us-central1 (e.g. us-central1-a)"),
    ("ModelDevelopmentCluster", _with(MDC, "node_pools.0.machine_spec.accelerator_count", 2), "ModelDevelopmentClusterArgs.node_pools[0].machine_spec.accelerator_count: needs accelerator_type"),
    ("ModelDevelopmentCluster", {**MDC, "runtime_spec": {"service_account": "me"}}, "ModelDevelopmentClusterArgs.runtime_spec.service_account: 'me' is not allowed: must be a service account email (NAME@PROJECT.iam.gserviceaccount.com)"),
    ("ModelDevelopmentCluster", {**MDC, "model_development_cluster_id": "mdc-1"}, "ModelDevelopmentClusterArgs.model_development_cluster_id: 'mdc-1' is not allowed: 1-10 characters of lowercase letters and digits, starting with a letter (no '-': the cluster uses Slurm)"),
]  # fmt: skip

MODULES = {
    "ClusterMlDiagnostics": "cluster_ml_diagnostics",
    "Diagon": "diagon",
    "WorkloadOptIn": "workload_opt_in",
    "KubernetesCluster": "kubernetes_cluster",
    "GkeCluster": "gke_cluster",
    "AzureMlExtension": "azure_ml",
    "ModelDevelopmentCluster": "model_development",
}

PROGRAM = textwrap.dedent(
    """
    import importlib, json
    import pulumi
    from ml_diagnostics import InvalidArgsError

    refused = []
    for i, (component, module, args) in enumerate(json.loads({cases!r})):
        cls = getattr(importlib.import_module(f"ml_diagnostics.{{module}}"), component)
        try:
            cls(f"case-{{i}}", args)
        except InvalidArgsError as e:
            refused.append(e.problems)
        else:
            refused.append(None)
    pulumi.export("refused", refused)
    """
)


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], list[Any]]:
    """Every case constructed in one real program under mocks: (each one's problems, what was registered)."""
    program = tmp_path_factory.mktemp("library-rules") / "__main__.py"
    cases = json.dumps([(c, MODULES[c], a) for c, a, _ in CASES])
    program.write_text(PROGRAM.format(cases=cases))
    result = run_config({}, program=program)
    return result.outputs["refused"], result.resources


def test_enough_cases_across_every_component():
    assert len(CASES) >= 40 and {c for c, _, _ in CASES} == set(MODULES)


@pytest.mark.parametrize(("index", "component", "expected"), [(i, c, e) for i, (c, _, e) in enumerate(CASES)])
def test_a_bad_argument_gets_its_rule_by_its_key_path(refused, index: int, component: str, expected: str):
    problems = refused[0][index]
    assert problems is not None, f"{component} accepted case {index}"
    assert any(p.startswith(expected) for p in problems), problems


def test_a_refused_call_registers_nothing(refused):
    # each case was refused before its component registered itself or any child
    assert [r.type for r in refused[1]] == []


def test_one_error_per_component_names_every_problem():
    from ml_diagnostics import GkeCluster, InvalidArgsError

    bad = {
        **_with(GKE, "node_pools.0.node_count", -1),
        "location": "mars-1",
        "extra": 1,
        "diagon": {"max_unavailable": "x"},
    }
    with pytest.raises(InvalidArgsError) as e:
        GkeCluster("train", bad)  # type: ignore[typeddict-unknown-key]
    assert str(e.value).splitlines() == [
        "invalid arguments of GkeCluster 'train' (4 problem(s)):",
        "  - GkeClusterArgs.diagon.max_unavailable: must be a positive integer or a percentage like 10%",
        "  - GkeClusterArgs.extra: unknown key; allowed keys: cert_manager, cluster_name, create, current_version, "
        "deletion_policy, deletion_protection, diagon, google_api, location, manual_install, min_master_version, mode, "
        "network, node_pools, previous_mode, project, release_channel, subnetwork, verify_rbac, workload_identity, "
        "workload_namespaces",
        "  - GkeClusterArgs.location: 'mars-1' is not allowed: must be a region (us-central1) or a zone (us-central1-a)",
        "  - GkeClusterArgs.node_pools[0].node_count: must be 0 or more",
    ]
    assert isinstance(e.value, ValueError) and len(e.value.problems) == 4


def test_closed_sets_are_case_folded_and_the_checked_form_is_what_is_sent():
    from ml_diagnostics.rules import check
    from ml_diagnostics.rules.azure_ml import AzureMlExtensionSpec

    spec = check(
        AzureMlExtensionSpec,
        {
            **AZURE,
            "cluster": {
                **AKS,
                "kind": "AKS",
                "location": "East US",
                "subscription_id": AKS["subscription_id"].upper(),
            },
        },
        component="AzureMlExtension",
        name="x",
        owner="AzureMlExtensionArgs",
    )
    assert (spec.cluster.kind, spec.cluster.location) == ("aks", "eastus")


# --- the same rule, from a stack file and from a program ---------------------------------------------------

TARGET_GKE = {"name": "train", "project": "acme-ml-dev", "location": "us-central1", "create": True,
              "minMasterVersion": "1.35.1-gke.1396000", "nodePools": [{"name": "cpu", "machineType": "e2-standard-4"}]}  # fmt: skip
TARGET_AZURE = {"name": "aks", "cluster": {"kind": "aks", "subscriptionId": AKS["subscription_id"], "resourceGroup": "rg-ml",
                "name": "aks-ml", "location": "eastus", "nodeCount": 2}, "training": True}  # fmt: skip
TARGET_K8S = {"name": "lab", "context": "lab", "manualInstall": {"jaxVersion": "0.8"}}

# (stack-file key, target, the change, component, Args, the change, stack-file problem, Args problem)
BOTH_WAYS = [
    ("gkeClusters", TARGET_GKE, ("nodePools.0.nodeCount", -1), "GkeCluster", GKE, ("node_pools.0.node_count", -1),
     "gkeClusters[0].nodePools[0].nodeCount: must be 0 or more",
     "GkeClusterArgs.node_pools[0].node_count: must be 0 or more"),
    ("gkeClusters", {**TARGET_GKE, "mode": "managed"}, ("minMasterVersion", "1.30.1-gke.100"), "GkeCluster", {**GKE, "mode": "managed"}, ("min_master_version", "1.30.1-gke.100"),
     "gkeClusters[0].mode: managed ML diagnostics needs GKE >= 1.35.0-gke.3065000, the cluster runs 1.30.1-gke.100; use mode manual or auto, or upgrade the cluster",
     "GkeClusterArgs.mode: managed ML diagnostics needs GKE >= 1.35.0-gke.3065000, the cluster runs 1.30.1-gke.100; use mode manual or auto, or upgrade the cluster"),
    ("gkeClusters", TARGET_GKE, ("location", "mars-1"), "GkeCluster", GKE, ("location", "mars-1"),
     "gkeClusters[0].location: 'mars-1' is not allowed: must be a region (us-central1) or a zone (us-central1-a)",
     "GkeClusterArgs.location: 'mars-1' is not allowed: must be a region (us-central1) or a zone (us-central1-a)"),
    ("kubernetesClusters", {**TARGET_K8S, "diagon": {"enabled": True}}, ("diagon.maxUnavailable", "lots"), "KubernetesCluster", {"context": "lab", **MANUAL, "diagon": {}}, ("diagon.max_unavailable", "lots"),
     "kubernetesClusters[0].diagon.maxUnavailable: must be a positive integer or a percentage like 10%",
     "KubernetesClusterArgs.diagon.max_unavailable: must be a positive integer or a percentage like 10%"),
    ("kubernetesClusters", TARGET_K8S, ("manualInstall.jaxVersion", "0.7"), "KubernetesCluster", {"context": "lab", **MANUAL}, ("manual_install.jax_version", "0.7"),
     "kubernetesClusters[0].manualInstall.jaxVersion: unsupported JAX version '0.7'; supported: 0.8.x, 0.9.x and later (e.g. 0.8.1, 0.9)",
     "KubernetesClusterArgs.manual_install.jax_version: unsupported JAX version '0.7'; supported: 0.8.x, 0.9.x and later (e.g. 0.8.1, 0.9)"),
    ("azureMl", TARGET_AZURE, ("cluster.kind", "eks"), "AzureMlExtension", AZURE, ("cluster.kind", "eks"),
     "azureMl[0].cluster.kind: must be one of 'aks' or 'arc'",
     "AzureMlExtensionArgs.cluster.kind: must be one of 'aks' or 'arc'"),
    ("azureMl", {**TARGET_AZURE, "inference": {"enabled": True, "routerServiceType": "LoadBalancer", "allowInsecureConnections": True}}, ("inference.routerHA", True),
     "AzureMlExtension", {**_with(AZURE, "cluster.node_count", 2), "inference": {"enabled": True, "router_service_type": "LoadBalancer", "allow_insecure_connections": True}}, ("inference.router_ha", True),
     "azureMl[0].inference.routerHA: true needs at least 3 nodes (cluster.nodeCount is 2); set routerHA: false or leave it unset",
     "AzureMlExtensionArgs.inference.router_ha: true needs at least 3 nodes (cluster.node_count is 2); set router_ha: false or leave it unset"),
    ("kubernetesClusters", TARGET_K8S, ("diagon", {"namspace": "x"}), "KubernetesCluster", {"context": "lab", **MANUAL}, ("diagon", {"namspace": "x"}),
     "kubernetesClusters[0].diagon.namspace: unknown key (did you mean 'namespace'?)",
     "KubernetesClusterArgs.diagon.namspace: unknown key (did you mean 'namespace'?)"),
]  # fmt: skip


@pytest.mark.parametrize("case", BOTH_WAYS, ids=[c[6].split(":")[0] for c in BOTH_WAYS])
def test_the_same_bad_value_gets_the_same_rule_from_a_stack_file_and_from_a_program(case):
    kind, target, (tpath, tvalue), component, args, (apath, avalue), stack_problem, args_problem = case
    stack = {f"{NS}:environment": "dev", f"{NS}:{kind}": [_with(target, tpath, tvalue)]}
    with pytest.raises(ConfigError) as e:
        parse(stack)
    assert any(p.startswith(f"{NS}:{stack_problem}") for p in e.value.problems), e.value.problems

    import importlib

    from ml_diagnostics import InvalidArgsError

    cls = getattr(importlib.import_module(f"ml_diagnostics.{MODULES[component]}"), component)
    with pytest.raises(InvalidArgsError) as r:
        cls("x", _with(args, apath, avalue))
    assert any(p.startswith(args_problem) for p in r.value.problems), r.value.problems
    # one rule: the same words once each side's key names are spelled alike
    from pydantic.alias_generators import to_camel

    words = stack_problem.split(": ", 1)[1]
    assert words == _camel_keys(args_problem.split(": ", 1)[1], to_camel)


def _camel_keys(text: str, to_camel: Any) -> str:
    import re

    from ml_diagnostics.rules.base import alias_of

    return re.sub(r"\b[a-z]+(?:_[a-z0-9]+)+\b", lambda m: alias_of(m.group(0)), text)


# --- the typed, documented surface ----------------------------------------------------------------------

CONSUMER = ROOT / "tests" / "data" / "consumer" / "program.py"


def _mypy_strict(*files: Path) -> subprocess.CompletedProcess[str]:
    config = CONSUMER.parent / "mypy.ini"
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--config-file", str(config), *map(str, files)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )


def test_a_consumer_program_type_checks_strictly_with_the_readme_imports(tmp_path: Path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "from ml_diagnostics import ClusterMlDiagnostics, GkeCluster\n"
        'ClusterMlDiagnostics("a", {"mode": "magic"})\n'
        'GkeCluster("b", {"project": "p", "location": "l", "cluster_name": "c", "node_pools": [{"name": "x"}]})\n'
    )
    run = _mypy_strict(CONSUMER, wrong)
    errors = [line.split(": error: ")[1] for line in run.stdout.splitlines() if ": error: " in line]
    assert [
        line for line in run.stdout.splitlines() if line.startswith(str(CONSUMER.relative_to(ROOT)))
    ] == []
    assert errors == [
        'Incompatible types (expression has type "Literal[\'magic\']", TypedDict item "mode" has type '
        "\"Literal['managed', 'manual', 'auto'] | MlDiagnosticsMode\")  [typeddict-item]",
        'Missing key "machine_type" for TypedDict "GkeNodePoolArgs"  [typeddict-item]',
    ], run.stdout


def test_help_of_an_args_and_of_a_component_lists_its_keys_with_their_docs():
    import ml_diagnostics

    text = pydoc.render_doc(ml_diagnostics.DiagonArgs, renderer=pydoc.plaintext)
    assert "Keys:" in text
    assert (
        "max_unavailable (int | str, optional): RollingUpdate maxUnavailable, an IntOrString as Kubernetes takes it: "
        'a count (1) or a percentage ("10%") (default 1).' in text
    )
    assert "image (Input[str], optional): Daemon image; pull policy Always only for :latest." in text
    comp = pydoc.render_doc(ml_diagnostics.Diagon, renderer=pydoc.plaintext)
    assert (
        "Arguments (DiagonArgs):" in comp
        and "namespace (str, optional): Namespace of the daemon (default diagon)." in comp
    )
    assert "Outputs:" in comp and "daemon_set: The DaemonSet's name (diagon-daemon)." in comp
