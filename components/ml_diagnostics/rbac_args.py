"""Arguments of the read-only verify role (generated: ml_diagnostics.args), kept importable here."""

from ml_diagnostics.args import RbacSubjectArgs, VerifyRbacArgs

__all__ = ["RbacSubjectArgs", "VerifyRbacArgs"]
