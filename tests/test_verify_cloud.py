"""mldiag.verify against loopback fakes of the GKE API (+ a TLS Kubernetes API reached with the
gke-gcloud-auth-plugin exec credential), the Vertex AI API and Azure Resource Manager."""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.fakes.arm_api import FakeArm
from dev.fakes.gke_api import FakeGkeApi
from dev.fakes.k8s_api import FakeKubeApi
from dev.fakes.tls import loopback_certificate
from dev.fakes.vertex_api import FakeVertexApi
from tests.fixtures.verify import (
    AZURE_SUB,
    DIAGON_CHECKS,
    aml_target,
    checks,
    run_verify,
    seed_diagon,
    seed_manual_install,
    seed_namespaces,
    stack_file,
)

ROOT = Path(__file__).resolve().parent.parent
GKE_TOKEN = "ya29.gke-plugin-token"
PROJECT, LOCATION, CLUSTER = "acme-ml-staging", "us-central1-a", "shared-train-a"


def self_signed(tmp: Path) -> tuple[str, str, str]:
    """(cert file, key file, base64 PEM) of a certificate for 127.0.0.1 that is its own CA."""
    cert, key, pem = loopback_certificate(tmp, "fake-apiserver", ca=True)
    return cert, key, base64.b64encode(pem).decode()


@pytest.fixture
def gke_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A gke-gcloud-auth-plugin on PATH that prints an ExecCredential (and logs that it ran)."""
    bin_dir = tmp_path / "plugin-bin"
    bin_dir.mkdir()
    plugin = bin_dir / "gke-gcloud-auth-plugin"
    cred = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": GKE_TOKEN},
    }
    plugin.write_text(
        f"#!{sys.executable}\nimport json, sys\nopen({str(tmp_path / 'plugin-ran')!r}, 'a').write('x')\n"
        f"sys.stdout.write(json.dumps({cred!r}))\n"
    )
    plugin.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "plugin-ran"


@pytest.fixture
def gke_world(tmp_path: Path, gke_plugin: Path) -> Iterator[tuple[FakeGkeApi, FakeKubeApi, dict[str, Any]]]:
    """A managed GKE cluster whose endpoint is a TLS Kubernetes fake requiring the plugin's token."""
    cert, key, ca_b64 = self_signed(tmp_path)
    kube = FakeKubeApi(token=GKE_TOKEN).start(tls=(cert, key))
    gke = FakeGkeApi().start()
    try:
        cluster = gke.add_cluster(PROJECT, LOCATION, CLUSTER, version="1.35.1-gke.1396000", managed=True)
        cluster["endpoint"] = kube.host_port
        cluster["masterAuth"] = {"clusterCaCertificate": ca_b64}
        seed_namespaces(kube, "default", "ai-workloads")
        seed_diagon(kube)
        yield gke, kube, cluster
    finally:
        gke.stop()
        kube.stop()


def gke_target(**overrides: Any) -> dict[str, Any]:
    target: dict[str, Any] = {
        "name": "shared-train",
        "project": PROJECT,
        "location": LOCATION,
        "clusterName": CLUSTER,
        "currentVersion": "1.35.1-gke.1396000",
        "mode": "managed",
        "workloadNamespaces": [{"name": "default"}, {"name": "ai-workloads"}],
        "diagon": {
            "enabled": True,
            "image": "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0",
        },
    }
    target.update(overrides)
    return target


def gke_config(tmp_path: Path, gke: FakeGkeApi, *targets: dict[str, Any]) -> Path:
    return stack_file(
        tmp_path,
        {
            "environment": "staging",
            "gkeClusters": list(targets),
            "googleApi": {"emulator": True, "endpoints": {"container": gke.url}},
        },
    )


def test_managed_gke_passes_through_the_gke_api_and_the_exec_credential(
    gke_world: tuple[FakeGkeApi, FakeKubeApi, dict[str, Any]],
    gke_plugin: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gke, kube, _ = gke_world
    code, report, _ = run_verify(capsys, gke_config(tmp_path, gke, gke_target()))
    assert code == 0, report
    got = checks(report, "gkeClusters/shared-train")
    assert list(got) == [
        "gke.cluster",
        "gke.managed",
        "namespace.default",
        "namespace.ai-workloads",
        *DIAGON_CHECKS,
    ]
    assert got["gke.managed"]["detail"] == "flag on, version 1.35.1-gke.1396000 >= 1.35.0-gke.3065000"
    assert gke.calls() == [("GET", f"/v1/projects/{PROJECT}/locations/{LOCATION}/clusters/{CLUSTER}")]
    assert gke_plugin.exists()  # the kubeconfig's exec credential ran
    assert {r.authorization for r in kube.requests} == {f"Bearer {GKE_TOKEN}"}
    assert kube.writes() == []


def test_managed_flag_off_or_too_old_says_upgrade_and_pulumi_up(
    gke_world: tuple[FakeGkeApi, FakeKubeApi, dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gke, _, cluster = gke_world
    cluster["currentMasterVersion"] = "1.35.0-gke.3064999"
    cluster["managedMachineLearningDiagnosticsConfig"] = {"enabled": False}
    code, report, _ = run_verify(capsys, gke_config(tmp_path, gke, gke_target()))
    assert code == 1
    check = checks(report, "gkeClusters/shared-train")["gke.managed"]
    assert check["ok"] is False
    assert (
        check["detail"]
        == "version 1.35.0-gke.3064999 is before 1.35.0-gke.3065000; managed ML diagnostics is off"
    )
    assert check["fix"].startswith(
        "upgrade the control plane to 1.35.0-gke.3065000 or later and run `pulumi up`"
    )


def test_manual_mode_with_the_managed_flag_on_is_two_webhooks(
    gke_world: tuple[FakeGkeApi, FakeKubeApi, dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gke, kube, _ = gke_world
    seed_manual_install(kube, jax_operator="0.24.0")
    target = gke_target(mode="manual", manualInstall={"jaxVersion": "0.9"})
    code, report, _ = run_verify(capsys, gke_config(tmp_path, gke, target))
    got = checks(report, "gkeClusters/shared-train")
    assert code == 1
    assert got["gke.managed"]["detail"].startswith(
        "managed ML diagnostics is on while the stack installs the manual"
    )
    assert got["helm.mldiagnostics-injection-webhook"]["ok"] is True
    assert got["webhook.ca-injected"]["ok"] is True


def test_a_cluster_the_gke_api_does_not_know_fails_and_one_it_refuses_is_unreachable(
    gke_world: tuple[FakeGkeApi, FakeKubeApi, dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gke, _, _ = gke_world
    code, report, _ = run_verify(
        capsys, gke_config(tmp_path, gke, gke_target(name="other", clusterName="other"))
    )
    assert code == 1
    check = checks(report, "gkeClusters/other")["gke.cluster"]
    assert check["detail"] == f"cluster projects/{PROJECT}/locations/{LOCATION}/clusters/other not found"
    gke.fail_next(
        "GET", "/clusters/", 403, "Required 'container.clusters.get' permission", reason="PERMISSION_DENIED"
    )
    code, report, _ = run_verify(capsys, gke_config(tmp_path, gke, gke_target()))
    assert code == 3
    (target,) = report["targets"]
    assert "HTTP 403" in target["unreachable"] and "container.clusters.get" in target["unreachable"]


def mdc_target() -> dict[str, Any]:
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    return stack["config"]["ml-diagnostics:modelDevelopmentClusters"][0]


MDC_NAME = "projects/mldiag-dev/locations/us-central1/modelDevelopmentClusters/devcpu"


@pytest.mark.parametrize(
    ("status", "code", "detail", "fix"),
    [
        ({"state": "RUNNING"}, 0, f"{MDC_NAME} RUNNING, no operation pending", ""),
        (
            {"state": "UPDATING"},
            1,
            f"{MDC_NAME} is UPDATING (an operation is pending)",
            "wait for the operation to finish (rerun with --wait SECONDS)",
        ),
        (
            {
                "state": "ERROR",
                "error": {"code": 8, "message": "quota exceeded for n2 CPUs"},
                "detail": "quota exceeded for n2 CPUs",
            },
            1,
            f"{MDC_NAME} is ERROR: quota exceeded for n2 CPUs",
            "read clusterStatus.error in the Cloud console; fix the cause",
        ),
    ],
)
def test_model_development_cluster_state(
    status: dict[str, Any],
    code: int,
    detail: str,
    fix: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeVertexApi() as vertex:
        vertex.put_cluster(MDC_NAME, {"displayName": "dev CPU cluster", "clusterStatus": status})
        config = stack_file(
            tmp_path,
            {
                "environment": "dev",
                "modelDevelopmentClusters": [mdc_target()],
                "googleApi": {"emulator": True, "endpoints": {"aiplatform": vertex.endpoint}},
            },
        )
        got_code, report, _ = run_verify(capsys, config)
        assert [(r.method, r.path) for r in vertex.requests] == [("GET", f"/v1beta1/{MDC_NAME}")]
    check = checks(report, "modelDevelopmentClusters/cpu")["mdc.state"]
    assert (got_code, check["detail"]) == (code, detail)
    assert check["fix"].startswith(fix)


def cluster_id(kind: str) -> str:
    rp, typ = (
        ("Microsoft.ContainerService", "managedClusters")
        if kind == "aks"
        else ("Microsoft.Kubernetes", "connectedClusters")
    )
    return f"/subscriptions/{AZURE_SUB}/resourceGroups/rg-ml/providers/{rp}/{typ}/gpu-lab"


def ext_id(kind: str) -> str:
    return f"{cluster_id(kind)}/providers/Microsoft.KubernetesConfiguration/extensions/azureml"


def run_aml(
    arm: FakeArm, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, dict[str, Any]]]:
    config = stack_file(tmp_path, {"environment": "dev", "azureMl": [aml_target(kind)]})
    code, report, _ = run_verify(capsys, config, "--arm-endpoint", arm.url)
    assert {m for m, _, _ in arm.requests} == {"GET"}
    return code, checks(report, "azureMl/ml")


@pytest.fixture
def arm() -> Iterator[FakeArm]:
    with FakeArm() as fake:
        yield fake


def test_aks_extension_succeeded_passes(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arm.put(ext_id("aks"), {"properties": {"provisioningState": "Succeeded", "currentVersion": "1.1.62"}})
    code, got = run_aml(arm, "aks", tmp_path, capsys)
    assert code == 0
    assert got == {
        "azureml.extension": {
            "name": "azureml.extension",
            "ok": True,
            "detail": "azureml Succeeded (1.1.62)",
            "fix": "",
        },
        # without verifyAccess only ARM is read; the report says what the in-cluster checks would need
        "azureml.in-cluster": {
            "name": "azureml.in-cluster",
            "ok": True,
            "detail": "not checked: set verifyAccess (a kubeconfig secret, or aksUserCredentials on AKS) for the "
            "health report, pods and clashes",
            "fix": "",
        },
    }
    assert arm.requests == [("GET", ext_id("aks"), "2023-05-01")]


def test_a_failed_extension_shows_arms_error_and_what_to_do(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arm.put(
        ext_id("aks"),
        {
            "properties": {
                "provisioningState": "Failed",
                "errorInfo": {
                    "code": "ExtensionOperationFailed",
                    "message": "helm install timed out: relayserver not ready",
                },
                "statuses": [
                    {
                        "code": "InstallationFailed",
                        "level": "Error",
                        "message": "pod azureml-fe pending: insufficient cpu",
                    }
                ],
            }
        },
    )
    code, got = run_aml(arm, "aks", tmp_path, capsys)
    assert code == 1
    check = got["azureml.extension"]
    assert check["detail"] == (
        "azureml is Failed: helm install timed out: relayserver not ready; pod azureml-fe pending: insufficient cpu"
    )
    assert (
        "az k8s-extension show --name azureml --cluster-type managedClusters --cluster-name gpu-lab"
        in check["fix"]
    )


def test_a_pending_extension_suggests_waiting(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arm.put(ext_id("aks"), {"properties": {"provisioningState": "Creating"}})
    code, got = run_aml(arm, "aks", tmp_path, capsys)
    assert code == 1 and got["azureml.extension"]["fix"].startswith(
        "it can take several minutes: rerun with --wait"
    )


def arc_relay(arm: FakeArm, *, rule: bool = True) -> str:
    from ml_diagnostics.azure_ml import relay_namespace_name

    ns = relay_namespace_name("gpu-lab", AZURE_SUB, "rg-ml")
    base = f"/subscriptions/{AZURE_SUB}/resourceGroups/rg-ml/providers/Microsoft.Relay/namespaces/{ns}"
    arm.put(base, {"properties": {"provisioningState": "Succeeded", "status": "Active"}})
    hc = arm.put(f"{base}/hybridConnections/gpu-lab", {"properties": {"requiresClientAuthorization": True}})
    if rule:
        arm.put(
            f"{base}/hybridConnections/gpu-lab/authorizationRules/azureml_rw",
            {"properties": {"rights": ["Manage", "Send", "Listen"]}},
        )
    arm.put(
        ext_id("arc"),
        {
            "properties": {
                "provisioningState": "Succeeded",
                "configurationSettings": {"relayserver.hybridConnectionResourceID": hc["id"]},
            }
        },
    )
    return ns


def test_arc_extension_and_relay_objects_pass(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = arc_relay(arm)
    code, got = run_aml(arm, "arc", tmp_path, capsys)
    assert code == 0, got
    assert got["azureml.relay"]["detail"] == f"{ns}/gpu-lab with rule azureml_rw"


def test_arc_without_the_relay_rule_fails(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arc_relay(arm, rule=False)
    code, got = run_aml(arm, "arc", tmp_path, capsys)
    assert code == 1
    assert got["azureml.relay"]["detail"] == "authorization rule azureml_rw missing"
    assert got["azureml.relay"]["fix"].startswith("run `pulumi up` (it creates the relay)")


def test_a_gke_cluster_in_error_fails_with_its_status_message(
    gke_world: tuple[FakeGkeApi, FakeKubeApi, dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gke, _, cluster = gke_world
    cluster["status"] = "ERROR"
    cluster["statusMessage"] = "Node pool tpu failed to repair"
    code, report, _ = run_verify(capsys, gke_config(tmp_path, gke, gke_target()))
    assert code == 1
    check = checks(report, "gkeClusters/shared-train")["gke.cluster"]
    assert check["detail"] == (
        f"projects/{PROJECT}/locations/{LOCATION}/clusters/{CLUSTER} is ERROR: Node pool tpu failed to repair"
    )
    assert check["fix"].startswith(f"`gcloud container clusters describe {CLUSTER} --location {LOCATION}`")


@pytest.mark.parametrize(
    ("status", "code", "fix"),
    [
        (401, "InvalidAuthenticationToken", "set up a credential DefaultAzureCredential finds: `az login`"),
        (403, "AuthorizationFailed", "the identity needs Reader on the cluster's resource group"),
    ],
)
def test_an_unreachable_azure_target_says_which_credential_to_set_up(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str], status: int, code: str, fix: str
) -> None:
    arm.errors[ext_id("aks").lower()] = (status, code, "refused")
    config = stack_file(tmp_path, {"environment": "dev", "azureMl": [aml_target("aks")]})
    code_, report, _ = run_verify(capsys, config, "--arm-endpoint", arm.url)
    assert code_ == 3
    (target,) = [t for t in report["targets"] if t["kind"] == "azureMl"]
    reason = target["unreachable"]
    assert f"HTTP {status} {code}: refused. To fix: {fix}" in reason
    if status == 401:
        assert "AZURE_FEDERATED_TOKEN_FILE (workload identity" in reason and "managed identity" in reason
