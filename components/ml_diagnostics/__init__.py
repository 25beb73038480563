"""ml-diagnostics: Pulumi components for ML diagnostics and training infrastructure.

    from ml_diagnostics import ClusterMlDiagnostics, Diagon, WorkloadOptIn           # any Kubernetes cluster
    from ml_diagnostics import GkeCluster, KubernetesCluster                          # a whole cluster target
    from ml_diagnostics import AzureMlExtension                                       # extra: [azure]
    from ml_diagnostics import ModelDevelopmentCluster                                # extra: [gcp]

Every component takes a typed `*Args` TypedDict (pulumi.Input fields where a value may be an output;
`help(ml_diagnostics.GkeClusterArgs)` lists the keys) and exposes typed `pulumi.Output` attributes. Each
checks its whole Args before it creates anything: a bad one is an `InvalidArgsError` naming every problem.
Names resolve on first use, so `import ml_diagnostics` needs only the core dependencies; the Azure and
Google components need their extra installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

if TYPE_CHECKING:  # what mypy and IDEs see; at run time __getattr__ imports each on first use
    from ml_diagnostics.args import (
        AzureClusterArgs as AzureClusterArgs,
    )
    from ml_diagnostics.args import (
        CertManagerArgs as CertManagerArgs,
    )
    from ml_diagnostics.args import (
        ChartArgs as ChartArgs,
    )
    from ml_diagnostics.args import (
        ClusterMlDiagnosticsArgs as ClusterMlDiagnosticsArgs,
    )
    from ml_diagnostics.args import (
        ConnectionOperatorArgs as ConnectionOperatorArgs,
    )
    from ml_diagnostics.args import (
        DeletionPolicyInput as DeletionPolicyInput,
    )
    from ml_diagnostics.args import (
        DiagonArgs as DiagonArgs,
    )
    from ml_diagnostics.args import (
        GkeAutoscalingArgs as GkeAutoscalingArgs,
    )
    from ml_diagnostics.args import (
        GkeClusterArgs as GkeClusterArgs,
    )
    from ml_diagnostics.args import (
        GkeGuestAcceleratorArgs as GkeGuestAcceleratorArgs,
    )
    from ml_diagnostics.args import (
        GkeNodePoolArgs as GkeNodePoolArgs,
    )
    from ml_diagnostics.args import (
        GkeTaintArgs as GkeTaintArgs,
    )
    from ml_diagnostics.args import (
        GoogleApiArgs as GoogleApiArgs,
    )
    from ml_diagnostics.args import (
        InClusterArgs as InClusterArgs,
    )
    from ml_diagnostics.args import (
        InferenceArgs as InferenceArgs,
    )
    from ml_diagnostics.args import (
        KubernetesClusterArgs as KubernetesClusterArgs,
    )
    from ml_diagnostics.args import (
        MlDiagnosticsManualArgs as MlDiagnosticsManualArgs,
    )
    from ml_diagnostics.args import (
        MlDiagnosticsModeInput as MlDiagnosticsModeInput,
    )
    from ml_diagnostics.args import (
        ModelDevelopmentClusterArgs as ModelDevelopmentClusterArgs,
    )
    from ml_diagnostics.args import (
        RbacSubjectArgs as RbacSubjectArgs,
    )
    from ml_diagnostics.args import (
        RetryArgs as RetryArgs,
    )
    from ml_diagnostics.args import (
        VerifyRbacArgs as VerifyRbacArgs,
    )
    from ml_diagnostics.args import (
        WorkloadNamespaceArgs as WorkloadNamespaceArgs,
    )
    from ml_diagnostics.args import (
        WorkloadOptInArgs as WorkloadOptInArgs,
    )
    from ml_diagnostics.azure_ml import AzureMlExtension as AzureMlExtension
    from ml_diagnostics.cluster_ml_diagnostics import ClusterMlDiagnostics as ClusterMlDiagnostics
    from ml_diagnostics.diagon import Diagon as Diagon
    from ml_diagnostics.gke_cluster import GkeCluster as GkeCluster
    from ml_diagnostics.kubernetes_cluster import KubernetesCluster as KubernetesCluster
    from ml_diagnostics.lifecycle import DeletionPolicy as DeletionPolicy
    from ml_diagnostics.model_development import ModelDevelopmentCluster as ModelDevelopmentCluster
    from ml_diagnostics.rules.base import InvalidArgsError as InvalidArgsError
    from ml_diagnostics.rules.in_cluster import MlDiagnosticsMode as MlDiagnosticsMode
    from ml_diagnostics.workload_opt_in import WorkloadOptIn as WorkloadOptIn

_ARGS = (
    "AzureClusterArgs",
    "CertManagerArgs",
    "ChartArgs",
    "ClusterMlDiagnosticsArgs",
    "ConnectionOperatorArgs",
    "DeletionPolicyInput",
    "DiagonArgs",
    "GkeAutoscalingArgs",
    "GkeClusterArgs",
    "GkeGuestAcceleratorArgs",
    "GkeNodePoolArgs",
    "GkeTaintArgs",
    "GoogleApiArgs",
    "InClusterArgs",
    "InferenceArgs",
    "KubernetesClusterArgs",
    "MlDiagnosticsManualArgs",
    "MlDiagnosticsModeInput",
    "ModelDevelopmentClusterArgs",
    "RbacSubjectArgs",
    "RetryArgs",
    "VerifyRbacArgs",
    "WorkloadNamespaceArgs",
    "WorkloadOptInArgs",
)
_EXPORTS = {
    **{name: "args" for name in _ARGS},
    "ClusterMlDiagnostics": "cluster_ml_diagnostics",
    "Diagon": "diagon",
    "WorkloadOptIn": "workload_opt_in",
    "MlDiagnosticsMode": "rules.in_cluster",
    "InvalidArgsError": "rules.base",
    "KubernetesCluster": "kubernetes_cluster",
    "GkeCluster": "gke_cluster",
    "AzureMlExtension": "azure_ml",
    "ModelDevelopmentCluster": "model_development",
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
