"""Old home of the GKE managed flag provider: state written before the move unpickles through it."""

from ml_diagnostics.providers.gke_managed_diagnostics import ManagedMlDiagnosticsProvider

__all__ = ["ManagedMlDiagnosticsProvider"]
