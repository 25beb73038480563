"""Verify's Diagon checks at the size of real accelerator clusters (issue 43): the number of API requests
does not grow with the nodes when every pod is healthy (paginated lists, no request per node), the logs read
are a fixed sample plus every pod not ready (`--all-logs`: every one), read concurrently, and the report
says how many of how many; each node the DaemonSet selects without a ready pod is named with why (its Ready
condition, the scheduler's message). Against the loopback API fake; nothing is timed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from dev.fakes import k8s_api
from dev.fakes.k8s_api import FakeKubeApi
from program.in_cluster import diagon
from tests.fixtures.verify import GOOD_LOG, IMAGE, checks, lab_target, run_verify, stack_file

GPU = "cloud.google.com/gke-accelerator"


def gpu_node(
    name: str, *, ready: str = "True", reason: str = "KubeletReady", message: str = ""
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {GPU: "nvidia-l4"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": reason, "message": message}]},
    }


def cluster(kube: FakeKubeApi, n: int, *, cpu_nodes: int = 0) -> None:
    """n GPU nodes, each with a ready Diagon pod (the DaemonSet's affinity: GKE's accelerator labels)."""
    kube.objects = {k: v for k, v in kube.objects.items() if k[1] not in ("pods", "daemonsets", "nodes")}
    kube.logs.clear()
    ds = k8s_api.daemon_set("diagon-daemon", "diagon", IMAGE, desired=n, ready=n, affinity_labels=[GPU])
    ds["spec"]["template"]["spec"]["tolerations"] = [
        {"operator": "Exists", "effect": "NoSchedule"},
        {"operator": "Exists", "effect": "NoExecute"},
    ]
    kube.put("daemonsets", ds)
    for i in range(n):
        kube.put("nodes", gpu_node(f"gpu-{i:05d}"))
        name = f"diagon-daemon-{i:05d}"
        kube.put("pods", k8s_api.pod(name, "diagon", "diagon-daemon", IMAGE, node=f"gpu-{i:05d}"))
        kube.logs[("diagon", name, "diagon-daemon")] = GOOD_LOG
    for i in range(cpu_nodes):
        kube.put("nodes", {**gpu_node(f"cpu-{i}"), "metadata": {"name": f"cpu-{i}", "labels": {}}})


def verify(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    cfg = {"environment": "dev", "kubernetesClusters": [lab_target(diagon={"enabled": True, "image": IMAGE})]}
    code, report, _ = run_verify(capsys, stack_file(tmp_path, cfg), *args)
    return code, checks(report)


def requests_of(kube: FakeKubeApi) -> list[str]:
    return [r.path for r in kube.requests]


def test_the_requests_are_the_same_at_100_and_5000_healthy_nodes(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = {}
    for n in (100, 5000):
        cluster(healthy_lab, n)
        healthy_lab.requests.clear()
        code, got = verify(tmp_path, capsys)
        assert code == 0, got
        assert got["diagon.logs"]["detail"] == (
            f"read {diagon.LOG_SAMPLE} of {n} pod logs (a sample of {diagon.LOG_SAMPLE} and every pod not "
            "ready; --all-logs reads every one): all show the 3 log signatures"
        )
        paths = requests_of(healthy_lab)
        assert paths.count("/api/v1/nodes") == 1 and paths.count("/api/v1/namespaces/diagon/pods") == 1
        counts[n] = len(paths)
    assert counts[100] == counts[5000]


def test_every_pod_not_ready_is_read_besides_the_sample_and_all_logs_reads_every_one(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster(healthy_lab, 40)
    for i in (3, 17):
        name = f"diagon-daemon-{i:05d}"
        healthy_lab.put(
            "pods", k8s_api.pod(name, "diagon", "diagon-daemon", IMAGE, node=f"gpu-{i:05d}", ready=False)
        )
        healthy_lab.logs[("diagon", name, "diagon-daemon")] = "I1130 main.go:41] Starting\n"
    healthy_lab.requests.clear()
    code, got = verify(tmp_path, capsys)
    assert code == 1
    reads = {p.split("/")[-2] for p in requests_of(healthy_lab) if p.endswith("/log")}
    assert {"diagon-daemon-00003", "diagon-daemon-00017"} <= reads
    assert len(reads) == diagon.LOG_SAMPLE + 2
    assert got["diagon.logs"]["detail"].endswith(
        f"(read {diagon.LOG_SAMPLE + 2} of 40 pod logs (a sample of "
        f"{diagon.LOG_SAMPLE} and every pod not ready; --all-logs reads every one))"
    )
    assert "diagon-daemon-00003 lacks 'Stream established.'" in got["diagon.logs"]["detail"]

    healthy_lab.requests.clear()
    code, got = verify(tmp_path, capsys, "--all-logs")
    assert len([p for p in requests_of(healthy_lab) if p.endswith("/log")]) == 40
    assert "(read 40 of 40 pod logs)" in got["diagon.logs"]["detail"]


def test_lists_are_read_page_by_page(
    healthy_lab: FakeKubeApi,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(diagon, "PAGE", 7)
    cluster(healthy_lab, 20)
    healthy_lab.requests.clear()
    code, got = verify(tmp_path, capsys)
    assert code == 0, got
    pages = [r.query.get("continue", [""])[0] for r in healthy_lab.requests if r.path == "/api/v1/nodes"]
    assert pages == ["", "7", "14"]
    assert "of 20 pod logs" in got["diagon.logs"]["detail"]


def test_nodes_without_a_ready_pod_are_named_with_why(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster(healthy_lab, 4, cpu_nodes=2)
    # node 1: its kubelet reports NotReady; its pod's readiness is the kubelet's last word (still ready)
    healthy_lab.put(
        "nodes", gpu_node("gpu-00001", ready="False", reason="KubeletNotReady", message="PLEG is not healthy")
    )
    # node 2: its pod cannot be placed (pods capacity used up): the scheduler's message
    message = "0/6 nodes are available: 1 Too many pods, 5 node(s) didn't match Pod's node affinity/selector."
    pending = k8s_api.pending_pod("diagon-daemon-00002", "diagon", message)
    pending["metadata"]["labels"] = {"name": "diagon-daemon"}
    pending["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-00002"]}]}
                ]
            }
        }
    }
    healthy_lab.put("pods", pending)
    # node 3: selected, but no pod at all (gone NotReady before the DaemonSet made one)
    healthy_lab.delete("pods", "diagon", "diagon-daemon-00003")
    healthy_lab.put(
        "nodes",
        gpu_node(
            "gpu-00003",
            ready="Unknown",
            reason="NodeStatusUnknown",
            message="Kubelet stopped posting node status.",
        ),
    )
    code, got = verify(tmp_path, capsys)
    assert code == 1
    detail = got["diagon.ready"]["detail"]
    assert (
        "diagon-daemon-00001 on gpu-00001: Running (node gpu-00001: Ready=False KubeletNotReady: PLEG is not healthy)"
        in detail
    )
    assert f"diagon-daemon-00002 on gpu-00002: Pending, not scheduled: {message}" in detail
    assert (
        "node gpu-00003: no Diagon pod (Ready=Unknown NodeStatusUnknown: Kubelet stopped posting node status.)"
        in detail
    )
    assert "cpu-" not in detail and "gpu-00000" not in detail


def test_nodes_that_verify_may_not_list_leave_the_pods_to_speak(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster(healthy_lab, 3)
    healthy_lab.forbidden.add(("nodes", ""))
    code, got = verify(tmp_path, capsys)
    assert code == 0, got
    assert got["diagon.ready"]["detail"] == "3/3 ready"


@pytest.mark.parametrize(
    ("labels", "taints", "selected"),
    [
        ({GPU: "nvidia-l4"}, [("nvidia.com/gpu", "present", "NoSchedule")], True),
        (
            {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"},
            [("google.com/tpu", "present", "NoSchedule")],
            True,
        ),
        ({}, [], False),  # a CPU node
        ({GPU: "nvidia-l4"}, [("dedicated", "x", "NoSchedule")], False),  # a taint the pod does not tolerate
    ],
)
def test_selects_follows_affinity_and_taints(
    labels: dict[str, str], taints: list[tuple[str, str, str]], selected: bool
) -> None:
    spec = client.V1PodSpec(
        containers=[],
        affinity=client.V1Affinity(
            node_affinity=client.V1NodeAffinity(
                required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
                    node_selector_terms=[
                        client.V1NodeSelectorTerm(
                            match_expressions=[client.V1NodeSelectorRequirement(key=k, operator="Exists")]
                        )
                        for k in (GPU, "cloud.google.com/gke-tpu-accelerator")
                    ]
                )
            )
        ),
        tolerations=[
            client.V1Toleration(key=k, operator="Exists", effect="NoSchedule")
            for k in ("nvidia.com/gpu", "google.com/tpu")
        ],
    )
    node = {
        "metadata": {"name": "n", "labels": labels},
        "spec": {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]},
    }
    assert diagon.selects(spec, node) is selected


def test_sample_is_spread_and_stable() -> None:
    items = list(range(100))
    assert diagon.sample(items, 4) == [0, 25, 50, 75]
    assert diagon.sample(items[:3], 4) == [0, 1, 2]
