"""The dev stack's self-managed cluster through the offline plan end to end (`make plan`, `--out`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mldiag.plan import cli as plan

LAB = "k8s-lab"
JAX_08_ARGS = [
    "--metrics-bind-address=:8443",
    "--health-probe-bind-address=:8081",
    "--sidecar-timeout=65m",
    "--disable-hostname-override",
]


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path, int]:
    import contextlib
    import io

    out = tmp_path_factory.mktemp("plan-out")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = plan.main(["dev", "--format", "json", "--out", str(out), "-q"])
    return json.loads(buf.getvalue()), out, code


def lab_resources(report: dict) -> dict[str, dict]:
    return {r["name"]: r for r in report["resources"] if r["name"].startswith(f"{LAB}-") or r["name"] == LAB}


def test_dev_plan_has_the_self_managed_cluster(dev):
    report, _, code = dev
    assert code == 0  # dev: policies are advisory
    lab = lab_resources(report)
    assert lab[f"{LAB}-provider"]["inputs"] == {"kubeconfig": "[secret]", "context": "lab-admin"}
    releases = sorted(
        r["inputs"]["name"] for r in lab.values() if r["type"] == "kubernetes:helm.sh/v3:Release"
    )
    assert releases == [
        "cert-manager",
        "mldiagnostics-connection-operator",
        "mldiagnostics-injection-webhook",
    ]
    assert report["outputs"]["kubernetesCluster:lab"] == {"mode": "manual", "workloadMonitoring": False}
    # The dev Diagon image is the seed's :latest: reported (advisory), not blocking.
    findings = [
        v for v in report["policyViolations"] if f"::{LAB}-mldiag-diagon-daemonset" in v.get("urn", "")
    ]
    assert [v["enforcementLevel"] for v in findings] == ["advisory"]


def test_dev_critical_path(dev):
    from types import SimpleNamespace

    report, _, _ = dev
    # Over the lab cluster's resources only (other targets in the stack have their own chains).
    lab = [SimpleNamespace(**r) for r in lab_resources(report).values()]
    path = plan.critical_path(lab)  # type: ignore[arg-type]
    assert path["depth"] == 3
    assert [u.split("::")[-1] for u in path["urns"]][0] == f"{LAB}-provider"
    assert report["criticalPath"]["depth"] >= 3


def test_out_writes_manifests_and_release_values(dev):
    report, out, _ = dev
    lab = lab_resources(report)
    manifests = out / "manifests"
    ds = yaml.safe_load((manifests / f"daemonset-{LAB}-mldiag-diagon-daemonset.yaml").read_text())
    assert ds == lab[f"{LAB}-mldiag-diagon-daemonset"]["inputs"]
    assert ds["spec"]["template"]["spec"]["containers"][0]["command"][0] == (
        "/mldiagnostics_extension_files/bin/mldiagnostics_extension"
    )
    for name in ("manual-namespace", "diagon-namespace", "opt-in-ai-workloads"):
        ns = yaml.safe_load((manifests / f"namespace-{LAB}-mldiag-{name}.yaml").read_text())
        assert ns["kind"] == "Namespace"
    assert yaml.safe_load((manifests / f"namespace-{LAB}-mldiag-manual-namespace.yaml").read_text())[
        "metadata"
    ] == {
        "name": "gke-mldiagnostics",
        "annotations": {"ml-diagnostics.dev/cert-manager": "release"},
    }
    helm = out / "helm"
    assert yaml.safe_load((helm / f"{LAB}-mldiag-cert-manager-release" / "values.yaml").read_text()) == {
        "installCRDs": True,
        "global": {"leaderElection": {"namespace": "cert-manager"}},
    }
    assert yaml.safe_load((helm / f"{LAB}-mldiag-manual-injection-webhook" / "values.yaml").read_text()) == {}
    assert yaml.safe_load(
        (helm / f"{LAB}-mldiag-manual-connection-operator" / "values.yaml").read_text()
    ) == {"mldiagnosticsConnectionOperator": {"controller": {"args": JAX_08_ARGS}}}
    release = yaml.safe_load((helm / f"{LAB}-mldiag-manual-connection-operator" / "release.yaml").read_text())
    assert (release["name"], release["version"], release["namespace"]) == (
        "mldiagnostics-connection-operator",
        "0.24.0",
        "gke-mldiagnostics",
    )


def test_bad_stack_file_fails_before_any_resource(tmp_path, capsys):
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text(
        yaml.safe_dump(
            {
                "config": {
                    "ml-diagnostics:environment": "dev",
                    "ml-diagnostics:kubernetesClusters": [
                        {
                            "name": "lab",
                            "context": "c",
                            "mode": "managed",
                            "manualInstall": {"jaxVersion": "0.7"},
                        }
                    ],
                }
            }
        )
    )
    code = plan.main(["dev", "--config-file", str(stack), "--skip-policies", "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert "ml-diagnostics:kubernetesClusters[0].mode: managed ML diagnostics exists only on GKE" in err
    assert (
        "ml-diagnostics:kubernetesClusters[0].manualInstall.jaxVersion: unsupported JAX version '0.7'" in err
    )
    assert "Traceback" not in err
