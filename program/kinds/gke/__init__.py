"""The gkeClusters kind: GKE clusters created or adopted; managed or manual ML Diagnostics."""

from __future__ import annotations

from ml_diagnostics import compat
from program import in_cluster
from program.clouds.google import GOOGLE
from program.kinds import kubernetes
from program.kinds.base import Claim, Costly, KindDocs, TargetKind
from program.kinds.gke.model import GkeClusterTarget


def claims(t: GkeClusterTarget) -> list[Claim]:
    return [
        (("gke", t.project, t.location, t.gke_name), f"GKE cluster {t.project}/{t.location}/{t.gke_name}", "")
    ]


def generated_names(t: GkeClusterTarget) -> list[tuple[str, str]]:
    out = [
        (f"namespace:gke-{t.name}-mldiag-opt-in-{ns.name}", f"workloadNamespaces[{j}].name")
        for j, ns in enumerate(t.workload_namespaces)
    ]
    out += [
        (f"nodepool:gke-{t.name}-pool-{p.name}", f"nodePools[{j}].name") for j, p in enumerate(t.node_pools)
    ]
    return out


DOCS = KindDocs(
    summary=(
        (
            "**`gkeClusters`**: `create: true` makes a GKE **Standard** cluster (default pool removed, one `NodePool`\n"
            "per pool, GPU/TPU pools with labels and taints, Workload Identity) with\n"
            "`managedMachineLearningDiagnosticsConfig.enabled` always sent explicitly (the block is Computed upstream, so\n"
            "leaving it out never turns the feature off). `create: false` adopts an existing cluster: `getCluster` for\n"
            "endpoint and CA, and a dynamic resource that sets the flag through the GKE API and restores the earlier\n"
            f"value on delete. `mode: auto` picks managed from {compat.MANAGED_MIN_VERSION} on, manual below. An adopted\n"
            "**Autopilot** cluster refuses privileged pods, so `diagon.enabled` is refused there with the alternatives."
        ),
        kubernetes.IN_CLUSTER_SUMMARY,
    ),
    checks=(
        kubernetes.MANUAL_CHECKS,
        (
            "managed mode (`gkeClusters`)",
            "`gke.cluster` RUNNING; `gke.managed`: the managed flag on and the version at or past "
            f"{compat.MANAGED_MIN_VERSION} (manual mode: the flag off, so two webhooks never run side by side)",
        ),
        kubernetes.CLUSTER_CHECKS,
        kubernetes.DIAGON_CHECKS,
    ),
    removed=(
        "created: the cluster per `deletionPolicy`, its node pools and the in-cluster parts; adopted: the "
        "in-cluster parts, and the managed flag set back to its value before adoption; the cluster stays"
    ),
    example=(
        "{project}:gkeClusters:                    # GKE, created or adopted\n"
        "  - name: train\n"
        "    project: my-project\n"
        "    location: us-central1\n"
        "    currentVersion: 1.35.1-gke.1396000    # adopted: its version decides managed or manual\n"
        "    workloadNamespaces: [{name: training, create: true}]\n"
        f"{kubernetes.DIAGON_EXAMPLE}"
    ),
)


KIND = TargetKind(
    order=20,
    key="gkeClusters",
    model=GkeClusterTarget,
    description="GKE clusters, created or adopted; managed or manual ML Diagnostics.",
    prefix="gke",
    cloud=GOOGLE,
    costly=(
        Costly("gcp:container/cluster:Cluster", "GKE cluster", "GKE clusters"),
        Costly("gcp:container/nodePool:NodePool", "node pool", "node pools"),
        Costly(
            "pulumi-python:dynamic/gke:ManagedMlDiagnostics",
            "GKE ML diagnostics flag",
            "GKE ML diagnostics flags",
        ),
        *in_cluster.COSTLY,
    ),
    # The resource's identity in the API path (Terraform ForceNew).
    force_new={
        "gcp:container/cluster:Cluster": ("name", "project", "location"),
        "gcp:container/nodePool:NodePool": ("name", "project", "location", "cluster"),
        **in_cluster.FORCE_NEW,
    },
    claims=claims,
    generated_names=generated_names,
    docs=DOCS,
)
