"""The kubernetesClusters kind: self-managed Kubernetes clusters (always the manual install)."""

from __future__ import annotations

import hashlib

from program import in_cluster
from program.clouds.kubernetes import KUBERNETES
from program.kinds.base import Claim, Lazy, TargetKind
from program.kinds.kubernetes.model import KubernetesClusterTarget


def claims(t: KubernetesClusterTarget) -> list[Claim]:
    # Two targets on one context of one kubeconfig (the ambient one, or the same secret text) are one cluster.
    if t.kubeconfig is None:
        if not t.context:
            return []
        return [(("k8s-context", t.context), f"Kubernetes cluster of context {t.context!r}", ".context")]
    # The secret's digest only identifies it: neither it nor the text is ever printed.
    digest = hashlib.sha256(t.kubeconfig.get_secret_value().encode()).hexdigest()
    context = repr(t.context) if t.context else "its current context"
    return [
        (
            ("k8s-kubeconfig", digest, t.context),
            f"Kubernetes cluster of the same kubeconfig and {context}",
            ".kubeconfig",
        )
    ]


def generated_names(t: KubernetesClusterTarget) -> list[tuple[str, str]]:
    return [
        (f"namespace:k8s-{t.name}-mldiag-opt-in-{ns.name}", f"workloadNamespaces[{j}].name")
        for j, ns in enumerate(t.workload_namespaces)
    ]


KIND = TargetKind(
    key="kubernetesClusters",
    field="kubernetes_clusters",
    model=KubernetesClusterTarget,
    description="Self-managed Kubernetes clusters (always the manual install).",
    prefix="k8s",
    export="kubernetesCluster",
    build=Lazy("program.kinds.kubernetes.build:build"),
    verify=Lazy("program.kinds.kubernetes.verify:verify"),
    section="in_cluster",
    check=Lazy("program.kinds.kubernetes.verify:check"),
    mock_answers=Lazy("program.kinds.kubernetes.mocks"),
    cloud=KUBERNETES,
    component="mldiag:index:KubernetesCluster",
    costly=in_cluster.COSTLY,
    force_new=in_cluster.FORCE_NEW,
    claims=claims,
    generated_names=generated_names,
)
