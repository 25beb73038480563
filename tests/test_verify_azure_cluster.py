"""Azure ML extension checks inside the cluster: verify reaches an AKS cluster through the user credentials
ARM lists (a loopback ARM fake answering listClusterUserCredential with a kubeconfig for a loopback Kubernetes
API fake), reads the extension's health report code by code, its pods, and the clashes the troubleshooting
guide names; the verify role allows exactly what it reads."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.fakes import k8s_api
from dev.fakes.arm_api import FakeArm
from dev.fakes.k8s_api import FakeKubeApi
from ml_diagnostics.verify_rbac import azure_verify_rules
from program.clouds.azure import AZURE
from program.clouds.azure_client import Arm
from program.config import parse
from program.kinds.azure_ml.model import AzureMlTarget
from program.kinds.azure_ml.verify import record_of
from program.kinds.azure_ml.verify_cluster import HEALTHCHECK_CODES, expected_components
from program.kinds.context import VerifyContext
from program.verify.result import TargetResult
from tests.fixtures.verify import AZURE_SUB, aml_target, checks, kubeconfig, run_verify, stack_file
from tests.test_verify_rbac import allowed, attributes

CLUSTER = (
    f"/subscriptions/{AZURE_SUB}/resourceGroups/rg-ml"
    "/providers/Microsoft.ContainerService/managedClusters/gpu-lab"
)
EXT = f"{CLUSTER}/providers/Microsoft.KubernetesConfiguration/extensions/azureml"
CREDENTIALS = f"{CLUSTER}/listClusterUserCredential"


def components_of(target: AzureMlTarget) -> list[str]:
    """The pods verify expects for a target: from the record its component writes."""
    return expected_components(record_of(target))


def target(**over: Any) -> dict[str, Any]:
    defaults = {
        "inference": {"enabled": True, "routerServiceType": "LoadBalancer", "allowInsecureConnections": True},
        "verifyAccess": {"aksUserCredentials": True},
    }
    return aml_target("aks", **(defaults | over))


def model(**over: Any) -> AzureMlTarget:
    return AzureMlTarget.model_validate(target(**over))


@pytest.fixture
def kube() -> Iterator[FakeKubeApi]:
    with FakeKubeApi() as fake:
        yield fake


@pytest.fixture
def arm(kube: FakeKubeApi) -> Iterator[FakeArm]:
    with FakeArm() as fake:
        text = yaml.safe_dump(kubeconfig(kube.url, "clusterUser_rg-ml_gpu-lab"))
        fake.actions[CREDENTIALS.lower()] = {
            "kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(text.encode()).decode()}]
        }
        yield fake


def extension_state(
    arm: FakeArm, state: str = "Succeeded", statuses: list[dict[str, str]] | None = None
) -> None:
    arm.put(EXT, {"properties": {"provisioningState": state, "statuses": statuses or []}})


def seed_healthy(kube: FakeKubeApi, t: AzureMlTarget) -> None:
    kube.put("namespaces", k8s_api.namespace("azureml"))
    for i, component in enumerate(components_of(t)):
        kube.put(
            "pods", k8s_api.pod(f"{component}-5d9c-{i}", "azureml", "main", "example.com/x:1", node="n1")
        )
    for crd_name in ("prometheuses.monitoring.coreos.com", "jobs.batch.volcano.sh"):
        kube.put("customresourcedefinitions", k8s_api.crd(crd_name, release="azureml"))
    kube.put(
        "ingressclasses", k8s_api.ingress_class("azureml-nginx", "k8s.io/ingress-nginx", release="azureml")
    )


def verify(arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str], **over: Any):
    config = stack_file(tmp_path, {"environment": "dev", "azureMl": [target(**over)]})
    code, report, err = run_verify(capsys, config, "--arm-endpoint", arm.url)
    return code, checks(report, "azureMl/ml") if report else {}, err


def test_a_healthy_extension_passes_and_the_role_allows_exactly_what_verify_reads(
    arm: FakeArm, kube: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extension_state(arm)
    seed_healthy(kube, model())
    code, got, _ = verify(arm, tmp_path, capsys)
    assert code == 0, got
    assert {n: c["ok"] for n, c in got.items()} == {
        "azureml.extension": True,
        "azureml.namespace": True,
        "azureml.healthcheck": True,
        "azureml.pods": True,
        "azureml.clash.prometheus": True,
        "azureml.clash.volcano": True,
        "azureml.clash.ingress-class": True,
    }
    assert got["azureml.pods"]["detail"] == "13 components Running and ready"
    assert [(m, p) for m, p, _ in arm.requests] == [("GET", EXT), ("POST", CREDENTIALS)]
    assert kube.writes() == []
    # the same again with the health report present: verify then reads it too
    kube.put("configmaps", k8s_api.config_map("arcml-healthcheck", "azureml", {"pre-install": "all passed"}))
    assert verify(arm, tmp_path, capsys)[0] == 0
    requests = {a for r in kube.requests if (a := attributes(r))}
    rules = azure_verify_rules(ingress_classes=True)
    assert [a for a in sorted(requests) if not allowed(rules, a)] == []
    cluster, namespaced = rules
    for i in range(len(cluster)):
        assert any(not allowed((cluster[:i] + cluster[i + 1 :], namespaced), a) for a in requests), cluster[i]
    for ns, ns_rules in namespaced.items():
        for i in range(len(ns_rules)):
            fewer = (cluster, {**namespaced, ns: ns_rules[:i] + ns_rules[i + 1 :]})
            assert any(not allowed(fewer, a) for a in requests), (ns, ns_rules[i])


@pytest.mark.parametrize("code", sorted(HEALTHCHECK_CODES))
def test_each_health_check_code_is_a_finding_with_the_guides_fix(
    arm: FakeArm, kube: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str], code: str
) -> None:
    extension_state(arm, "Failed", [{"level": "Error", "message": "pre-install health check failed"}])
    seed_healthy(kube, model())
    report = f"[pre-install] {code}: {HEALTHCHECK_CODES[code][0]}\n[pre-delete] passed\n"
    kube.put("configmaps", k8s_api.config_map("arcml-healthcheck", "azureml", {"pre-install": report}))
    exit_code, got, _ = verify(arm, tmp_path, capsys)
    assert exit_code == 1
    name, meaning, fix = HEALTHCHECK_CODES[code]
    check = got[f"azureml.healthcheck.{code}"]
    assert check["ok"] is False
    assert check["detail"] == f"pre-install: {code} {name}: {meaning}"
    assert check["fix"] == f"{fix} (how-to-troubleshoot-kubernetes-extension.md: Error Code of HealthCheck)"


def test_codes_of_a_succeeded_extension_are_shown_without_failing_and_unknown_codes_as_they_are(
    arm: FakeArm, kube: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extension_state(arm)
    seed_healthy(kube, model())
    data = {
        "pre-upgrade": "E40007 INVALID_SSL_SETTING\n",
        "pre-rollback": "E49999 SOMETHING_NEW: ask support\n",
    }
    kube.put("configmaps", k8s_api.config_map("arcml-healthcheck", "azureml", data))
    code, got, _ = verify(arm, tmp_path, capsys)
    assert code == 0
    assert got["azureml.healthcheck.E40007"]["ok"] is True
    assert got["azureml.healthcheck.E40007"]["detail"].endswith(
        "(the extension is Succeeded: an earlier run's report)"
    )
    assert got["azureml.healthcheck.E49999"]["detail"] == (
        "pre-rollback: E49999 (not in the guide's table): E49999 SOMETHING_NEW: ask support "
        "(the extension is Succeeded: an earlier run's report)"
    )


def test_missing_and_unready_pods_say_why(
    arm: FakeArm, kube: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extension_state(arm)
    seed_healthy(kube, model())
    kube.delete("pods", "azureml", "gateway-5d9c-0")
    fe = next(k[3] for k in kube.objects if k[1] == "pods" and k[3].startswith("azureml-fe-v2-"))
    kube.delete("pods", "azureml", fe)
    kube.put(
        "pods",
        k8s_api.pending_pod("azureml-fe-v2-7f-a", "azureml", "0/3 nodes are available: 3 Insufficient cpu."),
    )
    op = next(k[3] for k in kube.objects if k[1] == "pods" and k[3].startswith("aml-operator-"))
    kube.put(
        "pods", k8s_api.pod(op, "azureml", "main", "x:1", node="n1", ready=False, waiting="CrashLoopBackOff")
    )
    code, got, _ = verify(arm, tmp_path, capsys)
    assert code == 1
    assert got["azureml.pods"]["detail"] == (
        "missing: gateway; not ready: aml-operator-5d9c-1: main CrashLoopBackOff; azureml-fe-v2-7f-a: Pending: "
        "0/3 nodes are available: 3 Insufficient cpu."
    )


def test_only_the_components_of_the_chosen_workloads_and_flags_are_expected() -> None:
    training_only = model(inference={"enabled": False})
    assert "azureml-fe-v2" not in components_of(training_only)
    assert "volcano-scheduler" in components_of(training_only)
    assert "volcano-scheduler" not in components_of(model(installVolcano=False))
    assert "azureml-prometheus-operator" not in components_of(model(installPromOp=False))
    assert "azureml-dcgm-exporter" in components_of(model(installDcgmExporter=True))
    assert "relayserver" not in components_of(model())


def test_a_terminating_namespace_is_reported_with_the_guides_fix(
    arm: FakeArm, kube: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extension_state(
        arm,
        "Failed",
        [
            {
                "level": "Error",
                "message": "unable to create new content in namespace azureml because it is being terminated",
            }
        ],
    )
    kube.put("namespaces", k8s_api.terminating_namespace("azureml"))
    code, got, _ = verify(arm, tmp_path, capsys)
    assert code == 1
    assert (
        got["azureml.namespace"]["detail"]
        == "namespace azureml is terminating: an uninstall has not finished"
    )
    assert (
        "wait until `az k8s-extension show` no longer finds the extension" in got["azureml.extension"]["fix"]
    )
    assert set(got) == {"azureml.extension", "azureml.namespace"}


@pytest.mark.parametrize(
    "settings, clash",
    [
        ({}, {"prometheus", "volcano", "ingress-class"}),
        (
            {
                "installPromOp": False,
                "installVolcano": False,
                "nginxIngressController": "k8s.io/amlarc-ingress-nginx",
            },
            set(),
        ),
    ],
)
def test_clashes_with_what_the_cluster_already_runs(
    arm: FakeArm,
    kube: FakeKubeApi,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    settings: dict[str, Any],
    clash: set[str],
) -> None:
    extension_state(arm)
    seed_healthy(kube, model(**settings))
    kube.put(
        "customresourcedefinitions",
        k8s_api.crd(
            "prometheuses.monitoring.coreos.com", release="kube-prometheus-stack", release_ns="monitoring"
        ),
    )
    kube.put(
        "customresourcedefinitions",
        k8s_api.crd("jobs.batch.volcano.sh", release="volcano", release_ns="volcano-system"),
    )
    kube.put(
        "ingressclasses",
        k8s_api.ingress_class(
            "nginx", "k8s.io/ingress-nginx", release="ingress-nginx", release_ns="ingress-nginx"
        ),
    )
    code, got, _ = verify(arm, tmp_path, capsys, **settings)
    failed = {n.removeprefix("azureml.clash.") for n, c in got.items() if not c["ok"]}
    assert failed == clash
    assert code == (1 if clash else 0)
    if clash:
        assert got["azureml.clash.prometheus"]["detail"] == (
            "prometheuses.monitoring.coreos.com belongs to monitoring/kube-prometheus-stack, not to the extension: "
            "the cluster runs another prometheus and the extension would install its own"
        )
        assert got["azureml.clash.prometheus"]["fix"].startswith("set installPromOp: false")
        assert got["azureml.clash.volcano"]["fix"].startswith("set installVolcano: false")
        assert got["azureml.clash.ingress-class"]["fix"].startswith(
            "set nginxIngressController to another class"
        )


def test_the_deployment_errors_of_the_guide_get_its_fix(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for message, fix in (
        ("Error: earlier operation for the helm chart is still in progress", "wait about an hour"),
        ("failed in download the Chart path not found", "the pinned version does not exist"),
        (
            'CustomResourceDefinition "jobs.batch.volcano.sh" exists and cannot be imported into the current release: invalid ownership metadata',
            "set installVolcano: false",
        ),
        ("Error: can't reuse a name that is still in use", "the extension name is in use"),
    ):
        extension_state(arm, "Failed", [{"level": "Error", "message": message}])
        code, got, _ = verify(arm, tmp_path, capsys, verifyAccess=None)
        assert code == 1
        assert message in got["azureml.extension"]["detail"]
        assert fix in got["azureml.extension"]["fix"], message


def test_without_verify_access_only_arm_is_read_and_the_report_says_so(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extension_state(arm)
    code, got, _ = verify(arm, tmp_path, capsys, verifyAccess=None)
    assert code == 0
    assert got["azureml.in-cluster"]["detail"].startswith("not checked: set verifyAccess")
    assert [m for m, _, _ in arm.requests] == ["GET"]


def test_no_user_credentials_role_is_unreachable_with_the_role_to_grant(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extension_state(arm)
    arm.errors[CREDENTIALS.lower()] = (403, "AuthorizationFailed", "no listClusterUserCredential/action")
    config = stack_file(tmp_path, {"environment": "dev", "azureMl": [target()]})
    code, report, _ = run_verify(capsys, config, "--arm-endpoint", arm.url)
    assert code == 3
    (t,) = report["targets"]
    assert t["unreachable"].startswith(f"ARM POST {CREDENTIALS}: HTTP 403 AuthorizationFailed")


def test_an_arc_cluster_is_read_through_its_kubeconfig_secret(kube: FakeKubeApi, arm: FakeArm) -> None:
    arc = target(verifyAccess={"kubeconfig": yaml.safe_dump(kubeconfig(kube.url, "arc-admin"))})
    arc["cluster"] = {**arc["cluster"], "kind": "arc"}
    arc["inference"] = {"enabled": False}
    cfg = parse(
        {"ml-diagnostics:environment": "dev", "ml-diagnostics:azureMl": [arc]}, ["ml-diagnostics:azureMl"]
    )
    t = cfg.azure_ml[0]
    arc_ext = EXT.replace(
        "Microsoft.ContainerService/managedClusters", "Microsoft.Kubernetes/connectedClusters"
    )
    arm.put(arc_ext, {"properties": {"provisioningState": "Succeeded"}})
    seed_healthy(kube, t)
    result = TargetResult("azureMl", "ml")
    from program.kinds.azure_ml.verify import verify as verify_target

    ctx = VerifyContext(cfg, {"arm_endpoint": arm.url})
    verify_target(t, ctx, result)
    got = {c.name: c.ok for c in result.checks}
    assert got["azureml.pods"] is True and "relayserver" in components_of(t)
    assert "azureml.clash.ingress-class" not in got  # Arc: the extension brings no nginx ingress
    assert isinstance(ctx.client(AZURE), Arm) and ctx.client(AZURE) is ctx.client(AZURE)


def test_a_pinned_version_that_is_not_the_running_one_fails(
    arm: FakeArm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arm.put(EXT, {"properties": {"provisioningState": "Succeeded", "currentVersion": "1.1.41"}})
    pinned = {"version": "1.1.39", "autoUpgradeMinorVersion": False, "verifyAccess": None}
    code, got, _ = verify(arm, tmp_path, capsys, **pinned)
    assert code == 1
    assert got["azureml.extension"]["detail"] == "azureml Succeeded but runs 1.1.41, not the pinned 1.1.39"
    arm.put(EXT, {"properties": {"provisioningState": "Succeeded", "currentVersion": "1.1.39"}})
    assert verify(arm, tmp_path, capsys, **pinned)[0] == 0
