"""Config of `kubernetesClusters` targets (self-managed Kubernetes reached by kubeconfig)."""

from __future__ import annotations

from pydantic import SecretStr

from components.config import TargetBase


class KubernetesClusterTarget(TargetBase):
    kubeconfig: SecretStr | None = None
    context: str | None = None
