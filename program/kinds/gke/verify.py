"""Verify checks of a gkeClusters target: the GKE API's view of the cluster, then the in-cluster checks."""

from __future__ import annotations

from ml_diagnostics.gke_cluster import gke_kubeconfig
from program.kinds.gke.model import GkeClusterTarget
from program.verify.context import VerifyContext
from program.verify.google import check_gke
from program.verify.kube import check_in_cluster, kube_client
from program.verify.result import TargetResult, Unreachable


def verify(target: GkeClusterTarget, ctx: VerifyContext, result: TargetResult) -> None:
    cluster = check_gke(target, ctx.cfg.google_api, result)
    if cluster is None:
        return
    endpoint = cluster.get("endpoint") or ""
    ca = (cluster.get("masterAuth") or {}).get("clusterCaCertificate") or ""
    if not endpoint:
        raise Unreachable("the GKE API reports no endpoint for the cluster")
    text = gke_kubeconfig(target.project, target.location, target.gke_name, endpoint, ca)
    check_in_cluster(kube_client(text, None), result, target, target.resolved_mode, ctx.log_lines)
