"""Verify checks of a gkeClusters target, and of a GkeCluster found in a stack's state: the GKE API's view of
the cluster, then the in-cluster checks through its endpoint and CA."""

from __future__ import annotations

from typing import Any

from ml_diagnostics import compat, verify_record
from ml_diagnostics.gke_kubeconfig import gke_kubeconfig
from ml_diagnostics.rules.google_api import GoogleApiSpec
from ml_diagnostics.verify_record import GkeRecord
from program.clouds import Unreachable
from program.clouds.google import GOOGLE
from program.clouds.google_client import CONTAINER_ENDPOINT, get_once, rest_client
from program.clouds.kubernetes_client import kube_client
from program.in_cluster.verify import check_in_cluster
from program.kinds.context import VerifyContext
from program.kinds.gke.model import GkeClusterTarget
from program.verify.result import TargetResult


def record_of(target: GkeClusterTarget, ctx: VerifyContext) -> GkeRecord:
    """What the target's GkeCluster records (ml_diagnostics.verify_record), from the stack config."""
    mode = target.resolved_mode
    google_api = GoogleApiSpec.model_validate(ctx.settings(GOOGLE).for_target(target.google_api).to_args())
    inside = verify_record.in_cluster(target, mode)
    section = verify_record.gke(target.project, target.location, target.gke_name, mode, google_api, inside)
    return GkeRecord.model_validate(section)


def verify(target: GkeClusterTarget, ctx: VerifyContext, result: TargetResult) -> None:
    check(record_of(target, ctx), None, ctx, result)


def check(rec: GkeRecord, access: None, ctx: VerifyContext, result: TargetResult) -> None:
    cluster = check_gke(rec, result)
    if cluster is None:
        return
    endpoint = cluster.get("endpoint") or ""
    ca = (cluster.get("masterAuth") or {}).get("clusterCaCertificate") or ""
    if not endpoint:
        raise Unreachable("the GKE API reports no endpoint for the cluster")
    text = gke_kubeconfig(rec.project, rec.location, rec.cluster_name, endpoint, ca)
    check_in_cluster(kube_client(text, None), result, rec.in_cluster, ctx.log_lines, ctx.all_logs)


def check_gke(rec: GkeRecord, result: TargetResult) -> dict[str, Any] | None:
    """Cluster status and the managed flag; returns the cluster (endpoint and CA for the in-cluster checks)."""
    google_api = rec.google_api
    path = f"projects/{rec.project}/locations/{rec.location}/clusters/{rec.cluster_name}"
    client = rest_client(
        google_api.endpoints.get("container"), CONTAINER_ENDPOINT, "v1", google_api, "container"
    )
    cluster = get_once(client, path, f"GKE cluster {path}")
    if cluster is None:
        result.add(
            "gke.cluster",
            False,
            f"cluster {path} not found",
            "check project, location and clusterName in the stack config; for create: true run `pulumi up`",
        )
        return None
    status = cluster.get("status", "")
    if status == "RUNNING":
        result.add("gke.cluster", True, f"{path} RUNNING")
    else:
        message = cluster.get("statusMessage") or ""
        busy = status in ("PROVISIONING", "RECONCILING", "STOPPING")
        result.add(
            "gke.cluster",
            False,
            f"{path} is {status}{f': {message}' if message else ''}",
            "an operation is running (`gcloud container operations list`): rerun with --wait SECONDS"
            if busy
            else f"`gcloud container clusters describe {rec.cluster_name} --location {rec.location}` and "
            "`gcloud container operations list` show what failed; repair or recreate the failing node pool",
        )

    version = cluster.get("currentMasterVersion", "")
    enabled = bool((cluster.get("managedMachineLearningDiagnosticsConfig") or {}).get("enabled", False))
    mode = rec.mode
    if mode == "managed":
        problems = []
        try:
            new_enough = compat.supports_managed(version)
        except ValueError:
            new_enough = False
        if not new_enough:
            problems.append(f"version {version or 'unknown'} is before {compat.MANAGED_MIN_VERSION}")
        if not enabled:
            problems.append("managed ML diagnostics is off")
        if problems:
            result.add(
                "gke.managed",
                False,
                "; ".join(problems),
                f"upgrade the control plane to {compat.MANAGED_MIN_VERSION} or later and run `pulumi up` (it turns "
                "the flag on; right after a switch from manual this is the second update, see the stack output "
                "pendingSteps); or set mode: manual",
            )
        else:
            result.add("gke.managed", True, f"flag on, version {version} >= {compat.MANAGED_MIN_VERSION}")
    elif enabled:
        result.add(
            "gke.managed",
            False,
            "managed ML diagnostics is on while the stack installs the manual releases (two webhooks)",
            "run `pulumi up` (it turns the flag off for mode manual), or set mode: managed / auto",
        )
    else:
        result.add("gke.managed", True, f"flag off (manual install), version {version}")
    return cluster
