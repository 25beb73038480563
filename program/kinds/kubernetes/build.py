"""kubernetesClusters target -> `ml_diagnostics.KubernetesCluster`."""

from __future__ import annotations

from typing import Any

from ml_diagnostics.kubernetes_cluster import KubernetesCluster, KubernetesClusterArgs
from ml_diagnostics.rules.kubernetes import KubernetesClusterSpec
from program.config_base import secret_output
from program.in_cluster import in_cluster_args
from program.kinds.base import BuildContext
from program.kinds.kubernetes.model import KubernetesClusterTarget


def args(target: KubernetesClusterTarget) -> KubernetesClusterArgs:
    out: dict[str, Any] = dict(in_cluster_args(target))
    if target.kubeconfig is not None:
        out["kubeconfig"] = secret_output(target.kubeconfig)
    if target.context:
        out["context"] = target.context
    return out  # type: ignore[return-value]


def build(target: KubernetesClusterTarget, ctx: BuildContext) -> Any:
    k8s = ctx.component(KubernetesCluster, "k8s", target, KubernetesClusterSpec.trusted(args(target)))
    return {"mode": k8s.mode, "workloadMonitoring": k8s.workload_monitoring}
