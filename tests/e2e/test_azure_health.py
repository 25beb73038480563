"""Azure ML in-cluster health with the real engine: the loopback control plane plays the AKS cluster. The
extension's namespace, its health report (configmap arcml-healthcheck), a Prometheus operator's CRD and an
nginx IngressClass of other releases are created on the real API server; the stack's verifyAccess kubeconfig
is a secret set with `pulumi config set --secret`, which `mldiag verify --pulumi-stack` reads through the real
CLI; ARM is the loopback fake. The extension's components run as Deployments on an AKS node pool
(dev/e2e/node_pools.py; the real scheduler places them, kwok runs them), aml-operator's pods crash-looping
(kwok's pod-crash-loop stage). Verify reports the code with the guide's fix, the clashes, the crash-looping
component, and nothing else is written anywhere."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dev.e2e.control_plane import ControlPlane
from dev.e2e.harness import REPO, Project
from dev.e2e.node_pools import CRASH_LOOP, aks_cpu, create_pool
from dev.fakes.arm_api import FakeArm
from program.kinds.azure_ml.verify_cluster import COMPONENTS
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

SUB = "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f"
CLUSTER = (
    f"/subscriptions/{SUB}/resourceGroups/rg-ml/providers/Microsoft.ContainerService/managedClusters/aks-lab"
)
EXT = f"{CLUSTER}/providers/Microsoft.KubernetesConfiguration/extensions/azureml"
OTHER = {"meta.helm.sh/release-name": "kube-prometheus-stack", "meta.helm.sh/release-namespace": "monitoring"}
REPORT = (
    "pre-install:\n  - check: inference router HA\n    result: failed\n"
    "    code: E40002 INSUFFICIENT_NODE (1 node, 3 needed)\n  - check: network\n    result: passed\n"
)


def create(cp: ControlPlane, path: str, body: dict) -> None:
    r = cp.api("POST", path, json=body)
    assert r.status_code in (201, 409), r.text


def seed_cluster(cp: ControlPlane) -> None:
    create(cp, "/api/v1/namespaces", {"metadata": {"name": "azureml"}})
    create(
        cp,
        "/api/v1/namespaces/azureml/configmaps",
        {
            "metadata": {"name": "arcml-healthcheck"},
            "data": {"pre-install": REPORT, "pre-delete": "passed\n"},
        },
    )
    create(
        cp,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        {
            "metadata": {"name": "prometheuses.monitoring.coreos.com", "annotations": OTHER},
            "spec": {
                "group": "monitoring.coreos.com",
                "scope": "Namespaced",
                "names": {"plural": "prometheuses", "singular": "prometheus", "kind": "Prometheus"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        },
    )
    create(
        cp,
        "/apis/networking.k8s.io/v1/ingressclasses",
        {
            "metadata": {
                "name": "nginx",
                "annotations": {
                    "meta.helm.sh/release-name": "ingress-nginx",
                    "meta.helm.sh/release-namespace": "ingress-nginx",
                },
            },
            "spec": {"controller": "k8s.io/ingress-nginx"},
        },
    )


SEEDED = (
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/prometheuses.monitoring.coreos.com",
    "/apis/networking.k8s.io/v1/ingressclasses/nginx",
    "/api/v1/namespaces/azureml",
)
# the components this target runs (training and inference on AKS, the install flags at their defaults)
RUNNING = [
    c.name.format(ext="azureml") for c in COMPONENTS if c.when in ("", "install_prom_op", "install_volcano")
]
CRASHING = "aml-operator"


def deploy_components(cp: ControlPlane) -> None:
    """Each component as a one-replica Deployment; aml-operator's pods exit over and over."""
    for name in RUNNING:
        annotations = {CRASH_LOOP: "manager: failed to reach the Kubernetes API"} if name == CRASHING else {}
        labels = {"app": name}
        create(
            cp,
            "/apis/apps/v1/namespaces/azureml/deployments",
            {
                "metadata": {"name": name},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels, "annotations": annotations},
                        "spec": {
                            "containers": [{"name": name, "image": f"mcr.microsoft.com/azureml/{name}:1.1.0"}]
                        },
                    },
                },
            },
        )


def components_settled(cp: ControlPlane) -> bool:
    """Every component has a pod kwok has reported on (running and ready, or crash-looping)."""
    pods = cp.get("/api/v1/namespaces/azureml/pods")["items"]
    reported = {
        p["metadata"]["labels"].get("app") for p in pods if p.get("status", {}).get("containerStatuses")
    }
    return reported >= set(RUNNING)


@pytest.fixture
def seeded(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    nodes = create_pool(control_plane, aks_cpu(), 3)
    seed_cluster(control_plane)
    deploy_components(control_plane)
    try:
        yield control_plane
    finally:
        for path in SEEDED:  # the shared control plane goes back as it was for the tests after this one
            control_plane.api("DELETE", path)
        for node in nodes:
            control_plane.api("DELETE", f"/api/v1/nodes/{node}")


def test_verify_reads_the_extensions_health_report_and_clashes_through_a_secret_kubeconfig(
    e2e_bin: Path, seeded: ControlPlane, tmp_path: Path
) -> None:
    control_plane = seeded
    project = Project(tmp_path, e2e_bin)
    target = {
        "name": "lab",
        "extensionName": "azureml",
        "cluster": {
            "kind": "aks",
            "subscriptionId": SUB,
            "resourceGroup": "rg-ml",
            "name": "aks-lab",
            "location": "koreacentral",
            "nodeCount": 1,
        },
        "training": True,
        "inference": {"enabled": True, "routerServiceType": "LoadBalancer", "allowInsecureConnections": True},
    }
    project.init_stack(
        "aml",
        {"environment": "dev", "azureMl": [target]},
        {"azureMl[0].verifyAccess.kubeconfig": control_plane.kubeconfig.read_text()},
    )
    assert "secure:" in project.stack_file("aml").read_text()
    with FakeArm() as arm:
        arm.put(
            EXT,
            {
                "properties": {
                    "provisioningState": "Failed",
                    "statuses": [{"level": "Error", "message": "pre-install health check failed"}],
                }
            },
        )
        deadline = time.monotonic() + 300
        while not components_settled(control_plane):  # a condition; the deadline only bounds a failure
            assert time.monotonic() < deadline, "the extension's pods were not placed and run within 300s"
            time.sleep(0.5)
        before = control_plane.get("/api/v1/namespaces/azureml/configmaps/arcml-healthcheck")["metadata"]
        t0 = time.monotonic()
        run = subprocess.run(
            [
                str(REPO / ".venv" / "bin" / "python"),
                "-m",
                "mldiag.verify",
                "aml",
                "--pulumi-stack",
                "aml",
                "--project",
                str(project.root),
                "--arm-endpoint",
                arm.url,
                "--format",
                "json",
            ],
            cwd=REPO,
            env=project.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        seconds = time.monotonic() - t0
        assert {m for m, _, _ in arm.requests} == {"GET"}
    assert run.returncode == 1, run.stderr
    assert "token" not in run.stdout and control_plane.token not in run.stdout + run.stderr
    (result,) = json.loads(run.stdout)["targets"]
    got = {c["name"]: c for c in result["checks"]}
    assert got["azureml.namespace"]["ok"] is True
    code = got["azureml.healthcheck.E40002"]
    assert (code["ok"], code["detail"]) == (
        False,
        "pre-install: E40002 INSUFFICIENT_NODE: inferenceRouterHA needs at least three nodes",
    )
    assert code["fix"].startswith("set inference.routerHA: false")
    assert got["azureml.clash.prometheus"]["ok"] is False
    assert "monitoring/kube-prometheus-stack" in got["azureml.clash.prometheus"]["detail"]
    assert got["azureml.clash.volcano"]["ok"] is True  # no Volcano CRD on this cluster
    assert got["azureml.clash.ingress-class"]["ok"] is False
    # every component runs but aml-operator, whose pod crash-loops (kwok's stage): named with the kubelet's reason
    assert re.fullmatch(
        r"not ready: aml-operator-[a-z0-9]+-[a-z0-9]+: aml-operator CrashLoopBackOff",
        got["azureml.pods"]["detail"],
    ), got["azureml.pods"]["detail"]
    # read-only: the report is as it was
    after = control_plane.get("/api/v1/namespaces/azureml/configmaps/arcml-healthcheck")["metadata"]
    assert after["resourceVersion"] == before["resourceVersion"]
    TIMINGS["azure verify (CLI decrypt + ARM + in-cluster)"] = seconds
