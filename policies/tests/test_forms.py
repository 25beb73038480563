"""The normalisation step: every supported spelling maps to its checked shape (the list is FORMS)."""

from __future__ import annotations

import pytest
from mldiag_policy import forms

SUPPORTED = [
    ("kubernetes:apps/v1:DaemonSet", "kubernetes:apps/v1:DaemonSet"),
    ("kubernetes:apps/v1beta2:DaemonSet", "kubernetes:apps/v1:DaemonSet"),
    ("kubernetes:extensions/v1beta1:DaemonSet", "kubernetes:apps/v1:DaemonSet"),
    ("kubernetes:apps/v1:DaemonSetPatch", "kubernetes:apps/v1:DaemonSetPatch"),
    ("kubernetes:core/v1:NamespacePatch", "kubernetes:core/v1:NamespacePatch"),
    ("kubernetes:batch/v1beta1:CronJob", "kubernetes:batch/v1:CronJob"),
    ("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"),
    ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v3:Release"),
    ("kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Release"),
    ("azure-native:kubernetesconfiguration:Extension", "azure-native:kubernetesconfiguration:Extension"),
    (
        "azure-native:kubernetesconfiguration/v20230501:Extension",
        "azure-native:kubernetesconfiguration:Extension",
    ),
    (
        "azure-native:kubernetesconfiguration/v20220402preview:Extension",
        "azure-native:kubernetesconfiguration:Extension",
    ),
    (
        "azure-native:containerservice/v20240801:ManagedCluster",
        "azure-native:containerservice:ManagedCluster",
    ),
    ("azure-native:containerservice/v20240801:AgentPool", "azure-native:containerservice:AgentPool"),
    ("gcp:container/cluster:Cluster", "gcp:container/cluster:Cluster"),
]


@pytest.mark.parametrize(("token", "shape"), SUPPORTED)
def test_each_spelling_maps_to_one_checked_shape(token, shape):
    assert forms.canonical(token) == shape


def test_the_forms_table_is_what_canonical_does():
    for token, shape, _ in forms.FORMS:
        if not shape.startswith("<"):
            assert forms.canonical(token) == shape, token
    assert {t for t, _, _ in forms.FORMS} >= {
        t for t, _ in SUPPORTED if t.startswith(("kubernetes:helm", "azure"))
    }


def test_manifest_groups_yield_each_checked_document():
    docs = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n"
    )
    found, unread = forms.expand(
        "kubernetes:yaml/v2:ConfigGroup", {"yaml": docs, "objs": [{"kind": "Pod", "metadata": {"name": "p"}}]}
    )
    assert [(f.type, f.where) for f in found] == [
        ("kubernetes:core/v1:Pod", "objs[0]"),
        ("kubernetes:apps/v1:DaemonSet", "yaml[0] document 1"),
        ("kubernetes:core/v1:Namespace", "yaml[0] document 2"),
    ]
    assert unread == []


def test_unreadable_manifests_are_named_not_skipped(tmp_path):
    _, unread = forms.expand("kubernetes:yaml/v2:ConfigFile", {"file": str(tmp_path / "missing.yaml")})
    assert unread == [f"files[0] ({tmp_path / 'missing.yaml'})"]
    _, unread = forms.expand("kubernetes:yaml/v2:ConfigGroup", {"yaml": "a: [unclosed"})
    assert unread == ["yaml[0] (not YAML)"]


def test_patches_are_patches():
    assert forms.is_patch("kubernetes:apps/v1:DaemonSetPatch")
    assert not forms.is_patch("kubernetes:apps/v1:DaemonSet")


@pytest.mark.parametrize(
    "props",
    [{"yaml": 123}, {"yaml": [None]}, {"objs": "x"}, {"files": [1]}, {"file": {"a": 1}}, {"objs": [1, None]}],
)
def test_malformed_manifest_inputs_never_raise(props):
    found, unread = forms.expand("kubernetes:yaml/v2:ConfigGroup", props)
    assert found == []
