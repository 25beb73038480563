"""ml-diagnostics: Pulumi components for ML diagnostics and training infrastructure.

    from ml_diagnostics import ClusterMlDiagnostics, Diagon, WorkloadOptIn           # any Kubernetes cluster
    from ml_diagnostics import GkeCluster, KubernetesCluster                          # a whole cluster target
    from ml_diagnostics import AzureMlExtension                                       # extra: [azure]
    from ml_diagnostics import ModelDevelopmentCluster                                # extra: [gcp]

Every component takes a typed `*Args` TypedDict (pulumi.Input fields where a value may be an output) and
exposes typed `pulumi.Output` attributes. Names resolve on first use, so `import ml_diagnostics` needs only
the core dependencies; the Azure and Google components need their extra installed.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

_EXPORTS = {
    "ClusterMlDiagnostics": "cluster_ml_diagnostics",
    "ClusterMlDiagnosticsArgs": "cluster_ml_diagnostics",
    "Diagon": "diagon",
    "DiagonArgs": "diagon",
    "WorkloadOptIn": "workload_opt_in",
    "WorkloadOptInArgs": "workload_opt_in",
    "WorkloadNamespaceArgs": "workload_opt_in",
    "CertManagerArgs": "cert_manager",
    "MlDiagnosticsManualArgs": "mldiagnostics_manual",
    "ChartArgs": "mldiagnostics_manual",
    "ConnectionOperatorArgs": "mldiagnostics_manual",
    "InClusterArgs": "in_cluster",
    "MlDiagnosticsMode": "in_cluster",
    "VerifyRbacArgs": "rbac_args",
    "RbacSubjectArgs": "rbac_args",
    "KubernetesCluster": "kubernetes_cluster",
    "KubernetesClusterArgs": "kubernetes_cluster",
    "GkeCluster": "gke_cluster",
    "GkeClusterArgs": "gke_cluster",
    "GkeNodePoolArgs": "gke_cluster",
    "GoogleApiArgs": "google_api",
    "AzureMlExtension": "azure_ml",
    "AzureMlExtensionArgs": "azure_ml",
    "AzureClusterArgs": "azure_ml",
    "InferenceArgs": "azure_ml",
    "ModelDevelopmentCluster": "model_development",
    "ModelDevelopmentClusterArgs": "model_development",
    "DeletionPolicy": "lifecycle",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ml_diagnostics' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ml_diagnostics.{module}"), name)
    globals()[name] = value
    return value
