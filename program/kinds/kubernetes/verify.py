"""Verify checks of a kubernetesClusters target, and of any in-cluster component found in a stack's state
(ClusterMlDiagnostics, KubernetesCluster, Diagon, WorkloadOptIn, ...): the in-cluster checks through a
kubeconfig or context."""

from __future__ import annotations

from dataclasses import dataclass

from ml_diagnostics.verify_record import InClusterRecord
from program.clouds.kubernetes_client import kube_client
from program.config_base import is_placeholder
from program.in_cluster.verify import check_in_cluster, record_of
from program.kinds.context import VerifyContext
from program.kinds.kubernetes.model import KubernetesClusterTarget
from program.verify.result import TargetResult


@dataclass(frozen=True)
class KubeAccess:
    """How verify reaches the cluster: kubeconfig text (None: the ambient kubeconfig) and a context."""

    kubeconfig: str | None = None
    context: str | None = None


def verify(target: KubernetesClusterTarget, ctx: VerifyContext, result: TargetResult) -> None:
    kubeconfig = target.kubeconfig.get_secret_value() if target.kubeconfig else None
    if kubeconfig is not None and is_placeholder(kubeconfig):
        raise ctx.still_encrypted("its kubeconfig")
    check(record_of(target, target.resolved_mode), KubeAccess(kubeconfig, target.context), ctx, result)


def check(rec: InClusterRecord, access: KubeAccess, ctx: VerifyContext, result: TargetResult) -> None:
    check_in_cluster(kube_client(access.kubeconfig, access.context), result, rec, ctx.log_lines, ctx.all_logs)
