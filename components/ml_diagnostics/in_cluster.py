"""The arguments of everything ML Diagnostics runs inside one cluster (shared by the cluster components).

The Args are generated (ml_diagnostics.args) from the Specs of ml_diagnostics.rules.in_cluster."""

from ml_diagnostics.args import (
    CertManagerArgs,
    DiagonArgs,
    InClusterArgs,
    MlDiagnosticsManualArgs,
    MlDiagnosticsModeInput,
    RbacSubjectArgs,
    VerifyRbacArgs,
    WorkloadNamespaceArgs,
)
from ml_diagnostics.parts import Part
from ml_diagnostics.rules.in_cluster import InClusterSpec, MlDiagnosticsMode

PART = Part(
    order=60, spec=InClusterSpec, exports=("InClusterArgs", "MlDiagnosticsMode", "MlDiagnosticsModeInput")
)


__all__ = [
    "CertManagerArgs",
    "DiagonArgs",
    "InClusterArgs",
    "MlDiagnosticsManualArgs",
    "MlDiagnosticsMode",
    "MlDiagnosticsModeInput",
    "RbacSubjectArgs",
    "VerifyRbacArgs",
    "WorkloadNamespaceArgs",
]
