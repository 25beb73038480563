"""Adopting what the vendor procedure installed: each `adopt: true` part registers the exact import id its
provider expects, with inputs equal to what the vendor's commands produced; `mldiag/plan/import_file.py` writes
the same ids for `pulumi import --file`."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest

from mldiag.engine.runtime import ROOT
from mldiag.plan import import_file
from mldiag.plan.cli import build_report
from mldiag.report import render as plan_render
from program.config import ConfigError, parse
from tests.fixtures.components import run_with_options, stack_config
from tests.test_kubernetes_components import (
    INJECTION_WEBHOOK_RELEASE,
    JAX_08_ARGS,
    KUBECONFIG,
    OCI,
    SEED_MANIFEST,
    managed_gke,
)

NS = "ml-diagnostics"
SUB = "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f"
RELEASE = "kubernetes:helm.sh/v3:Release"

# The self-managed cluster after the vendor procedure: helm install cert-manager ...; helm upgrade --install
# the webhook (0.25.0) and the operator (0.24.0, JAX 0.8 args); kubectl create namespace ai-workloads +
# kubectl label namespace ai-workloads managed-mldiagnostics-gke=true; kubectl create namespace diagon;
# kubectl create serviceaccount diagon-daemon -n diagon; kubectl apply -f diagon-daemonset.yaml.
ADOPTED_K8S: dict[str, Any] = {
    "name": "lab",
    "kubeconfig": KUBECONFIG,
    "workloadNamespaces": [{"name": "ai-workloads", "create": True, "adopt": True}],
    "certManager": {"adopt": True},
    "manualInstall": {"jaxVersion": "0.8", "adopt": True},
    "diagon": {"enabled": True, "adopt": True},
}


def run(env: str = "dev", **kinds: list[dict[str, Any]]):
    config = {f"{NS}:environment": env, **{f"{NS}:{k}": v for k, v in kinds.items()}}
    secret = [f"{NS}:kubernetesClusters"] if "kubernetesClusters" in kinds else []
    return run_with_options(config, secret, stack=env)


@pytest.fixture(scope="module")
def k8s():
    return run(kubernetesClusters=[ADOPTED_K8S])


def imported(registered) -> dict[str, str]:
    return {n: r.import_id for n, r in registered.items() if r.import_id}


def test_every_adopted_kubernetes_part_carries_its_import_id(k8s):
    _, registered = k8s
    assert imported(registered) == {
        "k8s-lab-mldiag-cert-manager-release": "cert-manager/cert-manager",
        "k8s-lab-mldiag-manual-namespace": "gke-mldiagnostics",
        "k8s-lab-mldiag-manual-injection-webhook": "gke-mldiagnostics/mldiagnostics-injection-webhook",
        "k8s-lab-mldiag-manual-connection-operator": "gke-mldiagnostics/mldiagnostics-connection-operator",
        "k8s-lab-mldiag-opt-in-ai-workloads": "ai-workloads",
        "k8s-lab-mldiag-diagon-namespace": "diagon",
        "k8s-lab-mldiag-diagon-service-account": "diagon/diagon-daemon",
        "k8s-lab-mldiag-diagon-daemonset": "diagon/diagon-daemon",
    }


def by_name(result, name: str):
    return next(r for r in result.resources if r.name == name)


def test_adopted_releases_equal_the_vendor_helm_commands(k8s):
    result, _ = k8s
    # helm install cert-manager jetstack/cert-manager --namespace cert-manager --create-namespace
    #   --version v1.13.0 --set installCRDs=true --set global.leaderElection.namespace=cert-manager --timeout 10m
    cm = by_name(result, "k8s-lab-mldiag-cert-manager-release").inputs
    assert (cm["name"], cm["namespace"], cm["chart"], cm["repositoryOpts"], cm["version"]) == (
        "cert-manager",
        "cert-manager",
        "cert-manager",
        {"repo": "https://charts.jetstack.io"},
        "v1.13.0",
    )
    assert cm["values"] == {"installCRDs": True, "global": {"leaderElection": {"namespace": "cert-manager"}}}
    # helm upgrade --install mldiagnostics-injection-webhook --namespace=gke-mldiagnostics --version 0.25.0 oci://...
    wh = by_name(result, "k8s-lab-mldiag-manual-injection-webhook").inputs
    assert wh == INJECTION_WEBHOOK_RELEASE
    # JAX 0.8.x: --version 0.24.0 --set 'mldiagnosticsConnectionOperator.controller.args={...}'
    op = by_name(result, "k8s-lab-mldiag-manual-connection-operator").inputs
    assert (op["name"], op["chart"], op["version"], op["namespace"]) == (
        "mldiagnostics-connection-operator",
        f"{OCI}/mldiagnostics-connection-operator",
        "0.24.0",
        "gke-mldiagnostics",
    )
    assert op["values"] == {"mldiagnosticsConnectionOperator": {"controller": {"args": JAX_08_ARGS}}}
    # --create-namespace made a bare namespace; cert-manager is a release here, so no mark is declared.
    assert by_name(result, "k8s-lab-mldiag-manual-namespace").inputs["metadata"] == {
        "name": "gke-mldiagnostics"
    }


def test_adopted_namespace_equals_kubectl_create_and_label(k8s):
    result, _ = k8s
    assert by_name(result, "k8s-lab-mldiag-opt-in-ai-workloads").inputs["metadata"] == {
        "name": "ai-workloads",
        "labels": {"managed-mldiagnostics-gke": "true"},
    }


def test_adopted_diagon_equals_the_vendor_manifest(k8s):
    result, _ = k8s
    expected = copy.deepcopy(SEED_MANIFEST)
    expected["spec"]["template"]["spec"]["serviceAccountName"] = "diagon-daemon"
    # The API server's own DaemonSet default, declared so the program states it.
    expected["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    assert by_name(result, "k8s-lab-mldiag-diagon-daemonset").inputs == expected
    # the manifest's namespace, plus the Pod Security labels that admit the daemon (the update after the import)
    assert by_name(result, "k8s-lab-mldiag-diagon-namespace").inputs["metadata"] == {
        "name": "diagon",
        "labels": {f"pod-security.kubernetes.io/{m}": "privileged" for m in ("enforce", "audit", "warn")},
    }
    assert by_name(result, "k8s-lab-mldiag-diagon-service-account").inputs["metadata"] == {
        "name": "diagon-daemon",
        "namespace": "diagon",
    }


def test_adopted_diagon_in_kube_system_with_the_doc_update_image():
    # The doc's update step: kubectl set image ... diagon-daemon:v2.1.0 --namespace=kube-system.
    image = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
    target = {
        **ADOPTED_K8S,
        "diagon": {
            "enabled": True,
            "adopt": True,
            "namespace": "kube-system",
            "createNamespace": False,
            "image": image,
        },
    }
    result, registered = run(kubernetesClusters=[target])
    assert registered["k8s-lab-mldiag-diagon-daemonset"].import_id == "kube-system/diagon-daemon"
    assert registered["k8s-lab-mldiag-diagon-service-account"].import_id == "kube-system/diagon-daemon"
    assert "k8s-lab-mldiag-diagon-namespace" not in registered
    ds = by_name(result, "k8s-lab-mldiag-diagon-daemonset").inputs
    assert ds["metadata"]["namespace"] == "kube-system"
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == image


def test_adopted_diagon_on_gke_follows_the_manifest_placement():
    gke = managed_gke({"enabled": True, "adopt": True})
    result, registered = run(gkeClusters=[gke])
    pod = by_name(result, "gke-g-mldiag-diagon-daemonset").inputs["spec"]["template"]["spec"]
    assert "affinity" not in pod and "nodeSelector" not in pod
    assert registered["gke-g-mldiag-diagon-daemonset"].import_id == "diagon/diagon-daemon"


def test_preinstalled_cert_manager_mark_is_the_update_after_the_import():
    target = {**ADOPTED_K8S, "certManager": {"enabled": False}}
    result, registered = run(kubernetesClusters=[target])
    assert registered["k8s-lab-mldiag-manual-namespace"].import_id == "gke-mldiagnostics"
    assert by_name(result, "k8s-lab-mldiag-manual-namespace").inputs["metadata"] == {
        "name": "gke-mldiagnostics",
        "annotations": {"ml-diagnostics.dev/cert-manager": "preinstalled"},
    }


def test_adopted_azure_extension_and_relay_carry_their_arm_ids():
    arc = {
        "name": "arc-train",
        "extensionName": "azureml-train",
        "adopt": True,
        "cluster": {
            "kind": "arc",
            "subscriptionId": SUB,
            "resourceGroup": "rg-mldiag-staging",
            "name": "arc-lab-gpu",
            "location": "koreacentral",
            "nodeCount": 3,
        },
        "training": True,
    }
    _, registered = run(azureMl=[arc])
    relay = (
        f"/subscriptions/{SUB}/resourceGroups/rg-mldiag-staging/providers/Microsoft.Relay/namespaces/"
        "arclabgpu3f2b7c1e8d4a4b6e9c0f1a2b3c4d5e6frgm7d2124"
    )
    assert imported(registered) == {
        "azureml-arc-train-relay": relay,
        "azureml-arc-train-relay-hc": f"{relay}/hybridConnections/arc-lab-gpu",
        "azureml-arc-train-relay-rule": f"{relay}/hybridConnections/arc-lab-gpu/authorizationRules/azureml_rw",
        "azureml-arc-train-extension": (
            f"/subscriptions/{SUB}/resourceGroups/rg-mldiag-staging/providers/Microsoft.Kubernetes/"
            "connectedClusters/arc-lab-gpu/providers/Microsoft.KubernetesConfiguration/extensions/azureml-train"
        ),
    }


def test_adopted_model_development_cluster_is_taken_over_by_create_not_imported():
    config, secrets = stack_config("dev")
    mdc = json.loads(json.dumps(config[f"{NS}:modelDevelopmentClusters"]))
    mdc[0]["adopt"] = True
    result, registered = run(modelDevelopmentClusters=mdc)
    # A dynamic resource cannot be imported (the engine's import Read has no pickled provider): the
    # provider's create takes the cluster over instead (tests/test_model_development_provider.py).
    assert imported(registered) == {}
    assert by_name(result, "mdc-cpu-cluster").inputs["adopt"] is True
    table = plan_render.render(build_report(result, []), "table")
    assert "mdc-cpu-cluster  [adopt: create takes over the existing one]" in table


def test_adopt_needs_something_to_adopt():
    target = {
        **ADOPTED_K8S,
        "workloadNamespaces": [{"name": "default", "adopt": True}],
        "certManager": {"enabled": False, "adopt": True},
    }
    with pytest.raises(ConfigError) as e:
        parse(
            {f"{NS}:environment": "dev", f"{NS}:kubernetesClusters": [target]}, [f"{NS}:kubernetesClusters"]
        )
    assert e.value.problems == [
        f"{NS}:kubernetesClusters[0].certManager.adopt: needs enabled: true (with enabled: false nothing is "
        "managed to adopt)",
        f"{NS}:kubernetesClusters[0].workloadNamespaces[0].adopt: needs create: true (adopt takes ownership of "
        "the namespace; with create: false it is only labelled, which needs no adoption)",
    ]


def test_staging_stack_adopts_a_manual_install_and_the_import_file_matches():
    config, secrets = stack_config("staging")
    result, registered = run_with_options(config, secrets, stack="staging")
    ids = imported(registered)
    assert ids  # the staging example adopts a manual install
    doc = import_file.import_file(result, registered)
    entries = {e["name"]: e for e in doc["resources"]}
    # Same resources, same ids as the program's `import_` options.
    assert {n: e["id"] for n, e in entries.items() if not e.get("component")} == ids
    urns = {r.name: r for r in result.resources}
    for name, entry in entries.items():
        r = urns[name]
        assert entry["type"] == r.type
        if "parent" in entry:
            assert urns[entry["parent"]].urn == r.parent
            assert entries[entry["parent"]].get("component") is True or "id" in entries[entry["parent"]]
        if "provider" in entry:
            assert doc["nameTable"][entry["provider"]] == r.provider


def test_import_file_command(tmp_path, capsys):
    out = tmp_path / "import.json"
    proc = subprocess.run(
        [sys.executable, "-m", "mldiag.plan.import_file", "staging", "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    config, secrets = stack_config("staging")
    assert doc == import_file.import_file(*run_with_options(config, secrets, stack="staging"))
    names = {e["name"]: e for e in doc["resources"]}
    assert names["k8s-onprem-gpu-mldiag-manual-injection-webhook"] == {
        "type": "kubernetes:helm.sh/v3:Release",
        "name": "k8s-onprem-gpu-mldiag-manual-injection-webhook",
        "id": "gke-mldiagnostics/mldiagnostics-injection-webhook",
        "parent": "k8s-onprem-gpu-mldiag-manual",
        "provider": "k8s-onprem-gpu-provider",
    }
    assert names["k8s-onprem-gpu-mldiag-manual"] == {
        "type": "mldiag:index:MlDiagnosticsManual",
        "name": "k8s-onprem-gpu-mldiag-manual",
        "component": True,
        "parent": "k8s-onprem-gpu-mldiag",
    }
    assert doc["nameTable"]["k8s-onprem-gpu-provider"] == (
        "urn:pulumi:staging::ml-diagnostics::mldiag:index:KubernetesCluster$pulumi:providers:kubernetes"
        "::k8s-onprem-gpu-provider"
    )
    assert import_file.main(["nope"]) == 2  # invalid config (README "Exit codes")
    assert "does not exist" in capsys.readouterr().err


def test_import_file_targets_are_the_providers_with_their_parents():
    proc = subprocess.run(
        [sys.executable, "-m", "mldiag.plan.import_file", "staging", "--targets"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    config, secrets = stack_config("staging")
    result, registered = run_with_options(config, secrets, stack="staging")
    doc = import_file.import_file(result, registered)
    targets = import_file.provider_targets(result, doc)
    assert proc.stdout == "".join(f"--target {u}\n" for u in targets)
    by_urn = {r.urn: r for r in result.resources}
    assert set(doc["nameTable"].values()) <= set(targets)
    for urn in targets:
        parent = by_urn[urn].parent
        # every parent but the root stack is targeted, and before its child
        assert parent.endswith("::pulumi:pulumi:Stack::ml-diagnostics-staging") or targets.index(
            parent
        ) < targets.index(urn)
    p = "urn:pulumi:staging::ml-diagnostics::mldiag:index:KubernetesCluster"
    k8s = [u for u in targets if u.startswith(p)]
    assert k8s == [f"{p}::k8s-onprem-gpu", f"{p}$pulumi:providers:kubernetes::k8s-onprem-gpu-provider"]
