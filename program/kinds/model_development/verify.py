"""Verify checks of a modelDevelopmentClusters target, and of a ModelDevelopmentCluster found in a stack's
state: the cluster as the Vertex AI API reports it."""

from __future__ import annotations

from ml_diagnostics import verify_record
from ml_diagnostics.rules.google_api import GoogleApiSpec
from ml_diagnostics.verify_record import ModelDevelopmentRecord
from program.clouds.google import GOOGLE
from program.clouds.google_client import (
    AIPLATFORM_ENDPOINT,
    MDC_API_VERSION,
    MDC_BUSY_STATES,
    get_once,
    rest_client,
)
from program.kinds.context import VerifyContext
from program.kinds.model_development.model import ModelDevelopmentClusterTarget
from program.verify.result import TargetResult


def record_of(target: ModelDevelopmentClusterTarget, ctx: VerifyContext) -> ModelDevelopmentRecord:
    """What the target's ModelDevelopmentCluster records (ml_diagnostics.verify_record), from the stack config."""
    google_api = GoogleApiSpec.model_validate(ctx.settings(GOOGLE).for_target(target.google_api).to_args())
    section = verify_record.model_development(
        target.project, target.region, target.model_development_cluster_id, google_api
    )
    return ModelDevelopmentRecord.model_validate(section)


def verify(target: ModelDevelopmentClusterTarget, ctx: VerifyContext, result: TargetResult) -> None:
    check(record_of(target, ctx), None, ctx, result)


def check(rec: ModelDevelopmentRecord, access: None, ctx: VerifyContext, result: TargetResult) -> None:
    google_api = rec.google_api
    endpoint = google_api.endpoints.get("aiplatform")
    default = AIPLATFORM_ENDPOINT.replace("{region}", rec.region)
    if endpoint:
        endpoint = endpoint.replace("{region}", rec.region)
    path = f"projects/{rec.project}/locations/{rec.region}/modelDevelopmentClusters/{rec.cluster_id}"
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
