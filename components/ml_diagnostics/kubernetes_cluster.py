"""A self-managed Kubernetes cluster: a provider from its kubeconfig (secret) and/or context, then
`ClusterMlDiagnostics` in manual mode (managed ML diagnostics exists only on GKE)."""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from typing import Any

import pulumi
from pulumi_kubernetes.provider import Provider

from ml_diagnostics import docs, rules, verify_record
from ml_diagnostics.args import KubernetesClusterArgs
from ml_diagnostics.cluster_ml_diagnostics import ClusterMlDiagnostics
from ml_diagnostics.rules.in_cluster import MlDiagnosticsMode
from ml_diagnostics.rules.kubernetes import KubernetesClusterSpec


class KubernetesCluster(pulumi.ComponentResource):
    """ML Diagnostics on a self-managed Kubernetes cluster (the manual install)."""

    mode: pulumi.Output[str]
    """Always manual."""
    workload_monitoring: pulumi.Output[bool]
    """Automatic workload monitoring: never on self-managed clusters."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    def __init__(self, name: str, args: KubernetesClusterArgs, opts: pulumi.ResourceOptions | None = None):
        args = rules.checked_args(  # type: ignore[assignment]
            KubernetesClusterSpec,
            args,
            component="KubernetesCluster",
            name=name,
            owner="KubernetesClusterArgs",
        )
        super().__init__("mldiag:index:KubernetesCluster", name, None, opts)
        kubeconfig = args.get("kubeconfig")
        self.provider = Provider(
            f"{name}-provider",
            kubeconfig=pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None,
            context=args.get("context"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        in_cluster: dict[str, Any] = {
            k: v for k, v in args.items() if k not in ("kubeconfig", "context", "mode")
        }
        self.diagnostics = ClusterMlDiagnostics(
            f"{name}-mldiag",
            {**in_cluster, "mode": MlDiagnosticsMode.MANUAL, "self_managed": True},  # type: ignore[typeddict-item]
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

__all__ = ["KubernetesCluster", "KubernetesClusterArgs"]
