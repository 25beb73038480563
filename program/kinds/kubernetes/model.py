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

from ml_diagnostics.rules.kubernetes import KubernetesClusterSpec
from program.config_base import SecretText, TargetBase
from program.in_cluster import InClusterSettings


class KubernetesClusterTarget(TargetBase, InClusterSettings, KubernetesClusterSpec):
    """A self-managed cluster reached by a kubeconfig (secret) and/or a context name. Always manual: the
    library's KubernetesCluster keys and rules, with the stack file's own keys."""

    kubeconfig: SecretText | None = None  # type: ignore[assignment]
    """Kubeconfig text, a secret (`mldiag secrets set` or `pulumi config set --secret`); or use `context` with
    the ambient kubeconfig."""
    context: str | None = None
    """Kubeconfig context to use."""
