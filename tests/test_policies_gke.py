"""GKE managed ML diagnostics rules, through the Analyzer protocol."""

from __future__ import annotations

import pytest

from tests.fixtures.policies import ENVS, EXPECTED, UNKNOWN_STRING, body, res

CLUSTER = "gcp:container/cluster:Cluster"
ADOPTED = "pulumi-python:dynamic/gke:ManagedMlDiagnostics"
RELEASE = "kubernetes:helm.sh/v3:Release"
PROVIDER = "pulumi:providers:kubernetes"
OCI = "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm"
PARENT = "urn:pulumi:test::ml-diagnostics::pulumi:pulumi:Stack$mldiag:index:GkeCluster::train"


def cluster(enabled=True, version="1.35.0-gke.3065000", **extra) -> dict:
    props = {"name": "train", "project": "acme", "location": "us-central1", **extra}
    if enabled is not None:
        props["managedMachineLearningDiagnosticsConfig"] = {"enabled": enabled}
    if version is not None:
        props["minMasterVersion"] = version
    return props


def adopted(enabled=True, version="1.35.1-gke.1396000") -> dict:
    return {
        "project": "acme",
        "location": "us-central1",
        "cluster": "legacy",
        "enabled": enabled,
        "clusterVersion": version,
    }


def check_levels(pack, policy, resources):
    for env in ENVS:
        found = pack.findings(policy, resources, env)
        assert [v.enforcement_level for v in found] == [EXPECTED[policy][ENVS.index(env)]], env


@pytest.mark.parametrize(
    "version",
    ["1.35.0-gke.3065000", "1.35.1-gke.1", "1.36.4-gke.1247000", "1.36", "v1.40.0-gke.5", "1.35.1", "1.36.0"],
)
def test_min_version_accepts_supported_versions(pack, version):
    assert (
        pack.findings("gke-managed-diagnostics-min-version", [res(CLUSTER, "c", cluster(version=version))])
        == []
    )


def test_min_version_ignores_clusters_with_the_flag_off(pack):
    old = res(CLUSTER, "c", cluster(enabled=False, version="1.30.0-gke.1"))
    assert pack.findings("gke-managed-diagnostics-min-version", [old]) == []


@pytest.mark.parametrize(
    "version, problem",
    [
        ("1.35.0-gke.3064999", "the cluster runs 1.35.0-gke.3064999"),
        ("1.34.9-gke.9999999", "the cluster runs 1.34.9-gke.9999999"),
        ("1.35", "version '1.35' includes builds before the threshold (from 1.35.0-gke.0)"),
        ("1.35.0", "version '1.35.0' includes builds before the threshold (from 1.35.0-gke.0)"),
        ("latest", "version 'latest' does not pin a GKE version that can be compared with the threshold"),
        (None, "no version is declared"),
    ],
)
def test_min_version_refuses_older_or_unknown_versions(pack, version, problem):
    r = res(CLUSTER, "c", cluster(version=version))
    v = pack.findings("gke-managed-diagnostics-min-version", [r])
    assert len(v) == 1
    assert body(v[0]) == (
        "GKE cluster 'train' enables managed ML diagnostics, which needs GKE 1.35.0-gke.3065000 or later, but "
        f"{problem} (minMasterVersion). Remediation: set minMasterVersion to 1.35.0-gke.3065000 or later, or turn "
        "the managed flag off (mode manual) and install cert-manager, injection-webhook and connection-operator "
        "instead."
    )


def test_min_version_on_adopted_clusters(pack):
    assert pack.findings("gke-managed-diagnostics-min-version", [res(ADOPTED, "a", adopted())]) == []
    old = res(ADOPTED, "a", adopted(version="1.33.2-gke.100"))
    check_levels(pack, "gke-managed-diagnostics-min-version", [old])
    assert "GKE cluster 'legacy' enables managed ML diagnostics" in body(
        pack.findings("gke-managed-diagnostics-min-version", [old])[0]
    )
    assert "the cluster runs 1.33.2-gke.100 (clusterVersion)" in body(
        pack.findings("gke-managed-diagnostics-min-version", [old])[0]
    )


def test_min_version_unknown_during_preview_says_so(pack):
    r = res(CLUSTER, "c", cluster(version=UNKNOWN_STRING))
    (v,) = pack.findings("gke-managed-diagnostics-min-version", [r])
    assert v.enforcement_level == "advisory"
    assert "not checked because the value(s) at minMasterVersion are unknown until apply" in v.message


def test_explicit_block(pack):
    ok = [
        res(CLUSTER, "on", cluster(True)),
        res(CLUSTER, "off", cluster(False)),
        res(ADOPTED, "a", adopted(False)),
    ]
    assert pack.findings("gke-managed-diagnostics-explicit", ok) == []
    omitted = res(CLUSTER, "c", cluster(enabled=None))
    check_levels(pack, "gke-managed-diagnostics-explicit", [omitted])
    assert body(pack.findings("gke-managed-diagnostics-explicit", [omitted])[0]) == (
        "GKE cluster 'train' does not set managedMachineLearningDiagnosticsConfig.enabled explicitly. The block "
        "is computed by the API, so leaving it out never turns the feature off and the cluster keeps whatever it "
        'had. Remediation: set managed_machine_learning_diagnostics_config={"enabled": True} or '
        '{"enabled": False} (the components always do).'
    )
    empty_block = res(CLUSTER, "c", {**cluster(enabled=None), "managedMachineLearningDiagnosticsConfig": {}})
    assert len(pack.findings("gke-managed-diagnostics-explicit", [empty_block])) == 1


def release(chart: str, provider: str, name: str = "r") -> object:
    return res(
        RELEASE, name, {"name": chart, "chart": f"{OCI}/{chart}", "version": "0.25.0"}, provider=provider
    )


def test_no_manual_releases_on_a_managed_cluster(pack):
    c = res(CLUSTER, "train", cluster(True), parent=PARENT)
    p = res(PROVIDER, "train-k8s", {"kubeconfig": "{}"}, parent=PARENT, deps=(c.urn,))
    wh = release("mldiagnostics-injection-webhook", p.urn, "wh")
    check_levels(pack, "gke-no-manual-releases-when-managed", [c, p, wh])
    (v,) = pack.findings("gke-no-manual-releases-when-managed", [c, p, wh])
    assert v.urn == wh.urn
    assert body(v) == (
        "Helm release 'mldiagnostics-injection-webhook' installs the webhook by hand on GKE cluster 'train', which "
        "has managed ML diagnostics on; the managed feature deploys the injection-webhook and connection-operator "
        "itself, and two copies conflict. Remediation: drop the manual install for this cluster (mode managed or "
        "auto) or turn the managed flag off (mode manual)."
    )
    # the same releases on a cluster with the flag off are the manual install: fine
    off = res(CLUSTER, "train", cluster(False, version="1.33.0-gke.1"), parent=PARENT)
    assert pack.findings("gke-no-manual-releases-when-managed", [off, p, wh]) == []
    # adopted cluster: linked through the component both belong to
    a = res(ADOPTED, "legacy", adopted(True), parent=PARENT)
    q = res(PROVIDER, "legacy-k8s", {"kubeconfig": "{}"}, parent=PARENT)
    op = release("mldiagnostics-connection-operator", q.urn, "op")
    (v,) = pack.findings("gke-no-manual-releases-when-managed", [a, q, op])
    assert "installs the operator by hand on GKE cluster 'legacy'" in body(v)
    # a release on another cluster's provider is not affected
    other = res(PROVIDER, "lab", {"kubeconfig": "{}"})
    assert (
        pack.findings(
            "gke-no-manual-releases-when-managed",
            [c, p, other, release("mldiagnostics-injection-webhook", other.urn)],
        )
        == []
    )
