"""The live cluster: its projection onto the inputs (refresh and import), a PATCH that never starts a
second operation, and the messages that describe a cluster the user must act on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from ml_diagnostics.providers.google_rest import VERTEX, GoogleApiError, GoogleRestClient, OperationFailed
from ml_diagnostics.providers.mdc.update_plan import by_key, mask_body, plan_update
from ml_diagnostics.specs.model_development import API_SCHEMA, API_VERSION, UPDATE_MASK_PATHS, from_rest


def project_onto(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster as the server reports it, in input shape, limited to what the inputs manage.

    Used by refresh and import: the fields the inputs set take their live values; the updatable fields
    (`UPDATE_MASK_PATHS`: labels, node pools, Slurm settings) are taken whole, set or not, so drift there
    shows up in the next diff; fields the service fills in and the inputs leave unset stay unset. Node
    pools are matched by id; within a pool only the keys the inputs set are kept.
    """
    server = from_rest(cluster)

    def limit(mine: Any, theirs: Any, schema: Any, path: str) -> Any:
        if isinstance(schema, dict) and isinstance(theirs, Mapping):
            mine = mine if isinstance(mine, Mapping) else {}
            keys = [
                k
                for k in schema
                if k in mine or (f"{path}.{k}".lstrip(".") in UPDATE_MASK_PATHS and k in theirs)
            ]
            return {k: limit(mine.get(k), theirs.get(k), schema[k], f"{path}.{k}".lstrip(".")) for k in keys}
        if isinstance(schema, list) and isinstance(theirs, list):
            key = "id" if "id" in schema[0] else "node_pool_id"
            mine_by = by_key(mine if isinstance(mine, list) else [], key)
            # a pool the inputs do not have: every key it reports (it differs anyway)
            return [limit(mine_by.get(t.get(key), t), t, schema[0], "") for t in theirs]
        return theirs

    projected = limit(spec, server, API_SCHEMA, "")
    return {**{k: v for k, v in spec.items() if k not in API_SCHEMA}, **projected}


def error_state_message(path: str, cluster: Mapping[str, Any], what: str) -> str:
    status = cluster.get("clusterStatus") or {}
    err = status.get("error") or {}
    detail = (err.get("message") or status.get("detail") or "no detail given").rstrip(".")
    return (
        f"{what}; cluster {path} is in state {status.get('state')} ({detail}) and is not in the Pulumi "
        f"state: delete it (DELETE https://REGION-aiplatform.googleapis.com/{API_VERSION}/{path} or the "
        "console), fix the cause, then run `pulumi up` again"
    )


class ModelDevelopmentClusterError(pulumi.RunError):
    """A failure the user must act on; the message says what happened and what to do."""


def running_update(client: GoogleRestClient, path: str) -> dict[str, Any] | None:
    """The cluster's operation still running, if any (`GET {cluster}/operations`)."""
    listed = client.get_or_none(f"{path}/operations", resource=path) or {}
    running = [op for op in listed.get("operations") or [] if not op.get("done")]
    return running[-1] if running else None


def patch_once(
    client: GoogleRestClient, new: Mapping[str, Any], mask: list[str], deadline: float, path: str
) -> dict[str, Any]:
    """PATCHes the masked fields and waits; returns the finished operation (or {"response": cluster}).

    The PATCH is not blindly repeated: when its answer was lost (no response or a 5xx, so it may have
    started an operation), the cluster's running operation is awaited instead, and a cluster that
    already has the new values is left alone. Only a PATCH known not to have started anything is sent
    again. Rejections that say "try later" (408, 429) are retried with backoff.
    """
    params = {"updateMask": ",".join(mask), "updateMode": new.get("update_mode") or "USER_AND_SERVICE"}
    body = mask_body(new, mask)
    end = client.retry_end()
    attempt = 0
    op: dict[str, Any] | None = None
    while op is None:
        try:
            op = client.request("PATCH", path, json=body, params=params, idempotent=False, resource=path)
        except GoogleApiError as e:
            if not e.retryable or not client.pause(attempt, e.retry_after, end):
                raise ModelDevelopmentClusterError(f"updating {', '.join(mask)} failed: {e}") from None
            attempt += 1
            if e.answer_lost:
                op = running_update(client, path)
                if op is None:
                    live = client.request("GET", path, resource=path)
                    if not set(plan_update(project_onto(new, live), new).mask) & set(mask):
                        return {"done": True, "response": live}
    try:
        return client.wait_operation(op, deadline, style=VERTEX, resource=path)
    except OperationFailed as e:
        raise ModelDevelopmentClusterError(
            f"updating {', '.join(mask)} failed: {e}. The cluster keeps its previous settings for "
            "the fields the service rejected; run `pulumi refresh` to see its state"
        ) from None
