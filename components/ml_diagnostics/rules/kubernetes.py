"""Rules of a self-managed Kubernetes cluster (`KubernetesCluster`): always the manual install."""

from __future__ import annotations

from pydantic import field_validator, model_validator

from ml_diagnostics import compat
from ml_diagnostics.rules.base import Input, Path, raise_issues
from ml_diagnostics.rules.in_cluster import InClusterSpec, MlDiagnosticsMode, Mode


class KubernetesClusterSpec(InClusterSpec):
    """A self-managed cluster reached by a kubeconfig (secret) and/or a context name. Always manual."""

    kubeconfig: Input[str] | None = None
    """Kubeconfig text (a secret); or name a `context` of the ambient kubeconfig (KUBECONFIG, ~/.kube/config)."""
    context: Input[str] | None = None
    """Kubeconfig context to use."""
    mode: Mode = MlDiagnosticsMode.MANUAL
    """manual | auto (both mean manual here); managed is GKE-only and refused."""

    @property
    def resolved_mode(self) -> compat.ResolvedMode:
        return compat.resolve_mode(MlDiagnosticsMode(self.mode).value, None, self_managed=True)

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: MlDiagnosticsMode) -> MlDiagnosticsMode:
        compat.resolve_mode(MlDiagnosticsMode(v).value, None, self_managed=True)
        return v

    @model_validator(mode="after")
    def _target_check(self) -> KubernetesClusterSpec:
        problems: list[tuple[Path, str]] = []
        # Every resource lands in the cluster the arguments name, never in whatever kubectl points at.
        if self.kubeconfig is None and not self.context:
            problems.append(
                (
                    ("kubeconfig",),
                    "give a kubeconfig (secret) or a context name (of the ambient kubeconfig), or both",
                )
            )
        problems += self.manual_install_problems()
        raise_issues(problems)
        return self
