"""Self-managed clusters under the mock runtime: every registered input, dependency shape, secrets, managed path."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from ml_diagnostics import compat
from mldiag.engine.runtime import PlanResult, RecordedResource, run_config
from mldiag.plan.cli import critical_path

KEY = "ml-diagnostics:kubernetesClusters"
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: very-secret-token}}]\n"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
OCI = "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm"
JAX_08_ARGS = [
    "--metrics-bind-address=:8443",
    "--health-probe-bind-address=:8081",
    "--sidecar-timeout=65m",
    "--disable-hostname-override",
]
# The manual install's webhook release: helm upgrade --install mldiagnostics-injection-webhook
# --namespace=gke-mldiagnostics --version 0.25.0 oci://...
INJECTION_WEBHOOK_RELEASE = {
    "name": "mldiagnostics-injection-webhook",
    "chart": f"{OCI}/mldiagnostics-injection-webhook",
    "version": "0.25.0",
    "namespace": "gke-mldiagnostics",
    "values": {},
    "compat": "true",
}

# The seed's diagon-daemonset.yaml, verbatim (SERVICE_ACCOUNT_NAME is the placeholder the docs leave to fill).
SEED_MANIFEST = yaml.safe_load(
    textwrap.dedent(
        """
        apiVersion: apps/v1
        kind: DaemonSet
        metadata:
          name: diagon-daemon
          namespace: diagon
          labels:
            app.kubernetes.io/name: diagon-daemon
            app.kubernetes.io/part-of: diagon
        spec:
          selector:
            matchLabels:
              name: diagon-daemon
          template:
            metadata:
              labels:
                name: diagon-daemon
            spec:
              hostNetwork: true
              dnsPolicy: ClusterFirstWithHostNet
              serviceAccountName: SERVICE_ACCOUNT_NAME
              terminationGracePeriodSeconds: 30
              tolerations:
              - operator: Exists
                effect: NoSchedule
              - operator: Exists
                effect: NoExecute
              containers:
              - name: diagon-daemon
                image: us-central1-docker.pkg.dev/hypercomputediagon-release/daemon-docker/mldiagnostics-daemon:latest
                imagePullPolicy: Always
                command:
                - /mldiagnostics_extension_files/bin/mldiagnostics_extension
                - -standalone=true
                - -channel=hypercomputecluster.googleapis.com/diagnostics
                - -alsologtostderr=true
                securityContext:
                  privileged: true
                resources:
                  requests:
                    cpu: 10m
                    memory: 32Mi
                  limits:
                    memory: 256Mi  # No CPU limit.
        """
    )
)
ACCELERATOR_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "Exists"}]},
                {"matchExpressions": [{"key": "cloud.google.com/gke-tpu-accelerator", "operator": "Exists"}]},
                {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "Exists"}]},
            ]
        }
    }
}


def cluster(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "lab",
        "kubeconfig": KUBECONFIG,
        "context": "lab-admin",
        "manualInstall": {"jaxVersion": "0.8.1"},
        "diagon": {"enabled": True},
    }
    base.update(over)
    return base


def run(*clusters: dict[str, Any]) -> PlanResult:
    return run_config({"ml-diagnostics:environment": "dev", KEY: list(clusters)}, [KEY])


def by_name(result: PlanResult, name: str) -> RecordedResource:
    found = [r for r in result.resources if r.name == name]
    assert len(found) == 1, [r.name for r in result.resources]
    return found[0]


@pytest.fixture(scope="module")
def manual() -> PlanResult:
    return run(
        cluster(
            workloadNamespaces=[
                {"name": "ai-workloads", "create": True, "labels": {"team": "ml"}},
                {"name": "default"},
            ]
        )
    )


def test_resource_tree(manual):
    assert sorted((r.type, r.name) for r in manual.resources) == sorted(
        [
            ("mldiag:index:KubernetesCluster", "k8s-lab"),
            ("pulumi:providers:kubernetes", "k8s-lab-provider"),
            ("mldiag:index:ClusterMlDiagnostics", "k8s-lab-mldiag"),
            ("mldiag:index:CertManager", "k8s-lab-mldiag-cert-manager"),
            (RELEASE, "k8s-lab-mldiag-cert-manager-release"),
            ("mldiag:index:MlDiagnosticsManual", "k8s-lab-mldiag-manual"),
            (NAMESPACE, "k8s-lab-mldiag-manual-namespace"),
            (RELEASE, "k8s-lab-mldiag-manual-injection-webhook"),
            (RELEASE, "k8s-lab-mldiag-manual-connection-operator"),
            ("mldiag:index:WorkloadOptIn", "k8s-lab-mldiag-opt-in"),
            (NAMESPACE, "k8s-lab-mldiag-opt-in-ai-workloads"),
            ("kubernetes:core/v1:NamespacePatch", "k8s-lab-mldiag-opt-in-default"),
            ("mldiag:index:Diagon", "k8s-lab-mldiag-diagon"),
            (NAMESPACE, "k8s-lab-mldiag-diagon-namespace"),
            ("kubernetes:core/v1:ServiceAccount", "k8s-lab-mldiag-diagon-service-account"),
            (DAEMONSET, "k8s-lab-mldiag-diagon-daemonset"),
        ]
    )
    # Every child is parented within the target's component tree.
    urns = {r.urn: r for r in manual.resources}
    for r in manual.resources:
        if r.name != "k8s-lab":
            assert r.parent in urns, r.name


def test_every_kubernetes_resource_uses_the_target_provider(manual):
    provider = by_name(manual, "k8s-lab-provider")
    k8s = [r for r in manual.resources if r.type.startswith("kubernetes:")]
    assert len(k8s) == 9
    assert {r.provider for r in k8s} == {provider.urn}


def test_kubeconfig_is_secret(manual):
    provider = by_name(manual, "k8s-lab-provider")
    assert provider.inputs == {"kubeconfig": "[secret]", "context": "lab-admin"}
    assert (
        provider.unmasked_inputs["kubeconfig"] == KUBECONFIG.strip()
    )  # config strips surrounding whitespace
    assert "very-secret-token" not in repr(manual.outputs) + repr(manual.unmasked_outputs)


def test_context_only_target_has_no_kubeconfig_input():
    result = run(cluster(kubeconfig=None, diagon={"enabled": False}) | {"kubeconfig": None})
    assert by_name(result, "k8s-lab-provider").inputs == {"context": "lab-admin"}


def test_cert_manager_release(manual):
    assert by_name(manual, "k8s-lab-mldiag-cert-manager-release").inputs == {
        "name": "cert-manager",
        "chart": "cert-manager",
        "version": "v1.13.0",
        "repositoryOpts": {"repo": "https://charts.jetstack.io"},
        "namespace": "cert-manager",
        "createNamespace": True,
        "timeout": 600,
        "values": {"installCRDs": True, "global": {"leaderElection": {"namespace": "cert-manager"}}},
        "compat": "true",
    }


def test_manual_namespace_records_cert_manager_release(manual):
    assert by_name(manual, "k8s-lab-mldiag-manual-namespace").inputs == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "gke-mldiagnostics",
            "annotations": {"ml-diagnostics.dev/cert-manager": "release"},
        },
    }


def test_injection_webhook_release(manual):
    assert by_name(manual, "k8s-lab-mldiag-manual-injection-webhook").inputs == INJECTION_WEBHOOK_RELEASE


def test_connection_operator_release_jax_08(manual):
    assert by_name(manual, "k8s-lab-mldiag-manual-connection-operator").inputs == {
        "name": "mldiagnostics-connection-operator",
        "chart": f"{OCI}/mldiagnostics-connection-operator",
        "version": "0.24.0",
        "namespace": "gke-mldiagnostics",
        "values": {"mldiagnosticsConnectionOperator": {"controller": {"args": JAX_08_ARGS}}},
        "compat": "true",
    }


def test_dependency_shape(manual):
    cm = by_name(manual, "k8s-lab-mldiag-cert-manager-release")
    ns = by_name(manual, "k8s-lab-mldiag-manual-namespace")
    webhook = by_name(manual, "k8s-lab-mldiag-manual-injection-webhook")
    operator = by_name(manual, "k8s-lab-mldiag-manual-connection-operator")
    assert cm.dependencies == []
    # Each waits for the cert-manager release itself (not its component) and the namespace; not each other.
    assert sorted(webhook.dependencies) == sorted([cm.urn, ns.urn])
    assert sorted(operator.dependencies) == sorted([cm.urn, ns.urn])
    releases = {r.urn for r in manual.by_type(RELEASE)}
    diagon = [r for r in manual.resources if r.name.startswith("k8s-lab-mldiag-diagon-")]
    assert len(diagon) == 3
    for r in diagon:
        assert not set(r.dependencies) & releases, r.name
    opt_in = [r for r in manual.resources if r.name.startswith("k8s-lab-mldiag-opt-in-")]
    assert [r.dependencies for r in opt_in] == [[], []]


def test_critical_path_is_the_minimum(manual):
    # provider -> diagon Namespace -> DaemonSet (the ServiceAccount deploys beside it), and
    # provider -> cert-manager release -> webhook/operator: both chains are 3, the floor for this ordering.
    path = critical_path(manual.resources)
    assert path["depth"] == 3
    ds = by_name(manual, "k8s-lab-mldiag-diagon-daemonset")
    sa = by_name(manual, "k8s-lab-mldiag-diagon-service-account")
    assert sa.urn not in ds.dependencies
    without_diagon = run(cluster(diagon={"enabled": False}))
    path = critical_path(without_diagon.resources)
    assert path["depth"] == 3
    assert path["urns"][0].endswith("::k8s-lab-provider")
    assert path["urns"][-1].split("::")[-1] in (
        "k8s-lab-mldiag-manual-injection-webhook",
        "k8s-lab-mldiag-manual-connection-operator",
    )


def test_daemonset_is_the_seed_manifest_plus_the_additions(manual):
    expected = copy.deepcopy(SEED_MANIFEST)
    pod = expected["spec"]["template"]["spec"]
    pod["serviceAccountName"] = "diagon-daemon"
    # Self-managed default: no node selection, as the vendor manifest (no affinity, no nodeSelector).
    expected["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    ds = by_name(manual, "k8s-lab-mldiag-diagon-daemonset")
    assert ds.inputs == expected
    # Spelled out, the fields the issue names.
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    c = ds.inputs["spec"]["template"]["spec"]["containers"][0]
    assert c["securityContext"] == {"privileged": True}
    assert c["resources"] == {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "256Mi"}}
    assert c["imagePullPolicy"] == "Always"


def test_diagon_namespace_and_service_account(manual):
    ns = by_name(manual, "k8s-lab-mldiag-diagon-namespace")
    sa = by_name(manual, "k8s-lab-mldiag-diagon-service-account")
    ds = by_name(manual, "k8s-lab-mldiag-diagon-daemonset")
    assert ns.inputs["metadata"] == {
        "name": "diagon",
        "labels": {
            "app.kubernetes.io/part-of": "diagon",
            # Pod Security admission admits a privileged hostNetwork daemon here, whatever the cluster default
            "pod-security.kubernetes.io/enforce": "privileged",
            "pod-security.kubernetes.io/audit": "privileged",
            "pod-security.kubernetes.io/warn": "privileged",
        },
    }
    assert sa.inputs["metadata"] == {
        "name": "diagon-daemon",
        "namespace": "diagon",
        "labels": {"app.kubernetes.io/part-of": "diagon"},
    }
    assert sa.dependencies == [ns.urn]
    assert ds.dependencies == [ns.urn]  # not the ServiceAccount: they deploy in parallel


def test_diagon_pinned_image_custom_namespace_workload_identity_and_node_selector():
    image = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
    result = run(
        cluster(
            diagon={
                "enabled": True,
                "namespace": "kube-diagnostics",
                "image": image,
                "serviceAccount": "diagon",
                "gcpServiceAccount": "diagon-daemon@my-project.iam.gserviceaccount.com",
                "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice"},
                "maxUnavailable": "25%",
            }
        )
    )
    sa = by_name(result, "k8s-lab-mldiag-diagon-service-account")
    assert sa.inputs["metadata"] == {
        "name": "diagon",
        "namespace": "kube-diagnostics",
        "labels": {"app.kubernetes.io/part-of": "diagon"},
        "annotations": {"iam.gke.io/gcp-service-account": "diagon-daemon@my-project.iam.gserviceaccount.com"},
    }
    ds = by_name(result, "k8s-lab-mldiag-diagon-daemonset").inputs
    assert ds["metadata"]["namespace"] == "kube-diagnostics"
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%"},
    }
    pod = ds["spec"]["template"]["spec"]
    assert "affinity" not in pod
    assert pod["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice"}
    assert pod["serviceAccountName"] == "diagon"
    assert pod["containers"][0]["image"] == image
    assert pod["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_diagon_digest_pull_policy_and_every_node():
    image = "us-docker.pkg.dev/p/daemon/diagon-daemon@sha256:" + "0" * 64
    result = run(cluster(diagon={"enabled": True, "image": image, "acceleratorNodeLabels": []}))
    pod = by_name(result, "k8s-lab-mldiag-diagon-daemonset").inputs["spec"]["template"]["spec"]
    assert "affinity" not in pod and "nodeSelector" not in pod
    assert pod["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_self_managed_diagon_runs_on_the_nodes_the_user_names():
    # Self-managed GPU nodes often lack GKE's labels: the user names the labels theirs carry.
    result = run(cluster(diagon={"enabled": True, "acceleratorNodeLabels": ["nvidia.com/gpu.present"]}))
    pod = by_name(result, "k8s-lab-mldiag-diagon-daemonset").inputs["spec"]["template"]["spec"]
    assert pod["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "Exists"}]}
                ]
            }
        }
    }


def managed_gke(diagon: dict[str, Any]) -> dict[str, Any]:
    """An existing GKE cluster `g` in managed mode, with these diagon settings."""
    return {
        "name": "g",
        "project": "acme-ml-dev",
        "location": "us-central1-a",
        "currentVersion": "1.35.1-gke.1396000",
        "mode": "managed",
        "diagon": diagon,
    }


def test_gke_diagon_keeps_the_accelerator_default():
    gke = managed_gke({"enabled": True})
    result = run_config({"ml-diagnostics:environment": "dev", "ml-diagnostics:gkeClusters": [gke]}, [])
    pod = by_name(result, "gke-g-mldiag-diagon-daemonset").inputs["spec"]["template"]["spec"]
    assert pod["affinity"] == ACCELERATOR_AFFINITY


def test_changing_the_image_only_changes_the_image():
    ds = "k8s-lab-mldiag-diagon-daemonset"
    a = by_name(run(cluster()), ds).inputs
    b = by_name(run(cluster(diagon={"enabled": True, "image": "r.example/diagon:v2.1.0"})), ds).inputs
    ca, cb = a["spec"]["template"]["spec"]["containers"][0], b["spec"]["template"]["spec"]["containers"][0]
    assert (ca["image"], ca["imagePullPolicy"]) == (compat.DIAGON_DEFAULT_IMAGE, "Always")
    assert (cb["image"], cb["imagePullPolicy"]) == ("r.example/diagon:v2.1.0", "IfNotPresent")
    for c in (ca, cb):
        del c["image"], c["imagePullPolicy"]
    assert a == b


def test_diagon_in_an_existing_namespace():
    result = run(cluster(diagon={"enabled": True, "namespace": "kube-system", "createNamespace": False}))
    assert "k8s-lab-mldiag-diagon-namespace" not in [r.name for r in result.resources]
    sa = by_name(result, "k8s-lab-mldiag-diagon-service-account")
    ds = by_name(result, "k8s-lab-mldiag-diagon-daemonset")
    assert sa.inputs["metadata"]["namespace"] == ds.inputs["metadata"]["namespace"] == "kube-system"
    assert (sa.dependencies, ds.dependencies) == ([], [])


def test_diagon_disabled_creates_nothing_of_it():
    result = run(cluster(diagon={"enabled": False}))
    assert not result.by_type(DAEMONSET)
    assert not result.by_type("mldiag:index:Diagon")


def test_preinstalled_cert_manager():
    result = run(cluster(certManager={"enabled": False}))
    assert not result.by_type("mldiag:index:CertManager")
    assert sorted(r.inputs["name"] for r in result.by_type(RELEASE)) == [
        "mldiagnostics-connection-operator",
        "mldiagnostics-injection-webhook",
    ]
    ns = by_name(result, "k8s-lab-mldiag-manual-namespace")
    assert ns.inputs["metadata"]["annotations"] == {"ml-diagnostics.dev/cert-manager": "preinstalled"}
    for r in result.by_type(RELEASE):
        assert r.dependencies == [ns.urn]


def test_cert_manager_from_v1_15_uses_crds_values_and_merges_overrides():
    result = run(
        cluster(
            certManager={
                "version": "v1.16.2",
                "repository": "https://mirror.example/jetstack",
                "values": {"crds": {"keep": False}, "replicaCount": 2},
            }
        )
    )
    rel = by_name(result, "k8s-lab-mldiag-cert-manager-release").inputs
    assert rel["version"] == "v1.16.2"
    assert rel["repositoryOpts"] == {"repo": "https://mirror.example/jetstack"}
    assert rel["values"] == {
        "crds": {"enabled": True, "keep": False},
        "global": {"leaderElection": {"namespace": "cert-manager"}},
        "replicaCount": 2,
    }


def test_jax_09_keeps_chart_args_and_overrides_apply():
    result = run(cluster(manualInstall={"jaxVersion": "0.9.0"}))
    op = by_name(result, "k8s-lab-mldiag-manual-connection-operator").inputs
    assert (op["version"], op["values"]) == ("0.24.0", {})

    result = run(
        cluster(
            manualInstall={
                "jaxVersion": "0.9",
                "repository": "oci://europe-docker.pkg.dev/mirror/helm",
                "injectionWebhook": {"version": "0.26.0", "values": {"replicas": 2}},
                "connectionOperator": {
                    "version": "0.25.1",
                    "args": ["--sidecar-timeout=90m"],
                    "values": {"mldiagnosticsConnectionOperator": {"controller": {"replicas": 2}}},
                },
            }
        )
    )
    webhook = by_name(result, "k8s-lab-mldiag-manual-injection-webhook").inputs
    op = by_name(result, "k8s-lab-mldiag-manual-connection-operator").inputs
    assert (webhook["chart"], webhook["version"], webhook["values"]) == (
        "oci://europe-docker.pkg.dev/mirror/helm/mldiagnostics-injection-webhook",
        "0.26.0",
        {"replicas": 2},
    )
    assert "repositoryOpts" not in webhook
    assert (op["chart"], op["version"]) == (
        "oci://europe-docker.pkg.dev/mirror/helm/mldiagnostics-connection-operator",
        "0.25.1",
    )
    assert op["values"] == {
        "mldiagnosticsConnectionOperator": {"controller": {"replicas": 2, "args": ["--sidecar-timeout=90m"]}}
    }


def test_https_chart_repository_uses_repository_opts():
    result = run(
        cluster(
            manualInstall={
                "jaxVersion": "0.8.1",
                "repository": "https://charts.internal.example/mldiag",
                "connectionOperator": {"chart": "oci://other.example/helm/operator-fork"},
            }
        )
    )
    webhook = by_name(result, "k8s-lab-mldiag-manual-injection-webhook").inputs
    assert webhook["chart"] == "mldiagnostics-injection-webhook"
    assert webhook["repositoryOpts"] == {"repo": "https://charts.internal.example/mldiag"}
    op = by_name(result, "k8s-lab-mldiag-manual-connection-operator").inputs
    assert op["chart"] == "oci://other.example/helm/operator-fork"
    assert "repositoryOpts" not in op


def test_workload_opt_in(manual):
    created = by_name(manual, "k8s-lab-mldiag-opt-in-ai-workloads")
    assert created.type == NAMESPACE
    assert created.inputs == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ai-workloads", "labels": {"team": "ml", "managed-mldiagnostics-gke": "true"}},
    }
    patch = by_name(manual, "k8s-lab-mldiag-opt-in-default")
    # Server-side apply of the opt-in label only: every other label on the namespace is left alone.
    assert patch.inputs == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "default",
            "labels": {"managed-mldiagnostics-gke": "true"},
            "annotations": {"pulumi.com/patchForce": "true"},
        },
    }


def test_outputs(manual):
    assert manual.outputs["kubernetesCluster:lab"] == {"mode": "manual", "workloadMonitoring": False}


def test_auto_mode_is_manual_on_self_managed():
    result = run(cluster(mode="auto", diagon={"enabled": False}))
    assert result.outputs["kubernetesCluster:lab"] == {"mode": "manual", "workloadMonitoring": False}
    assert len(result.by_type(RELEASE)) == 3


def test_two_targets_get_their_own_providers():
    result = run(cluster(), cluster(name="edge", kubeconfig=None, context="edge"))
    providers = result.by_type("pulumi:providers:kubernetes")
    assert sorted(p.name for p in providers) == ["k8s-edge-provider", "k8s-lab-provider"]
    edge_provider = by_name(result, "k8s-edge-provider").urn
    edge = [
        r for r in result.resources if r.name.startswith("k8s-edge-") and r.type.startswith("kubernetes:")
    ]
    assert len(edge) == 7 and {r.provider for r in edge} == {edge_provider}


MANAGED_PROGRAM = """
import pulumi
import pulumi_kubernetes as kubernetes
from ml_diagnostics.cluster_ml_diagnostics import ClusterMlDiagnostics

provider = kubernetes.Provider("gke-provider", context="gke")
c = ClusterMlDiagnostics(
    "gke-mldiag",
    {
        "mode": "managed",
        "workload_namespaces": [{"name": "ai", "create": True}],
        "diagon": {},
        "gke_version": "1.36.4-gke.1247000",
    },
    pulumi.ResourceOptions(providers=[provider]),
)
pulumi.export("mode", c.mode)
pulumi.export("workloadMonitoring", c.workload_monitoring)
"""


def test_managed_path_creates_no_releases(tmp_path: Path):
    program = tmp_path / "__main__.py"
    program.write_text(MANAGED_PROGRAM)
    result = run_config({}, program=program)
    assert not result.by_type(RELEASE)
    assert not result.by_type("mldiag:index:MlDiagnosticsManual")
    assert sorted(r.name for r in result.by_type(NAMESPACE)) == [
        "gke-mldiag-diagon-namespace",
        "gke-mldiag-opt-in-ai",
    ]
    assert len(result.by_type(DAEMONSET)) == 1
    assert result.outputs == {"mode": "managed", "workloadMonitoring": True}
    comp = result.one("mldiag:index:ClusterMlDiagnostics")
    assert comp.parent is None or "Stack" in comp.parent


def test_mode_auto_resolves_by_the_gke_version_and_an_unknown_mode_is_refused(tmp_path: Path):
    program = tmp_path / "__main__.py"
    program.write_text(MANAGED_PROGRAM.replace('"mode": "managed"', '"mode": "auto"'))
    result = run_config({}, program=program)
    assert result.outputs["mode"] == "managed" and not result.by_type(RELEASE)
    program.write_text(MANAGED_PROGRAM.replace('"mode": "managed"', '"mode": "magic"'))
    with pytest.raises(ValueError) as e:
        run_config({}, program=program)
    assert str(e.value) == (
        "invalid arguments of ClusterMlDiagnostics 'gke-mldiag' (1 problem(s)):\n"
        "  - ClusterMlDiagnosticsArgs.mode: must be one of 'managed', 'manual' or 'auto'"
    )


def test_cert_manager_from_v1_15_honours_a_deprecated_install_crds_and_warns(monkeypatch):
    """installCRDs alone is honoured by the v1.15+ chart: the program sends it as given and adds no
    crds.enabled (the chart would refuse both), with a deprecation warning."""
    from ml_diagnostics import cert_manager

    warned: list[str] = []
    monkeypatch.setattr(cert_manager.pulumi.log, "warn", lambda msg, *a, **k: warned.append(msg))
    target = cluster(certManager={"version": "v1.15.3", "values": {"installCRDs": True}})
    release = by_name(run(target), "k8s-lab-mldiag-cert-manager-release")
    assert release.inputs["values"] == {
        "installCRDs": True,
        "global": {"leaderElection": {"namespace": "cert-manager"}},
    }
    assert warned == [
        "cert-manager v1.15.3: installCRDs is deprecated (still honoured); set crds.enabled: true and "
        "crds.keep: true instead"
    ]
