"""`kubernetesClusters` config: every bad input is a ConfigError naming its key path and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from program import config
from program.in_cluster import InClusterSettings
from program.kinds.kubernetes.model import KubernetesClusterTarget

KEY = "ml-diagnostics:kubernetesClusters"
P = f"{KEY}[0]"
BASE: dict[str, Any] = {"name": "lab", "context": "lab-admin", "manualInstall": {"jaxVersion": "0.8"}}


def problems(*clusters: dict[str, Any], secret: bool = True) -> list[str]:
    with pytest.raises(config.ConfigError) as e:
        config.parse({"ml-diagnostics:environment": "dev", KEY: list(clusters)}, [KEY] if secret else [])
    return e.value.problems


def parse(*clusters: dict[str, Any]) -> list[KubernetesClusterTarget]:
    return config.parse({"ml-diagnostics:environment": "dev", KEY: list(clusters)}, [KEY]).kubernetes_clusters


def test_defaults():
    (t,) = parse(BASE)
    assert t.mode == "manual" and t.kubeconfig is None and t.context == "lab-admin"
    assert t.workload_namespaces == []
    assert (t.cert_manager.enabled, t.cert_manager.version, t.cert_manager.repository) == (
        True,
        "v1.13.0",
        "https://charts.jetstack.io",
    )
    assert (
        t.manual_install.repository
        == "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm"
    )
    d = t.diagon
    assert (d.enabled, d.namespace, d.service_account, d.gcp_service_account, d.node_selector) == (
        False,
        "diagon",
        "diagon-daemon",
        None,
        None,
    )
    assert (
        d.image
        == "us-central1-docker.pkg.dev/hypercomputediagon-release/daemon-docker/mldiagnostics-daemon:latest"
    )
    assert d.accelerator_node_labels is None  # by platform: DiagonSettings.node_labels


def test_in_cluster_settings_are_inherited_flat():
    assert issubclass(KubernetesClusterTarget, InClusterSettings)
    assert {"workloadNamespaces", "certManager", "manualInstall", "diagon"} <= {
        f.alias for f in KubernetesClusterTarget.model_fields.values()
    }


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            {"mode": "magic"},
            [f"{P}.mode: must be one of 'managed', 'manual' or 'auto'"],
        ),
        (
            {"mode": "managed"},
            [
                f"{P}.mode: managed ML diagnostics exists only on GKE; "
                "self-managed clusters allow: manual, auto (= manual)"
            ],
        ),
        (
            {"manualInstall": {"jaxVersion": "0.7.2"}},
            [
                f"{P}.manualInstall.jaxVersion: unsupported JAX version '0.7.2'; "
                "supported: 0.8.x, 0.9.x and later (e.g. 0.8.1, 0.9)"
            ],
        ),
        (
            {"manualInstall": {}},
            [
                f"{P}.manualInstall.jaxVersion: required for the manual install (it picks the connection-operator "
                "chart and args); supported: 0.8.x, 0.9.x and later"
            ],
        ),
        (
            {"diagon": {"enabled": True, "image": "us-docker.pkg.dev/x/Diagon:v1"}},
            [
                f"{P}.diagon.image: 'us-docker.pkg.dev/x/Diagon:v1' is not a container image reference; "
                "expected REGISTRY/PATH:TAG or REGISTRY/PATH@sha256:<64 hex>"
            ],
        ),
        (
            {
                "workloadNamespaces": [
                    {"name": "a"},
                    {"name": "b", "create": True},
                    {"name": "a", "create": True},
                ]
            },
            [f"{P}.workloadNamespaces[2].name: duplicate namespace 'a' (also workloadNamespaces[0])"],
        ),
        (
            {"workloadNamespaces": [{"name": "AI"}]},
            [
                f"{P}.workloadNamespaces[0].name: 'AI' is not a Kubernetes namespace name: 1-63 lowercase letters, "
                "digits and '-', starting and ending with a letter or digit"
            ],
        ),
        (
            {
                "diagon": {"enabled": True},
                "workloadNamespaces": [
                    {"name": "diagon", "create": True},
                    {"name": "gke-mldiagnostics", "create": True},
                    {"name": "cert-manager"},
                ],
            },
            [
                f"{P}.workloadNamespaces[0].name: namespace 'diagon' is already created by diagon.namespace; "
                "use create: false or another name",
                f"{P}.workloadNamespaces[1].name: namespace 'gke-mldiagnostics' is already created by the manual "
                "install; use create: false or another name",
            ],
        ),
        (
            {"workloadNamespaces": [{"name": "a", "labels": {"x": "y"}}]},
            [
                f"{P}.workloadNamespaces[0].labels: allowed only with create: true (existing namespaces keep their labels)"
            ],
        ),
        (
            {
                "workloadNamespaces": [
                    {"name": "a", "create": True, "labels": {"managed-mldiagnostics-gke": "false"}}
                ]
            },
            [
                f'{P}.workloadNamespaces[0].labels.managed-mldiagnostics-gke: is set to "true" by the component; remove it'
            ],
        ),
        (
            {"manualInstall": {"jaxVersion": "0.8.1", "connectionOperator": {"version": "0.25.0"}}},
            [
                f"{P}.manualInstall.connectionOperator.version: JAX 0.8.x needs connection-operator chart 0.24.0, not 0.25.0"
            ],
        ),
        (
            {"manualInstall": {"jaxVersion": "0.9", "connectionOperator": {"version": "0.23.0"}}},
            [
                f"{P}.manualInstall.connectionOperator.version: JAX 0.9.x and later needs connection-operator "
                "chart 0.24.0 or later, not 0.23.0"
            ],
        ),
        (
            {"manualInstall": {"jaxVersion": "0.8", "connectionOperator": {"args": []}}},
            [
                f"{P}.manualInstall.connectionOperator.args: must be a non-empty list of flags like "
                "--sidecar-timeout=65m (it replaces the chart's args)"
            ],
        ),
        (
            {"manualInstall": {"jaxVersion": "0.8", "repository": "us-docker.pkg.dev/x"}},
            [f"{P}.manualInstall.repository: must be an oci://, https:// or http:// URL"],
        ),
        (
            {
                "certManager": {
                    "version": "v1.15.3",
                    "values": {"installCRDs": True, "crds": {"enabled": True}},
                }
            },
            [
                f"{P}.certManager.values: cert-manager v1.15.3 refuses installCRDs together with its replacement "
                "crds.enabled; keep only crds.enabled (and crds.keep)"
            ],
        ),
        (
            {"certManager": {"version": "latest"}},
            [
                f"{P}.certManager.version: 'latest' is not a chart version; expected MAJOR.MINOR.PATCH with an "
                "optional -PRERELEASE, e.g. 0.24.0 or 0.25.0-rc.1"
            ],
        ),
        (
            {"diagon": {"gcpServiceAccount": "diagon@gmail.com"}},
            [
                f"{P}.diagon.gcpServiceAccount: 'diagon@gmail.com' is not allowed: must be a service account email "
                "(NAME@PROJECT.iam.gserviceaccount.com)"
            ],
        ),
        (
            {"diagon": {"nodeSelector": {}}},
            [f"{P}.diagon.nodeSelector: must name at least one label; omit it for accelerator nodes"],
        ),
        (
            {"diagon": {"acceleratorNodeLabels": ["ok.example/gpu", "no spaces"]}},
            [
                f"{P}.diagon.acceleratorNodeLabels[1]: 'no spaces' is not a Kubernetes label key: "
                "[prefix/]name, name 1-63 of [A-Za-z0-9-_.] starting and ending with a letter or digit, "
                "prefix a DNS subdomain"
            ],
        ),
        (
            {"diagon": {"namespace": "kube-system"}},
            [
                f"{P}.diagon.namespace: 'kube-system' always exists; set createNamespace: false to deploy into it"
            ],
        ),
        (
            {"diagon": {"maxUnavailable": 0}},
            [f"{P}.diagon.maxUnavailable: must be a positive integer or a percentage like 10%"],
        ),
        (
            {"diagon": {"imagee": "x"}},
            [
                f"{P}.diagon.imagee: unknown key (did you mean 'image'?); allowed keys: acceleratorNodeLabels, adopt, createNamespace, enabled, "
                "gcpServiceAccount, image, maxUnavailable, namespace, nodeSelector, serviceAccount"
            ],
        ),
    ],
)
def test_bad_input(override, expected):
    assert problems({**BASE, **override}) == expected


def test_kubeconfig_or_context_required():
    assert problems({"name": "lab", "manualInstall": {"jaxVersion": "0.8"}}) == [
        f"{P}.kubeconfig: give a kubeconfig (secret) or a context name (of the ambient kubeconfig), or both"
    ]


def test_plain_text_kubeconfig_refused():
    assert problems({**BASE, "kubeconfig": "apiVersion: v1"}, secret=False) == [
        f"{P}.kubeconfig: holds a secret but was set in plain text; set it with `mldiag secrets set STACK "
        f"'{P.split(':', 1)[1]}.kubeconfig' < FILE` or `pulumi config set --secret --path '{P}.kubeconfig' ...`"
    ]


def test_every_problem_at_once_across_targets():
    assert problems(
        {**BASE, "mode": "managed"},
        {**BASE, "name": "edge", "diagon": {"image": "bad image"}, "workloadNamespaces": [{"name": "a"}] * 2},
    ) == [
        f"{P}.mode: managed ML diagnostics exists only on GKE; self-managed clusters allow: manual, auto (= manual)",
        f"{KEY}[1].diagon.image: 'bad image' is not a container image reference; "
        "expected REGISTRY/PATH:TAG or REGISTRY/PATH@sha256:<64 hex>",
        f"{KEY}[1].workloadNamespaces[1].name: duplicate namespace 'a' (also workloadNamespaces[0])",
    ]


def test_manual_install_problems_for_gke_targets():
    assert InClusterSettings().manual_install_problems() == [
        (
            ("manual_install", "jax_version"),
            "required for the manual install (it picks the connection-operator chart and args); "
            "supported: 0.8.x, 0.9.x and later",
        )
    ]
    assert (
        InClusterSettings.model_validate({"manualInstall": {"jaxVersion": "0.9"}}).manual_install_problems()
        == []
    )


def test_placeholder_kubeconfig_is_accepted():
    (t,) = parse({**BASE, "kubeconfig": f"{config.PLACEHOLDER_SECRET}:abc123"})
    assert t.kubeconfig is not None
