"""mldiag.verify against a loopback Kubernetes API: a healthy manual-mode cluster passes; each failure mode
fails the named check with a message that says what to do; nothing is written and no secret is printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.fakes import k8s_api
from dev.fakes.k8s_api import FakeKubeApi
from ml_diagnostics import compat
from mldiag.verify import cli
from tests.fixtures.verify import DIAGON_CHECKS, IMAGE, checks, lab_target, run_verify, stack_file

HEALTHY_CHECKS = [
    "helm.cert-manager",
    "workloads.cert-manager",
    "helm.mldiagnostics-injection-webhook",
    "workloads.mldiagnostics-injection-webhook",
    "helm.mldiagnostics-connection-operator",
    "workloads.mldiagnostics-connection-operator",
    "webhook.ca-injected",
    "namespace.ai-workloads",
    *DIAGON_CHECKS,
]


def test_a_healthy_cluster_passes_every_check_with_reads_only(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, err = run_verify(
        capsys, stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    )
    assert code == 0, report
    got = checks(report)
    assert list(got) == HEALTHY_CHECKS
    assert all(c["ok"] for c in got.values())
    assert got["helm.mldiagnostics-connection-operator"]["detail"] == (
        "gke-mldiagnostics/mldiagnostics-connection-operator revision 2 (mldiagnostics-connection-operator 0.24.0) deployed"
    )
    assert got["diagon.logs"]["detail"] == "read 2 of 2 pod logs: all show the 3 log signatures"
    assert report["summary"] == "13/13 checks passed on 1 target(s)"
    assert healthy_lab.writes() == []
    assert err == ""


def test_helm_release_values_never_reach_the_report(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    printed = ""
    for fmt in ("table", "json", "markdown"):
        assert cli.main(["test", "--config-file", str(config), "--format", fmt]) == 0
        out, err = capsys.readouterr()
        printed += out + err
    assert "| `kubernetesClusters/lab` | diagon.logs | pass |" in printed
    out, err = printed, ""
    assert "s3cr3t" not in out + err


def failing(report: dict, name: str) -> dict:
    check = checks(report)[name]
    assert check["ok"] is False, check
    return check


def verify_lab(tmp_path: Path, capsys: pytest.CaptureFixture[str], **overrides: object) -> tuple[int, dict]:
    code, report, _ = run_verify(
        capsys, stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target(**overrides)]})
    )
    return code, report


def lab_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> tuple[dict, dict]:
    """Verifies the lab, which must fail (exit 1): the report and its failing check `name`."""
    code, report = verify_lab(tmp_path, capsys)
    assert code == 1
    return report, failing(report, name)


def test_no_diagon_pod_scheduled_names_the_node_selection(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("diagon-daemon-0", "diagon-daemon-1"):
        healthy_lab.delete("pods", "diagon", name)
    healthy_lab.put(
        "daemonsets",
        k8s_api.daemon_set(
            "diagon-daemon",
            "diagon",
            IMAGE,
            desired=0,
            ready=0,
            affinity_labels=list(compat.ACCELERATOR_NODE_LABELS),
        ),
    )
    report, check = lab_fails(tmp_path, capsys, "diagon.scheduled")
    assert check["detail"] == (
        "0 pods scheduled: no node matches the DaemonSet's node affinity: any node with "
        "cloud.google.com/gke-accelerator or cloud.google.com/gke-tpu-accelerator or nvidia.com/gpu.present"
    )
    assert "kubectl label node NODE nvidia.com/gpu.present=true" in check["fix"]
    assert "diagon.nodeSelector" in check["fix"]
    assert "diagon.ready" not in checks(report)  # nothing more to say about pods that do not exist


def test_zero_pods_with_a_node_selector_names_its_labels(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_lab.put(
        "daemonsets",
        k8s_api.daemon_set(
            "diagon-daemon", "diagon", IMAGE, desired=0, ready=0, node_selector={"pool": "tpu", "x": "1"}
        ),
    )
    _, report = verify_lab(tmp_path, capsys)
    assert failing(report, "diagon.scheduled")["detail"].endswith("DaemonSet's nodeSelector pool=tpu, x=1")


def test_a_pod_not_ready_is_named_with_its_reason(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_lab.put("daemonsets", k8s_api.daemon_set("diagon-daemon", "diagon", IMAGE, desired=2, ready=1))
    healthy_lab.put(
        "pods",
        k8s_api.pod(
            "diagon-daemon-1",
            "diagon",
            "diagon-daemon",
            IMAGE,
            node="gpu-node-b",
            ready=False,
            waiting="ImagePullBackOff",
        ),
    )
    report, check = lab_fails(tmp_path, capsys, "diagon.ready")
    assert check["detail"] == (
        f"1/2 ready; diagon-daemon-1 on gpu-node-b: ImagePullBackOff (ImagePullBackOff for {IMAGE})"
    )
    assert "ImagePullBackOff means the image or its registry access is wrong" in check["fix"]
    assert failing(report, "diagon.logs")["detail"] == "diagon-daemon-1: not running (read 1 of 2 pod logs)"


def test_a_missing_log_signature_is_named_per_pod(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_lab.logs[("diagon", "diagon-daemon-1", "diagon-daemon")] = (
        "I1130 stream.go:88] Stream established.\n"
    )
    report, check = lab_fails(tmp_path, capsys, "diagon.logs")
    assert check["detail"] == (
        "diagon-daemon-1 lacks 'Received successful DaemonRegistrationResponse from backend', "
        "'Sending DaemonHeartbeatRequest' (read 2 of 2 pod logs)"
    )
    assert "rerun with --wait SECONDS" in check["fix"]
    assert checks(report)["diagon.ready"]["ok"] is True
    log_reads = [r for r in healthy_lab.requests if r.path.endswith("/log")]
    assert {r.query["tailLines"][0] for r in log_reads} == {"500"}
    assert {r.query["container"][0] for r in log_reads} == {"diagon-daemon"}


def test_a_wrong_image_on_the_daemonset_says_pulumi_up_restores_it(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    drifted = (
        "us-central1-docker.pkg.dev/hypercomputediagon-release/daemon-docker/mldiagnostics-daemon:latest"
    )
    healthy_lab.put("daemonsets", k8s_api.daemon_set("diagon-daemon", "diagon", drifted, desired=2, ready=2))
    _, check = lab_fails(tmp_path, capsys, "diagon.image")
    assert check["detail"] == f"DaemonSet runs {drifted}, config says {IMAGE}"
    assert "`kubectl set image`" in check["fix"] and "run `pulumi up`" in check["fix"]


def test_pods_still_on_the_old_image_mean_a_rollout_in_progress(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = IMAGE.replace("v2.1.0", "v2.0.0")
    healthy_lab.put("pods", k8s_api.pod("diagon-daemon-0", "diagon", "diagon-daemon", old, node="gpu-node-a"))
    _, report = verify_lab(tmp_path, capsys)
    check = failing(report, "diagon.image")
    assert check["detail"] == "pods still on an older image: diagon-daemon-0"
    assert "rollout status daemonset/diagon-daemon" in check["fix"]


def test_a_missing_opt_in_label_fails_the_namespace(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_lab.put("namespaces", k8s_api.namespace("ai-workloads", {"team": "ml"}))
    code, report = verify_lab(
        tmp_path, capsys, workloadNamespaces=[{"name": "ai-workloads", "create": True}, {"name": "absent"}]
    )
    assert code == 1
    check = failing(report, "namespace.ai-workloads")
    assert check["detail"] == "no managed-mldiagnostics-gke label"
    assert "labels the namespace managed-mldiagnostics-gke=true" in check["fix"]
    assert failing(report, "namespace.absent")["detail"] == "namespace absent does not exist"


def test_a_failed_release_reports_helms_description(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ns, release = compat.MLDIAGNOSTICS_NAMESPACE, compat.INJECTION_WEBHOOK_RELEASE
    healthy_lab.put(
        "secrets",
        k8s_api.helm_release_secret(
            release,
            ns,
            3,
            "failed",
            compat.INJECTION_WEBHOOK_CHART,
            "0.25.0",
            description='Upgrade "mldiagnostics-injection-webhook" failed: context deadline exceeded',
        ),
    )
    report, check = lab_fails(tmp_path, capsys, f"helm.{release}")
    assert check["detail"] == (
        f"{ns}/{release} revision 3 (mldiagnostics-injection-webhook 0.25.0) is failed: "
        'Upgrade "mldiagnostics-injection-webhook" failed: context deadline exceeded'
    )
    assert check["fix"].startswith(f"see `helm history {release} -n {ns}`")


def test_a_release_on_another_chart_version_or_missing(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for rev in (1, 2):
        healthy_lab.delete(
            "secrets",
            compat.MLDIAGNOSTICS_NAMESPACE,
            f"sh.helm.release.v1.{compat.CONNECTION_OPERATOR_RELEASE}.v{rev}",
        )
    _, report = verify_lab(
        tmp_path, capsys, manualInstall={"jaxVersion": "0.8", "injectionWebhook": {"version": "0.26.0"}}
    )
    assert failing(report, "helm.mldiagnostics-injection-webhook")["detail"].endswith(
        "is deployed but the config names chart 0.26.0"
    )
    check = failing(report, "helm.mldiagnostics-connection-operator")
    assert (
        check["detail"] == "no Helm release mldiagnostics-connection-operator in namespace gke-mldiagnostics"
    )


def test_unavailable_workloads_and_an_empty_ca_bundle(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_lab.put(
        "deployments",
        k8s_api.deployment("cert-manager-webhook", "cert-manager", release="cert-manager", available=0),
    )
    healthy_lab.put(
        "mutatingwebhookconfigurations",
        k8s_api.mutating_webhook(
            "mldiagnostics-injection-webhook", compat.INJECTION_WEBHOOK_RELEASE, "gke-mldiagnostics", ""
        ),
    )
    _, report = verify_lab(tmp_path, capsys)
    assert failing(report, "workloads.cert-manager")["detail"] == (
        "cert-manager-webhook 0/1 available (MinimumReplicasUnavailable: Deployment does not have minimum availability.)"
    )
    check = failing(report, "webhook.ca-injected")
    assert (
        check["detail"]
        == "caBundle empty on mldiagnostics-injection-webhook/mldiagnostics.injection.webhook.example"
    )
    assert "cainjector" in check["fix"]


def test_preinstalled_cert_manager_is_found_by_its_component_labels(
    kube: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from tests.fixtures.verify import kubeconfig, seed_manual_install

    (tmp_path / "kc").write_text(yaml.safe_dump(kubeconfig(kube.url)))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    seed_manual_install(kube, cert_manager=False)
    for comp in ("controller", "webhook", "cainjector"):
        kube.put(
            "deployments",
            k8s_api.deployment(f"cm-{comp}", "cert-manager", labels={"app.kubernetes.io/component": comp}),
        )
    code, report = verify_lab(
        tmp_path, capsys, certManager={"enabled": False}, workloadNamespaces=[], diagon={"enabled": False}
    )
    assert code == 0, report
    assert (
        checks(report)["workloads.cert-manager"]["detail"]
        == "available: cm-cainjector, cm-controller, cm-webhook"
    )
    assert "helm.cert-manager" not in checks(report)


def test_forbidden_reads_fail_with_the_rbac_hint(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_lab.forbidden.add(("secrets", "cert-manager"))
    _, report = verify_lab(tmp_path, capsys)
    check = failing(report, "helm.cert-manager")
    assert check["detail"] == "read failed: HTTP 403 Forbidden"
    assert "verifyRbac" in check["fix"]


def test_an_unreachable_cluster_exits_3_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    import yaml

    from tests.fixtures.verify import kubeconfig

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "kc").write_text(yaml.safe_dump(kubeconfig(f"http://127.0.0.1:{port}")))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    code, report, _ = run_verify(
        capsys, stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    )
    assert code == 3
    (target,) = report["targets"]
    assert target["checks"] == []
    assert target["unreachable"].startswith("Kubernetes API not reachable: MaxRetryError")
    assert report["summary"] == "0/0 checks passed on 1 target(s); unreachable: kubernetesClusters/lab"


def test_a_missing_context_is_unreachable_not_a_crash(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = verify_lab(tmp_path, capsys, context="nope")
    assert code == 3
    assert report["targets"][0]["unreachable"].startswith("kubeconfig unusable: ConfigException")


@pytest.mark.parametrize("level", ["baseline", "restricted"])
def test_a_namespace_whose_pod_security_refuses_the_daemon_names_the_label(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str], level: str
) -> None:
    healthy_lab.put("namespaces", k8s_api.namespace("diagon", {"pod-security.kubernetes.io/enforce": level}))
    code, report, _ = run_verify(
        capsys, stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    )
    assert code == 1
    got = checks(report)["diagon.admission"]
    assert got["ok"] is False
    assert got["detail"] == (
        f"namespace diagon enforces Pod Security {level!r}, which refuses the privileged hostNetwork daemon"
    )
    assert got["fix"].startswith(
        "`kubectl label namespace diagon pod-security.kubernetes.io/enforce=privileged --overwrite`"
    )


def test_pods_refused_by_the_cluster_default_level_are_reported_from_the_events(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_lab.put("namespaces", k8s_api.namespace("diagon"))  # no label: the cluster's default applies
    for i in range(2):
        healthy_lab.delete("pods", "diagon", f"diagon-daemon-{i}")
    refused = (
        'Error creating: pods "diagon-daemon-x7k2p" is forbidden: violates PodSecurity "baseline:latest": '
        'host namespaces (hostNetwork=true), privileged (container "diagon-daemon" must not set '
        "securityContext.privileged=true)"
    )
    healthy_lab.put(
        "events", k8s_api.event("diagon", "diagon-daemon.1", "diagon-daemon", "FailedCreate", refused)
    )
    code, report, _ = run_verify(
        capsys, stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    )
    assert code == 1
    got = checks(report)["diagon.admission"]
    assert (got["ok"], got["detail"]) == (False, f"pods refused by admission: {refused}")
    assert "the cluster's default Pod Security level applies" in got["fix"]
    assert healthy_lab.writes() == []
