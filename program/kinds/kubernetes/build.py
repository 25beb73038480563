"""kubernetesClusters target -> `ml_diagnostics.KubernetesCluster`."""

from __future__ import annotations

from typing import Any

from ml_diagnostics import lifecycle
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
    # The target passed the library's checks when the stack file was loaded: not checked again.
    k8s = KubernetesCluster.from_spec(
        f"k8s-{target.name}",
        KubernetesClusterSpec.trusted(args(target)),
        lifecycle.rename_options("k8s", target.previous_name),
    )
    return {"mode": k8s.mode, "workloadMonitoring": k8s.workload_monitoring}
