"""The arguments of everything ML Diagnostics runs inside one cluster (shared by the cluster components)."""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from enum import StrEnum
from typing import NotRequired, TypedDict

from ml_diagnostics.cert_manager import CertManagerArgs
from ml_diagnostics.compat import quote
from ml_diagnostics.diagon import DiagonArgs
from ml_diagnostics.mldiagnostics_manual import MlDiagnosticsManualArgs
from ml_diagnostics.rbac_args import RbacSubjectArgs as RbacSubjectArgs
from ml_diagnostics.rbac_args import VerifyRbacArgs
from ml_diagnostics.workload_opt_in import WorkloadNamespaceArgs


class MlDiagnosticsMode(StrEnum):
    """How ML Diagnostics reaches a cluster."""

    MANAGED = "managed"
    """GKE >= 1.35.0-gke.3065000 with the managed flag: GKE runs the webhook and operator."""
    MANUAL = "manual"
    """cert-manager, the injection-webhook and the connection-operator as Helm releases."""


class InClusterArgs(TypedDict):
    """What runs inside one cluster besides the mode."""

    workload_namespaces: NotRequired[list[WorkloadNamespaceArgs]]
    """Namespaces labelled managed-mldiagnostics-gke=true (the webhook's opt-in)."""
    cert_manager: NotRequired[CertManagerArgs]
    """cert-manager, the injection-webhook's prerequisite (manual mode only; installed unless enabled: false)."""
    manual_install: NotRequired[MlDiagnosticsManualArgs]
    """injection-webhook and connection-operator releases (manual mode only; required there)."""
    diagon: NotRequired[DiagonArgs]
    """The Diagon profiling DaemonSet (preview); deployed when given."""
    verify_rbac: NotRequired[VerifyRbacArgs]
    """A read-only role for verify; created when given."""


def resolved(mode: "MlDiagnosticsMode | str") -> MlDiagnosticsMode:
    """The mode as the enum; a clear error for anything but managed or manual."""
    try:
        return MlDiagnosticsMode(mode)
    except ValueError:
        raise ValueError(f"mode must be managed or manual, got {quote(mode)}") from None
