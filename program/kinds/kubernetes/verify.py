"""Verify checks of a kubernetesClusters target: the in-cluster checks through its kubeconfig or context."""

from __future__ import annotations

from program.clouds.kubernetes_client import kube_client
from program.config_base import is_placeholder
from program.in_cluster.verify import check_in_cluster
from program.kinds.kubernetes.model import KubernetesClusterTarget
from program.verify.context import VerifyContext
from program.verify.result import TargetResult, Unreachable


def verify(target: KubernetesClusterTarget, ctx: VerifyContext, result: TargetResult) -> None:
    kubeconfig = target.kubeconfig.get_secret_value() if target.kubeconfig else None
    if kubeconfig is not None and is_placeholder(kubeconfig):
        raise Unreachable(
            "its kubeconfig is a secret the stack file holds encrypted: pass --pulumi-stack ORG/ml-diagnostics/STACK "
            "(the Pulumi CLI decrypts it)"
        )
    api = kube_client(kubeconfig, target.context)
    check_in_cluster(api, result, target, target.resolved_mode, ctx.log_lines)
