"""A self-managed Kubernetes target: a provider from its kubeconfig (secret) and/or context, then
`ClusterMlDiagnostics` in manual mode (managed ML diagnostics exists only on GKE)."""

from __future__ import annotations

import pulumi
from pulumi_kubernetes.provider import Provider

from components import compat, config
from components.cluster_ml_diagnostics import ClusterMlDiagnostics
from components.targets.kubernetes import KubernetesClusterTarget


class KubernetesCluster(pulumi.ComponentResource):
    def __init__(
        self, name: str, target: KubernetesClusterTarget, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("mldiag:index:KubernetesCluster", name, None, opts)
        # Without a kubeconfig the provider reads the ambient one (KUBECONFIG / ~/.kube/config) at `context`.
        self.provider = Provider(
            f"{name}-provider",
            kubeconfig=config.secret_output(target.kubeconfig),
            context=target.context,
            opts=pulumi.ResourceOptions(parent=self),
        )
        mode = compat.resolve_mode(target.mode, None, self_managed=True)
        self.diagnostics = ClusterMlDiagnostics(
            f"{name}-mldiag",
            target,
            mode,
            self.provider,
            opts=pulumi.ResourceOptions(parent=self),
            self_managed=True,
        )
        self.mode = self.diagnostics.mode
        self.monitoring = self.diagnostics.workload_monitoring  # automatic workload monitoring: never here
        self.register_outputs({"mode": self.mode, "workloadMonitoring": self.monitoring})
