"""Verify checks of a modelDevelopmentClusters target: the cluster as the Vertex AI API reports it."""

from __future__ import annotations

from program.clouds.google import GOOGLE, GoogleApiSettings
from program.clouds.google_client import (
    AIPLATFORM_ENDPOINT,
    MDC_API_VERSION,
    MDC_BUSY_STATES,
    get_once,
    rest_client,
)
from program.kinds.model_development.model import ModelDevelopmentClusterTarget
from program.verify.context import VerifyContext
from program.verify.result import TargetResult


def verify(target: ModelDevelopmentClusterTarget, ctx: VerifyContext, result: TargetResult) -> None:
    check_model_development_cluster(target, ctx.settings(GOOGLE), result)


def check_model_development_cluster(
    target: ModelDevelopmentClusterTarget, google_api: GoogleApiSettings, result: TargetResult
) -> None:
    google_api = google_api.for_target(target.google_api)
    endpoint = google_api.endpoints.get("aiplatform")
    default = AIPLATFORM_ENDPOINT.replace("{region}", target.region)
    if endpoint:
        endpoint = endpoint.replace("{region}", target.region)
    path = f"projects/{target.project}/locations/{target.region}/modelDevelopmentClusters/{target.model_development_cluster_id}"
    client = rest_client(endpoint, default, MDC_API_VERSION, google_api, "aiplatform")
    cluster = get_once(client, path, f"Model Development Cluster {path}")
    if cluster is None:
        result.add(
            "mdc.state",
            False,
            f"{path} not found",
            "run `pulumi up` (or `pulumi refresh` if it was deleted by hand)",
        )
        return
    status = cluster.get("clusterStatus") or {}
    state = status.get("state", "STATE_UNSPECIFIED")
    detail = status.get("detail") or (status.get("error") or {}).get("message") or ""
    where = f"{path} is {state}{f': {detail}' if detail else ''}"
    if state == "RUNNING":
        result.add("mdc.state", True, f"{path} RUNNING, no operation pending")
    elif state in MDC_BUSY_STATES:
        result.add(
            "mdc.state",
            False,
            f"{where} (an operation is pending)",
            "wait for the operation to finish (rerun with --wait SECONDS); if it never ends, check the operation "
            "in the Cloud console and run `pulumi up` again",
        )
    else:
        result.add(
            "mdc.state",
            False,
            where,
            "read clusterStatus.error in the Cloud console; fix the cause (quota, reservation, image) and run "
            "`pulumi up`; a cluster stuck in ERROR may need to be deleted and created again",
        )
