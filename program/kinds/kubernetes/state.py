"""How `mldiag verify --stack` reaches a cluster whose record is an `inCluster` section, and reads the
in-cluster components from a state from before `verifyRecord` (program/verify/from_state.py says what a
kind's state hook holds)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ml_diagnostics import verify_record
from program.clouds import Unreachable
from program.in_cluster.from_state import in_cluster_from
from program.verify.from_state import Resource

K8S_PROVIDER = "pulumi:providers:kubernetes"
# Every in-cluster component, alone or as a self-managed cluster's.
COMPONENTS = (
    "ClusterMlDiagnostics",
    "KubernetesCluster",
    "Diagon",
    "WorkloadOptIn",
    "MlDiagnosticsManual",
    "CertManager",
)


def rebuild(top: Resource, descendants: list[Resource]) -> tuple[dict[str, Any] | None, str]:
    return verify_record.record(inCluster=in_cluster_from(top, descendants)), ""


def access(descendants: list[Resource], by_urn: dict[str, Resource]) -> Any:
    """The kubeconfig and context of the Kubernetes provider the component's resources use (the stack's own
    way into the cluster); its default provider's, or the ambient kubeconfig, when it names none."""
    from program.kinds.kubernetes.verify import KubeAccess

    ref = next(
        (r.provider for r in descendants if r.custom and r.type.startswith("kubernetes:") and r.provider),
        None,
    )
    provider = by_urn.get(ref) if ref else None
    if provider is None or provider.type != K8S_PROVIDER:
        return KubeAccess()
    kubeconfig = provider.inputs.get("kubeconfig")
    context = provider.inputs.get("context")
    if (
        isinstance(kubeconfig, str)
        and kubeconfig
        and "\n" not in kubeconfig
        and not kubeconfig.lstrip().startswith("{")
    ):
        path = Path(os.path.expanduser(kubeconfig))  # the provider takes a path as well as the text
        try:
            kubeconfig = path.read_text()
        except OSError as e:
            raise Unreachable(
                f"the stack's Kubernetes provider {provider.name} reads kubeconfig {path}: {e.strerror}"
            ) from None
    return KubeAccess(
        kubeconfig if isinstance(kubeconfig, str) and kubeconfig else None,
        context if isinstance(context, str) and context else None,
    )
