"""ML Diagnostics on a self-managed cluster you already have: the manual install, one opted-in namespace and
the Diagon daemon, through your own Kubernetes provider."""

import pulumi
import pulumi_kubernetes as kubernetes

from ml_diagnostics import ClusterMlDiagnostics, MlDiagnosticsMode

config = pulumi.Config()
cluster = kubernetes.Provider("cluster", kubeconfig=config.require_secret("kubeconfig"))

diagnostics = ClusterMlDiagnostics(
    "ml-diagnostics",
    {
        "mode": MlDiagnosticsMode.MANUAL,
        "self_managed": True,
        "workload_namespaces": [{"name": "ai-workloads", "create": True}],
        "manual_install": {"jax_version": "0.8"},
        "diagon": {"image": "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"},
    },
    pulumi.ResourceOptions(providers=[cluster]),
)

pulumi.export("mode", diagnostics.mode)
pulumi.export("workloadNamespaces", diagnostics.workload_namespaces)
