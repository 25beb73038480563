"""A self-managed Kubernetes cluster: a provider from its kubeconfig (secret) and/or context, then
`ClusterMlDiagnostics` in manual mode (managed ML diagnostics exists only on GKE)."""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from typing import Any

import pulumi
from pulumi_kubernetes.provider import Provider

from ml_diagnostics import docs, verify_record
from ml_diagnostics.args import KubernetesClusterArgs
from ml_diagnostics.cluster_ml_diagnostics import ClusterMlDiagnostics
from ml_diagnostics.component import Component
from ml_diagnostics.parts import Part
from ml_diagnostics.rules.in_cluster import ClusterMlDiagnosticsSpec, InClusterSpec, MlDiagnosticsMode
from ml_diagnostics.rules.kubernetes import KubernetesClusterSpec


class KubernetesCluster(Component[KubernetesClusterSpec]):
    """ML Diagnostics on a self-managed Kubernetes cluster (the manual install)."""

    mode: pulumi.Output[str]
    """Always manual."""
    workload_monitoring: pulumi.Output[bool]
    """Automatic workload monitoring: never on self-managed clusters."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:KubernetesCluster"
    _SPEC = KubernetesClusterSpec

    def __init__(self, name: str, args: KubernetesClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, args, opts)

    def _build(self, name: str, spec: KubernetesClusterSpec, **_: Any) -> None:
        self.provider = Provider(
            f"{name}-provider",
            kubeconfig=pulumi.Output.secret(spec.kubeconfig) if spec.kubeconfig is not None else None,
            context=spec.context,
            opts=pulumi.ResourceOptions(parent=self),
        )
        in_cluster = {k: getattr(spec, k) for k in spec.model_fields_set if k in InClusterSpec.model_fields}
        self.diagnostics = ClusterMlDiagnostics.from_spec(
            f"{name}-mldiag",
            ClusterMlDiagnosticsSpec.trusted(
                {**in_cluster, "mode": MlDiagnosticsMode.MANUAL, "self_managed": True}
            ),
            opts=pulumi.ResourceOptions(parent=self, providers=[self.provider]),
        )
        self.mode = self.diagnostics.mode
        self.workload_monitoring = self.diagnostics.workload_monitoring
        self.verify_record = self.diagnostics.verify_record
        self.register_outputs(
            {
                verify_record.OUTPUT: self.verify_record,
                "mode": self.mode,
                "workloadMonitoring": self.workload_monitoring,
            }
        )


docs.document(KubernetesCluster, KubernetesClusterArgs)

PART = Part(
    order=80,
    component="KubernetesCluster",
    spec=KubernetesClusterSpec,
    exports=("KubernetesCluster", "KubernetesClusterArgs"),
    readme=(
        "`KubernetesCluster`",
        "a self-managed cluster (the manual install) from its kubeconfig or context",
    ),
)


__all__ = ["KubernetesCluster", "KubernetesClusterArgs"]
