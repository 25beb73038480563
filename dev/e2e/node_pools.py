"""Node pools as GKE and AKS make them, for the kwok-managed nodes of the e2e cluster (dev/e2e/control_plane.py).

Each Node carries the labels, taints and capacity its cloud puts on it; kwok then plays its kubelet. Sources:

- GKE GPU nodes: "Run GPUs in GKE Standard node pools" (cloud.google.com/kubernetes-engine/docs/how-to/gpus):
  label `cloud.google.com/gke-accelerator=<gpu type>` (e.g. nvidia-l4), taint `nvidia.com/gpu=present:NoSchedule`
  added to GPU node pools, extended resource `nvidia.com/gpu`.
- GKE TPU nodes: "Deploy TPU workloads in GKE Standard" (cloud.google.com/kubernetes-engine/docs/how-to/tpus):
  labels `cloud.google.com/gke-tpu-accelerator` (e.g. tpu-v5-lite-podslice) and
  `cloud.google.com/gke-tpu-topology` (e.g. 2x4), taint `google.com/tpu=present:NoSchedule`, extended resource
  `google.com/tpu` (chips per VM: 4 on ct5lp-hightpu-4t).
- GKE, every node: `cloud.google.com/gke-nodepool=<pool>`, `cloud.google.com/machine-family`,
  `node.kubernetes.io/instance-type`, `topology.kubernetes.io/zone` ("About node labels",
  cloud.google.com/kubernetes-engine/docs/concepts/node-labels).
- AKS GPU nodes: "Use GPUs for compute-intensive workloads on AKS" (learn.microsoft.com/azure/aks/gpu-cluster):
  label `accelerator=nvidia` set by AKS on GPU nodes, the taint the guide adds to the pool
  (`sku=gpu:NoSchedule`), `nvidia.com/gpu` from the NVIDIA device plugin; every AKS node carries
  `kubernetes.azure.com/agentpool=<pool>` ("Node labels", learn.microsoft.com/azure/aks/use-labels).
- Well-known labels of every node: `kubernetes.io/hostname`, `kubernetes.io/os`, `kubernetes.io/arch`
  (kubernetes.io/docs/reference/labels-annotations-taints/).

Capacities are the machine types': g2-standard-8 (8 vCPU, 32 GiB, 1 L4), a3-highgpu-8g (208 vCPU, 1872 GiB,
8 H100), ct5lp-hightpu-4t (112 vCPU, 192 GiB, 4 chips), n2-standard-8, Standard_NC24ads_A100_v4 (24 vCPU,
220 GiB, 1 A100), Standard_D8s_v5; `pods` 110 (GKE's and AKS's default maximum per node).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dev.e2e.control_plane import ControlPlane

# e2e.mldiag.dev/not-ready on a node: kwok's node-not-ready stage reports it Ready=False (dev/e2e/kwok/stages.yaml)
NOT_READY = "e2e.mldiag.dev/not-ready"
CRASH_LOOP = "e2e.mldiag.dev/crash-loop"


@dataclass(frozen=True)
class Pool:
    cloud: str  # gke | aks
    name: str
    machine: str
    cpu: str
    memory: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, effect)
    resources: dict[str, str] = field(default_factory=dict)  # extended resources
    pods: str = "110"
    zone: str = "us-central1-a"

    @property
    def accelerator(self) -> bool:
        return bool(self.resources)


def gke_gpu(
    name: str = "gpu-l4", gpu: str = "nvidia-l4", machine: str = "g2-standard-8", count: int = 1
) -> Pool:
    return Pool(
        "gke", name, machine, "8", "32Gi",
        labels={"cloud.google.com/gke-accelerator": gpu, "cloud.google.com/machine-family": machine.split("-")[0]},
        taints=(("nvidia.com/gpu", "present", "NoSchedule"),),
        resources={"nvidia.com/gpu": str(count)},
    )  # fmt: skip


def gke_h100(name: str = "gpu-h100") -> Pool:
    pool = gke_gpu(name, "nvidia-h100-80gb", "a3-highgpu-8g", 8)
    return Pool(**{**pool.__dict__, "cpu": "208", "memory": "1872Gi"})


def gke_tpu(name: str = "tpu-v5e", accelerator: str = "tpu-v5-lite-podslice", topology: str = "2x4") -> Pool:
    return Pool(
        "gke", name, "ct5lp-hightpu-4t", "112", "192Gi",
        labels={
            "cloud.google.com/gke-tpu-accelerator": accelerator,
            "cloud.google.com/gke-tpu-topology": topology,
            "cloud.google.com/machine-family": "ct5lp",
        },
        taints=(("google.com/tpu", "present", "NoSchedule"),),
        resources={"google.com/tpu": "4"},
    )  # fmt: skip


def gke_cpu(name: str = "default-pool") -> Pool:
    return Pool("gke", name, "n2-standard-8", "8", "32Gi", labels={"cloud.google.com/machine-family": "n2"})


def aks_gpu(name: str = "gpunp") -> Pool:
    return Pool(
        "aks", name, "Standard_NC24ads_A100_v4", "24", "220Gi",
        labels={"accelerator": "nvidia"},
        taints=(("sku", "gpu", "NoSchedule"),),
        resources={"nvidia.com/gpu": "1"},
        zone="eastus-1",
    )  # fmt: skip


def aks_cpu(name: str = "nodepool1") -> Pool:
    return Pool("aks", name, "Standard_D8s_v5", "8", "32Gi", zone="eastus-1")


def node(
    pool: Pool, index: int, annotations: dict[str, str] | None = None, pods: str | None = None
) -> dict[str, Any]:
    """The Node object of the pool's index-th node, as its cloud registers it."""
    name = f"{'gke' if pool.cloud == 'gke' else 'aks'}-{pool.name}-{index}"
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": pool.machine,
        "topology.kubernetes.io/zone": pool.zone,
        **(
            {"cloud.google.com/gke-nodepool": pool.name}
            if pool.cloud == "gke"
            else {"kubernetes.azure.com/agentpool": pool.name}
        ),
        **pool.labels,
    }
    capacity = {"cpu": pool.cpu, "memory": pool.memory, "pods": pods or pool.pods, **pool.resources}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": dict(annotations or {})},
        "spec": {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in pool.taints]},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def create_pool(
    cp: ControlPlane, pool: Pool, size: int, *, first: int = 0, annotations: dict[str, str] | None = None,
    pods: str | None = None,
) -> list[str]:  # fmt: skip
    """Registers `size` nodes of the pool; returns their names. kwok makes them Ready."""
    names = []
    for i in range(first, first + size):
        body = node(pool, i, annotations, pods)
        resp = cp.api("POST", "/api/v1/nodes", json=body)
        if resp.status_code != 201:
            raise RuntimeError(
                f"creating node {body['metadata']['name']}: {resp.status_code} {resp.text[:300]}"
            )
        names.append(body["metadata"]["name"])
    return names


def ready_nodes(cp: ControlPlane) -> set[str]:
    items = cp.get("/api/v1/nodes")["items"]
    return {
        n["metadata"]["name"]
        for n in items
        if any(
            c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", [])
        )
    }
