"""The optional verify role: what the component registers under the mock runtime, that its rules allow
every request mldiag.verify makes against a healthy cluster (and that each rule is needed), and its config
errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dev.fakes.k8s_api import FakeKubeApi, Request
from ml_diagnostics.verify_rbac import verify_rules
from mldiag.engine.runtime import run_config
from program.config import ConfigError, parse
from program.in_cluster import in_cluster_args
from program.kinds.kubernetes.model import KubernetesClusterTarget
from tests.fixtures.verify import lab_target, run_verify, stack_file

KEY = "ml-diagnostics:kubernetesClusters"
SUBJECTS = [
    {"kind": "User", "name": "ci-deploy@acme-ml-prod.iam.gserviceaccount.com"},
    {"kind": "ServiceAccount", "name": "verify", "namespace": "ops"},
]


def lab(**verify_rbac: Any) -> dict[str, Any]:
    return lab_target(
        kubeconfig="apiVersion: v1\nkind: Config\n",
        verifyRbac={"enabled": True, "subjects": SUBJECTS, **verify_rbac},
    )


def test_the_component_registers_one_cluster_role_and_a_role_per_namespace() -> None:
    result = run_config({"ml-diagnostics:environment": "dev", KEY: [lab()]}, [KEY])
    rbac = {
        r.name: r for r in result.resources if r.type.startswith("kubernetes:rbac.authorization.k8s.io/v1:")
    }
    assert sorted(rbac) == [
        "k8s-lab-mldiag-verify-rbac-binding-cert-manager",
        "k8s-lab-mldiag-verify-rbac-binding-diagon",
        "k8s-lab-mldiag-verify-rbac-binding-gke-mldiagnostics",
        "k8s-lab-mldiag-verify-rbac-cluster-binding",
        "k8s-lab-mldiag-verify-rbac-cluster-role",
        "k8s-lab-mldiag-verify-rbac-role-cert-manager",
        "k8s-lab-mldiag-verify-rbac-role-diagon",
        "k8s-lab-mldiag-verify-rbac-role-gke-mldiagnostics",
    ]
    cluster_role = rbac["k8s-lab-mldiag-verify-rbac-cluster-role"].inputs
    assert cluster_role["metadata"]["name"] == "ml-diagnostics-verify"
    assert cluster_role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["namespaces"],
            "verbs": ["get"],
            "resourceNames": ["ai-workloads", "diagon"],  # opt-in labels; Diagon's Pod Security level
        },
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations"],
            "verbs": ["list"],
        },
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},  # Diagon's nodes without a ready pod
    ]
    binding = rbac["k8s-lab-mldiag-verify-rbac-cluster-binding"].inputs
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "ml-diagnostics-verify",
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": SUBJECTS[0]["name"]},
        {"kind": "ServiceAccount", "name": "verify", "namespace": "ops"},
    ]
    diagon_role = rbac["k8s-lab-mldiag-verify-rbac-role-diagon"]
    assert diagon_role.inputs["metadata"]["namespace"] == "diagon"
    assert all(
        verb in ("get", "list")
        for r in result.resources
        if "rbac" in r.type
        for rule in r.inputs.get("rules", [])
        for verb in rule["verbs"]
    )
    # Roles wait for what creates their namespaces (cert-manager's release creates its namespace).
    by_urn = {r.urn: r for r in result.resources}
    deps = {by_urn[d].name for d in diagon_role.dependencies if d in by_urn}
    assert {
        "k8s-lab-mldiag-cert-manager-release",
        "k8s-lab-mldiag-manual-namespace",
        "k8s-lab-mldiag-diagon-namespace",
    } <= deps, sorted(deps)


def test_disabled_by_default_registers_nothing() -> None:
    target = lab_target(kubeconfig="apiVersion: v1\nkind: Config\n")
    result = run_config({"ml-diagnostics:environment": "dev", KEY: [target]}, [KEY])
    assert not [r for r in result.resources if "rbac" in r.type]


def test_enabled_without_subjects_is_a_config_error_with_the_key_path() -> None:
    target = lab_target(verifyRbac={"enabled": True}, kubeconfig={"secure": "x"})
    with pytest.raises(ConfigError) as e:
        parse({"ml-diagnostics:environment": "dev", KEY: [target]}, [KEY])
    assert "ml-diagnostics:kubernetesClusters[0].verifyRbac.subjects: name at least one subject" in str(
        e.value
    )


_REQ = re.compile(
    r"^(?:/api/v1|/apis/(?P<group>[^/]+)/v1)(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[a-z]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>log))?$"
)


def attributes(r: Request) -> tuple[str, str, str, str, str] | None:
    """RBAC attributes of a request (group, resource, verb, namespace, name); None for non-resource URLs."""
    if r.path.startswith("/version"):
        return None  # non-resource URL every authenticated user may read (system:public-info-viewer)
    m = _REQ.match(r.path)
    assert m, r.path
    group, ns, res, name = m["group"] or "", m["ns"] or "", m["res"], m["name"] or ""
    if res == "namespaces" and name:
        return ("", "namespaces", "get", "", name)
    if m["sub"]:
        return (group, f"{res}/{m['sub']}", "get", ns, name)
    return (group, res, "get" if name else "list", ns, name)


def allowed(rules: tuple[list[dict], dict[str, list[dict]]], attrs: tuple[str, str, str, str, str]) -> bool:
    group, res, verb, ns, name = attrs
    cluster, namespaced = rules
    candidates = cluster + (namespaced.get(ns, []) if ns else [])
    return any(
        group in r["apiGroups"]
        and res in r["resources"]
        and verb in r["verbs"]
        and (not r.get("resourceNames") or name in r["resourceNames"])
        for r in candidates
    )


def test_the_rules_allow_exactly_what_verify_reads(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = lab_target()
    code, _, _ = run_verify(
        capsys, stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [target]})
    )
    assert code == 0
    # and a Diagon pod missing: verify then reads the DaemonSet's events (pods refused by admission)
    healthy_lab.delete("pods", "diagon", "diagon-daemon-1")
    code, _, _ = run_verify(
        capsys, stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [target]})
    )
    assert code == 1
    requests = {a for r in healthy_lab.requests if (a := attributes(r))}
    settings = KubernetesClusterTarget.model_validate(target)
    rules = verify_rules(in_cluster_args(settings), "manual")
    assert [a for a in sorted(requests) if not allowed(rules, a)] == []
    # Minimal: without any one rule, some request verify made is refused.
    cluster, namespaced = rules
    for i in range(len(cluster)):
        fewer = (cluster[:i] + cluster[i + 1 :], namespaced)
        assert any(not allowed(fewer, a) for a in requests), cluster[i]
    for ns, ns_rules in namespaced.items():
        for i in range(len(ns_rules)):
            fewer = (cluster, {**namespaced, ns: ns_rules[:i] + ns_rules[i + 1 :]})
            assert any(not allowed(fewer, a) for a in requests), (ns, ns_rules[i])
