"""Diagon on a cluster whose placement Kubernetes decides (issue 43): a loopback cluster of its own with
GKE GPU, TPU and CPU node pools (dev/e2e/node_pools.py: the labels, taints and capacities GKE gives them),
the real kube-scheduler and controllers, kwok as every node's kubelet. A small Python program deploys the
library's Diagon with its GKE default placement through the real engine, and `mldiag verify --stack` checks it:

- Diagon runs on exactly the GPU and TPU nodes, none on a CPU node (`pulumi up` awaited its rollout);
- a GPU pool added after `pulumi up` gets Diagon with no update (the preview still shows no change);
- a node whose kubelet reports NotReady, and a node whose pod capacity is used up: verify fails
  `diagon.ready` (exit 1, README's table) naming each node and why: its Ready condition, the scheduler's
  own message;
- the program's manual install (the real cert-manager chart, injection webhook, connection operator as Helm
  releases, one replica each): the releases' await passes because the scheduler placed their pods (on the CPU
  pool: the accelerator pools' taints keep them off) and kwok ran them (and completed cert-manager's
  post-install Job).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dev.e2e.chart_repo import ChartRepo
from dev.e2e.control_plane import ControlPlane
from dev.e2e.harness import Project
from dev.e2e.node_pools import NOT_READY, Pool, create_pool, gke_cpu, gke_gpu, gke_h100, gke_tpu
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS
from tests.fixtures.verify import GOOD_LOG

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

STACK = "organization/diagon-placement/dev"
IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
PROGRAM = f'''\
import pulumi
import pulumi_kubernetes as k8s

from ml_diagnostics import Diagon

cluster = k8s.Provider("gke", kubeconfig=pulumi.Config().require_secret("kubeconfig"))
Diagon("profiler", {{"namespace": "profiler", "image": "{IMAGE}"}}, pulumi.ResourceOptions(providers=[cluster]))
'''
PODS = "/api/v1/namespaces/profiler/pods?labelSelector=name%3Ddiagon-daemon"
WAIT_SECONDS = 300.0


def wait_for(what: str, condition: Callable[[], Any], timeout: float = WAIT_SECONDS) -> Any:
    """Polls until condition() is truthy (its value is returned); the timeout only bounds a failure."""
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.5)


@dataclass
class Cluster:
    cp: ControlPlane
    project: Project
    program: Path
    pools: dict[str, list[str]]

    def pulumi(self, *args: str) -> subprocess.CompletedProcess[str]:
        split = args.index("--") if "--" in args else len(args)
        run = subprocess.run(
            [str(self.project.cli), *args[:split], "--non-interactive", *args[split:]],
            cwd=self.program,
            env=self.project.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, f"pulumi {' '.join(args)}\n{run.stdout[-4000:]}\n{run.stderr[-3000:]}"
        return run

    def verify(self, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
        code, report, err = self.project.verify_stack(STACK, self.program, *args)
        checks = {c["name"]: c for t in report.get("targets", []) for c in t["checks"]}
        return code, checks, err

    def placement(self) -> dict[str, bool]:
        """node -> whether its Diagon pod is ready, for every Diagon pod."""
        return {
            p["spec"].get("nodeName") or f"(pending {p['metadata']['name']})": any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p.get("status", {}).get("conditions", [])
            )
            for p in self.cp.get(PODS)["items"]
        }

    def add(self, pool: Pool, size: int, **kw: Any) -> list[str]:
        names = create_pool(self.cp, pool, size, **kw)
        self.pools.setdefault(pool.name, []).extend(names)
        return names


@pytest.fixture(scope="module")
def cluster(e2e_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with ControlPlane(e2e_bin) as cp:
        cp.set_pod_log(GOOD_LOG)
        project = Project(tmp_path_factory.mktemp("cluster-scenarios"), e2e_bin)
        program = project.program("placement", "diagon-placement", PROGRAM)
        c = Cluster(cp, project, program, {})
        for pool, size in ((gke_gpu(), 3), (gke_tpu(), 2), (gke_cpu(), 2)):
            c.add(pool, size)
        c.pulumi("stack", "init", "dev", "--secrets-provider", "passphrase")
        c.pulumi("config", "set", "--secret", "kubeconfig", "--stack", "dev", "--", cp.kubeconfig.read_text())
        yield c


def accelerators(c: Cluster) -> set[str]:
    return {n for pool, names in c.pools.items() if not pool.startswith("default") for n in names}


def test_1_diagon_runs_on_exactly_the_gpu_and_tpu_nodes(cluster: Cluster) -> None:
    t0 = time.monotonic()
    cluster.pulumi("up", "--yes", "--skip-preview", "--stack", "dev")
    TIMINGS["placement up (7 nodes)"] = time.monotonic() - t0
    # `pulumi up` awaited the DaemonSet's rollout: every pod is already placed and ready
    assert cluster.placement() == {n: True for n in accelerators(cluster)}
    assert not set(cluster.placement()) & set(cluster.pools["default-pool"])
    code, checks, err = cluster.verify()
    assert code == 0, (checks, err)
    assert checks["diagon.scheduled"]["detail"].startswith("5 pod(s) desired (node affinity: any node with ")
    assert checks["diagon.logs"]["detail"] == "read 5 of 5 pod logs: all show the 3 log signatures"


def test_2_a_gpu_pool_added_after_up_gets_diagon_with_no_update(cluster: Cluster) -> None:
    added = cluster.add(gke_h100(), 2)
    wait_for("Diagon ready on the new pool", lambda: all(cluster.placement().get(n) for n in added))
    assert cluster.placement() == {n: True for n in accelerators(cluster)}
    preview = cluster.pulumi("preview", "--stack", "dev", "--expect-no-changes")
    assert "error" not in preview.stderr.lower()
    code, checks, err = cluster.verify()
    assert code == 0, (checks, err)
    assert checks["diagon.scheduled"]["detail"].startswith("7 pod(s) desired")


def test_3_a_not_ready_node_and_a_full_node_are_named_with_why(cluster: Cluster) -> None:
    sick = cluster.pools["gpu-l4"][0]
    patch = {"metadata": {"annotations": {NOT_READY: "container runtime is down"}}}
    resp = cluster.cp.api(
        "PATCH", f"/api/v1/nodes/{sick}", json=patch, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert resp.ok, resp.text

    def sick_is_not_ready() -> bool:
        conditions = cluster.cp.get(f"/api/v1/nodes/{sick}")["status"]["conditions"]
        return any(c["type"] == "Ready" and c["status"] == "False" for c in conditions)

    # kwok's node-not-ready stage: the kubelet reports Ready=False (its pods keep their last status)
    wait_for(f"{sick} NotReady", sick_is_not_ready)

    # a GPU node whose 1-pod capacity a training pod already holds: Diagon's pod cannot be placed
    full = "gke-gpu-full-0"
    filler = {
        "metadata": {"name": "trainer-0"},
        "spec": {
            "nodeName": full,
            "containers": [{"name": "main", "image": "example.com/trainer:1"}],
            "tolerations": [{"operator": "Exists"}],
        },
    }
    resp = cluster.cp.api("POST", "/api/v1/namespaces/default/pods", json=filler)
    assert resp.status_code == 201, resp.text
    (created,) = cluster.add(gke_gpu("gpu-full"), 1, pods="1")
    assert created == full

    def unschedulable() -> bool:
        for p in cluster.cp.get(PODS)["items"]:
            if p["spec"].get("nodeName"):
                continue
            for c in p.get("status", {}).get("conditions", []):
                if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                    return True
        return False

    wait_for("the scheduler to give up on Diagon's pod for the full node", unschedulable)
    code, checks, err = cluster.verify()
    assert code == 1, (checks, err)
    failed = {name: c["detail"] for name, c in checks.items() if not c["ok"]}
    ready = failed["diagon.ready"]
    assert ready.startswith("7/8 ready; "), ready
    assert (
        f"on {sick}: Running (node {sick}: Ready=False KubeletNotReady: container runtime is down)" in ready
    )
    assert f"on {full}: Pending, not scheduled: 0/" in ready and "1 Too many pods" in ready, ready
    # nothing else is blamed: the healthy accelerator nodes are not named
    healthy = accelerators(cluster) - {sick, full}
    assert not any(f"on {n}:" in ready for n in healthy), ready
    assert set(failed) <= {"diagon.ready", "diagon.logs"}, failed


def test_4_the_manual_install_is_ready_on_pods_the_scheduler_placed(
    cluster: Cluster, chart_repo: ChartRepo
) -> None:
    one = {"replicaCount": 1}
    target = {
        "name": "lab",
        "mode": "manual",
        "certManager": {"repository": chart_repo.url, "values": one},
        "manualInstall": {
            "jaxVersion": "0.8",
            "repository": chart_repo.url,
            "injectionWebhook": {"values": one},
            "connectionOperator": {"values": one},
        },
        "diagon": {"enabled": False},
    }
    project = cluster.project
    project.init_stack(
        "manual",
        {"environment": "dev", "kubernetesClusters": [target]},
        {"kubernetesClusters[0].kubeconfig": cluster.cp.kubeconfig.read_text()},
    )
    t0 = time.monotonic()
    project.pulumi("up", "--yes", "--skip-preview", stack="manual")
    TIMINGS["manual install up (3 releases, one pod each)"] = time.monotonic() - t0
    # `up` returned: Helm's await saw each Deployment available, i.e. a pod placed and reported ready (the
    # real cert-manager chart runs three: controller, cainjector, webhook)
    deployments = {d["metadata"]["name"]: d for d in cluster.cp.get("/apis/apps/v1/deployments")["items"]}
    workloads = {
        "cert-manager": ("cert-manager", "cert-manager-cainjector", "cert-manager-webhook"),
        "mldiagnostics-injection-webhook": ("mldiagnostics-injection-webhook",),
        "mldiagnostics-connection-operator": ("mldiagnostics-connection-operator",),
    }
    for release, names in workloads.items():
        for name in names:
            status = deployments[name]["status"]
            assert (status.get("readyReplicas"), status.get("availableReplicas")) == (1, 1), (name, status)
        selector = "app.kubernetes.io/instance%3D" + release
        pods = [
            p
            for p in cluster.cp.get(f"/api/v1/pods?labelSelector={selector}")["items"]
            if p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"  # not the post-install Job's
        ]
        assert len(pods) == len(names), (release, [p["metadata"]["name"] for p in pods])
        nodes = {p["spec"]["nodeName"] for p in pods}
        assert nodes <= set(cluster.pools["default-pool"]), nodes
