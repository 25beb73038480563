"""The offline plan records the engine's URNs (whole parent type chain, no stack type), and a base plan
written with the mock monitor's URNs (parent's own type, `pulumi:pulumi:Stack$` on top-level resources)
is rewritten to them before a diff, so a PR across that change shows no spurious delete/add."""

from __future__ import annotations

import json
from typing import Any

from mldiag.diff import diff_plans
from mldiag.diff.urns import is_mock_scheme, to_engine_urns
from mldiag.engine.runtime import run_config
from mldiag.plan.cli import build_report

STACK_URN = "urn:pulumi:dev::ml-diagnostics::pulumi:pulumi:Stack::ml-diagnostics-dev"
CONFIG = {
    "ml-diagnostics:environment": "dev",
    "ml-diagnostics:kubernetesClusters": [
        {
            "name": "lab",
            "kubeconfig": "apiVersion: v1\nkind: Config\n",
            "manualInstall": {"jaxVersion": "0.8"},
            "workloadNamespaces": [{"name": "ai", "create": True}],
            "diagon": {"enabled": True, "image": "example.com/diagon:v2.1.0"},
        }
    ],
}


def engine_plan() -> dict[str, Any]:
    return json.loads(json.dumps(build_report(run_config(CONFIG, ["ml-diagnostics:kubernetesClusters"]), [])))


def mock_scheme(report: dict[str, Any]) -> dict[str, Any]:
    """The same plan with URNs as the SDK's mock monitor builds them."""
    by = {r["urn"]: r for r in report["resources"]}

    def old(urn: str | None) -> str | None:
        if urn is None or urn not in by:
            return urn
        r = by[urn]
        parent_type = by[r["parent"]]["type"] if r.get("parent") in by else "pulumi:pulumi:Stack"
        return f"urn:pulumi:dev::ml-diagnostics::{parent_type}${r['type']}::{r['name']}"

    out = json.loads(json.dumps(report))
    for r in out["resources"]:
        r["urn"], r["parent"], r["provider"] = old(r["urn"]), old(r["parent"]), old(r["provider"])
        r["dependencies"] = [old(u) for u in r["dependencies"]]
    for v in out["policyViolations"]:
        v["urn"] = old(v["urn"])
    out["criticalPath"]["urns"] = [old(u) for u in out["criticalPath"]["urns"]]
    return out


def test_the_plan_records_the_engines_urns() -> None:
    report = engine_plan()
    urns = {r["name"]: r["urn"] for r in report["resources"]}
    p = "urn:pulumi:dev::ml-diagnostics::"
    assert urns["k8s-lab"] == f"{p}mldiag:index:KubernetesCluster::k8s-lab"
    assert urns["k8s-lab-mldiag-diagon-daemonset"] == (
        f"{p}mldiag:index:KubernetesCluster$mldiag:index:ClusterMlDiagnostics$mldiag:index:Diagon"
        "$kubernetes:apps/v1:DaemonSet::k8s-lab-mldiag-diagon-daemonset"
    )
    top = [r for r in report["resources"] if r["name"] == "k8s-lab"][0]
    assert top["parent"] == STACK_URN
    assert not is_mock_scheme(report)


def test_a_mock_scheme_base_is_rewritten_and_nothing_changes() -> None:
    new = engine_plan()
    old = mock_scheme(new)
    assert is_mock_scheme(old)
    assert to_engine_urns(old) == new
    d = diff_plans(old, new)
    assert d["resources"] == []
    assert d["summary"]["unchanged"] == len(new["resources"])
    # Two plans of the old scheme are compared as they are.
    assert diff_plans(old, old)["resources"] == []
    assert to_engine_urns(new) is new
