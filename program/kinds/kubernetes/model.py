"""Config of `kubernetesClusters` targets: self-managed Kubernetes clusters (always the manual install).

Example:

    kubernetesClusters:
      - name: lab
        kubeconfig: {secure: ...}        # or `context: lab-admin` (ambient kubeconfig), or both
        mode: manual                     # manual | auto (= manual); managed is GKE-only
        workloadNamespaces:
          - {name: ai-workloads, create: true}
          - {name: default}              # existing: labelled by server-side apply
        certManager: {enabled: true}     # false: the cluster already runs cert-manager
        manualInstall: {jaxVersion: "0.8"}
        diagon: {enabled: true, image: ...:v2.1.0}
"""

from __future__ import annotations

from pydantic import field_validator, model_validator

from ml_diagnostics import compat
from program.config_base import SecretText, TargetBase, raise_issues
from program.in_cluster import InClusterSettings, manual_install_issues


class KubernetesClusterTarget(TargetBase, InClusterSettings):
    """A self-managed cluster reached by a kubeconfig (secret) and/or a context name. Always manual."""

    kubeconfig: SecretText | None = None
    """Kubeconfig text, set with --secret; or use `context` with the ambient kubeconfig."""
    context: str | None = None
    """Kubeconfig context to use."""
    mode: str = "manual"
    """manual | auto (both mean manual here); managed is GKE-only and refused."""

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: str) -> str:
        compat.resolve_mode(v, None, self_managed=True)
        return v

    @model_validator(mode="after")
    def _target_check(self) -> KubernetesClusterTarget:
        problems = []
        if self.kubeconfig is None and not self.context:
            problems.append(
                (
                    "kubeconfig",
                    "give a kubeconfig (secret) or a context name (of the ambient kubeconfig), or both",
                )
            )
        problems += manual_install_issues(self)
        raise_issues(problems)
        return self

    @property
    def resolved_mode(self) -> compat.ResolvedMode:
        return compat.resolve_mode(self.mode, None, self_managed=True)
