"""The gkeClusters kind: GKE clusters created or adopted; managed or manual ML Diagnostics."""

from __future__ import annotations

from program import in_cluster
from program.clouds.google import GOOGLE
from program.kinds.base import Claim, Costly, Lazy, TargetKind
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


KIND = TargetKind(
    key="gkeClusters",
    field="gke_clusters",
    model=GkeClusterTarget,
    description="GKE clusters, created or adopted; managed or manual ML Diagnostics.",
    prefix="gke",
    export="gkeCluster",
    build=Lazy("program.kinds.gke.build:build"),
    verify=Lazy("program.kinds.gke.verify:verify"),
    section="gke",
    check=Lazy("program.kinds.gke.verify:check"),
    mock_answers=Lazy("program.kinds.gke.mocks"),
    cloud=GOOGLE,
    component="mldiag:index:GkeCluster",
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
)
