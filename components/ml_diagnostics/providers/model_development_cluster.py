"""Dynamic provider for a Vertex AI Model Development Cluster (Slurm), over the v1beta1 REST API.

Inputs are shaped like the Terraform beta resource `google_vertex_ai_model_development_cluster`; the
schema, validation and update planning live in `ml_diagnostics.providers.mdc` (shared with the stack config).
The REST body is the API's JSON (lowerCamelCase).

Update rules (the Model Development Cluster docs, "Manage clusters"): PATCH always carries an explicit `updateMask` naming exactly the changed fields,
all of them from `UPDATE_MASK_PATHS` (components/specs/model_development.py) (without a mask the service compares the whole payload and
deletes what it omits); repeated fields and maps are sent whole; `updateMode` comes from the input.

This module path is pickled into Pulumi state with the provider: do not move it. The provider instance
holds only plain settings; HTTP sessions are created inside each call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from ml_diagnostics import compat
from ml_diagnostics.providers import google_rest
from ml_diagnostics.providers.google_rest import (
    VERTEX,
    Clock,
    GoogleApiError,
    GoogleRestClient,
    OperationFailed,
)
from ml_diagnostics.providers.mdc.live import (
    ModelDevelopmentClusterError,
    error_state_message,
    patch_once,
    project_onto,
)
from ml_diagnostics.providers.mdc.update_plan import plan_update
from ml_diagnostics.specs.model_development import (
    API_SCHEMA,
    API_VERSION,
    DEFAULT_OPERATION_TIMEOUT_MINUTES,
    OUTPUT_KEYS,
    cluster_path,
    from_rest,
    is_unknown,
    normalize,
    to_rest,
)
from ml_diagnostics.specs.model_development_rules import validate_spec


def _base_url(spec: Mapping[str, Any]) -> str:
    endpoint = spec.get("api_endpoint") or "https://{region}-aiplatform.googleapis.com"
    endpoint = endpoint.replace("{region}", str(spec["region"])).rstrip("/")
    if not re.search(r"/v1(beta1)?$", endpoint):
        endpoint += f"/{API_VERSION}"
    return endpoint


class ModelDevelopmentClusterProvider(ResourceProvider):
    """CRUD for `pulumi-python:dynamic/vertexai:ModelDevelopmentCluster`.

    `clock` exists for tests against a loopback fake and the benchmark; production instances are built
    with no arguments. Nothing else lives on the instance (it is pickled into state; instances pickled by
    older versions may carry an unused `anonymous` attribute). Credentials, endpoints, emulator mode and
    retries come from the inputs (googleApi settings).
    """

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__()
        self.clock = clock

    # -- plumbing -----------------------------------------------------------------------------------------
    def _client(self, spec: Mapping[str, Any]) -> GoogleRestClient:
        try:
            return google_rest.client(_base_url(spec), spec, clock=getattr(self, "clock", None))
        except ValueError as e:
            raise ModelDevelopmentClusterError(f"googleApi settings of {cluster_path(spec)}: {e}") from None

    @staticmethod
    def _deadline(spec: Mapping[str, Any]) -> float:
        return 60.0 * float(spec.get("operation_timeout_minutes") or DEFAULT_OPERATION_TIMEOUT_MINUTES)

    @staticmethod
    def _outs(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> dict[str, Any]:
        status = cluster.get("clusterStatus") or {}
        return {
            **spec,
            "name": cluster.get("name", ""),
            "state": status.get("state", ""),
            "create_time": cluster.get("createTime", ""),
            "update_time": cluster.get("updateTime", ""),
        }

    # -- check / diff -------------------------------------------------------------------------------------
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        spec = normalize(news)
        old = normalize(_olds) if _olds and _olds.get("model_development_cluster_id") else None
        failures = [CheckFailure(path, msg) for path, msg in validate_spec(spec, old)]
        return CheckResult(dict(news), failures)

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        old, new = normalize(_olds), normalize(_news)
        plan = plan_update(old, new)
        same_id = old.get("model_development_cluster_id") == new.get("model_development_cluster_id")
        if is_unknown(_news):
            # Some inputs are not known yet (preview): unknown values count as changed (a replace if immutable).
            return DiffResult(
                changes=True, replaces=plan.replaces, delete_before_replace=bool(plan.replaces) and same_id
            )
        if plan.replaces and (new.get("deletion_policy") or old.get("deletion_policy")) == "PREVENT":
            raise ModelDevelopmentClusterError(
                f"cluster {cluster_path(old)} would be replaced ({', '.join(plan.replace_reasons)} cannot change "
                "in place) but its deletion policy is PREVENT; revert the change, or set deletionPolicy to "
                "DELETE and run the update again to allow the replacement"
            )
        for w in plan.warnings:
            pulumi.log.warn(f"{cluster_path(new)}: {w}")
        return DiffResult(
            changes=plan.changes,
            replaces=plan.replaces,
            stables=[],
            # The new cluster has the same id: delete the old one first (else create gets ALREADY_EXISTS).
            delete_before_replace=bool(plan.replaces) and same_id,
        )

    # -- create -------------------------------------------------------------------------------------------
    def create(self, props: dict[str, Any]) -> CreateResult:
        spec = normalize(props)
        problems = validate_spec(spec)
        if problems:
            raise ModelDevelopmentClusterError("; ".join(f"{p}: {m}" for p, m in problems))
        path = cluster_path(spec)
        client = self._client(spec)
        parent, cid = path.rsplit("/", 1)
        url = f"{parent}?modelDevelopmentClusterId={quote(cid)}"
        body = to_rest(spec)
        deadline = self._deadline(spec)
        if spec.get("adopt"):  # the vendor procedure made it: take it over, never POST
            existing = self._get(client, path)
            if existing is None:
                raise ModelDevelopmentClusterError(
                    f"adopt: cluster {path} does not exist (HTTP 404); nothing was created. Check project, "
                    "region and modelDevelopmentClusterId, or remove adopt: true to create the cluster"
                )
            return CreateResult(path, self._adopt(client, spec, path, existing, "exists"))
        op: dict[str, Any] | None = None
        end = client.retry_end()
        attempt = 0
        while op is None:
            try:
                op = client.request("POST", url, json=body, idempotent=False, resource=path)
            except GoogleApiError as e:
                if e.http_status == 409:
                    existing = client.request("GET", path, resource=path)
                    return CreateResult(
                        path, self._adopt(client, spec, path, existing, "already exists (ALREADY_EXISTS)")
                    )
                if not e.retryable or not client.pause(attempt, e.retry_after, end):
                    raise ModelDevelopmentClusterError(f"creating cluster failed: {e}") from None
                attempt += 1
                if e.answer_lost:  # the create may have happened: look before posting again
                    existing = self._get(client, path)
                    if existing is not None:
                        return CreateResult(
                            path, self._wait_for_cluster(client, spec, path, existing, deadline)
                        )
        try:
            done = client.wait_operation(op, deadline, style=VERTEX, resource=path)
        except OperationFailed as e:
            raise ModelDevelopmentClusterError(self._failed_create_message(client, path, e)) from None
        cluster = done.get("response") or {}
        if not cluster.get("name"):
            cluster = client.request("GET", path, resource=path)
        return CreateResult(path, self._outs(spec, cluster))

    def _get(self, client: GoogleRestClient, path: str) -> dict[str, Any] | None:
        return client.get_or_none(path, resource=path)

    def _wait_for_cluster(
        self,
        client: GoogleRestClient,
        spec: Mapping[str, Any],
        path: str,
        cluster: dict[str, Any],
        deadline: float,
    ) -> dict[str, Any]:
        """Waits for a cluster whose create we started but whose operation we do not know."""
        start = client.clock.monotonic()
        end = start + deadline
        attempt = 0
        while (cluster.get("clusterStatus") or {}).get("state") == "PROVISIONING":
            if client.clock.monotonic() >= end:
                raise ModelDevelopmentClusterError(
                    f"cluster {path} is still provisioning after {deadline:.0f} s; run `pulumi refresh` later"
                )
            elapsed = client.clock.monotonic() - start
            client.clock.sleep(client.poll_schedule.delay(attempt, elapsed, client.clock.random()))
            attempt += 1
            cluster = client.request("GET", path, resource=path)
        status = cluster.get("clusterStatus") or {}
        if status.get("state") == "ERROR":
            raise ModelDevelopmentClusterError(
                error_state_message(path, cluster, f"creating cluster {path} failed")
            )
        return self._outs(spec, cluster)

    def _adopt(
        self,
        client: GoogleRestClient,
        spec: Mapping[str, Any],
        path: str,
        cluster: dict[str, Any],
        found: str,
    ) -> dict[str, Any]:
        """Takes over an existing cluster that matches the inputs (`found` says how it was found)."""
        existing = from_rest(cluster)
        local = {k: v for k, v in spec.items() if k not in API_SCHEMA}
        plan = plan_update({**local, **existing}, spec)
        state = (cluster.get("clusterStatus") or {}).get("state", "")
        if plan.changes:
            raise ModelDevelopmentClusterError(
                f"cluster {path} {found} and differs from the inputs in: "
                f"{', '.join(plan.changed)}. It was left unchanged. Choose another modelDevelopmentClusterId, "
                "or make the inputs match it and run again to adopt it, or delete it first"
            )
        if state == "ERROR":
            raise ModelDevelopmentClusterError(
                error_state_message(
                    path,
                    cluster,
                    f"cluster {path} {found} and matches the inputs, but cannot be adopted",
                )
            )
        return self._wait_for_cluster(client, spec, path, cluster, self._deadline(spec))

    def _failed_create_message(self, client: GoogleRestClient, path: str, err: OperationFailed) -> str:
        what = f"creating cluster {path} failed: {err.message.rstrip('.')}"
        try:
            cluster = self._get(client, path)
        except GoogleApiError as e:
            return f"{what}. Could not check whether the cluster was left behind ({e}); look for it before retrying"
        if cluster is None:
            return f"{what}. No cluster was left behind; fix the cause and run `pulumi up` again"
        return error_state_message(path, cluster, what)

    # -- read (refresh and import) ------------------------------------------------------------------------
    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh gets the stored outputs; an import gets the program's inputs (or nothing but the id).

        The returned inputs are the live cluster projected onto what the inputs manage, so an adopted
        cluster that matches the program shows no diff, and one that differs shows exactly the fields.
        """
        spec = normalize(props)
        by_id_only = not spec.get("model_development_cluster_id")
        if by_id_only:  # derive the identity from the id
            m = re.fullmatch(r"projects/([^/]+)/locations/([^/]+)/modelDevelopmentClusters/([^/]+)", id_)
            if not m:
                raise ModelDevelopmentClusterError(
                    f"cannot import {compat.quote(id_)}: expected projects/PROJECT/locations/REGION/modelDevelopmentClusters/ID"
                )
            spec.update(project=m[1], region=m[2], model_development_cluster_id=m[3])
        client = self._client(spec)
        cluster = self._get(client, id_)
        if cluster is None:
            return ReadResult(None, {})
        if by_id_only:
            spec.update(from_rest(cluster))
        inputs = project_onto(spec, cluster)
        return ReadResult(id_, self._outs(inputs, cluster), inputs)

    # -- update -------------------------------------------------------------------------------------------
    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> UpdateResult:
        old, new = normalize(_olds), normalize(_news)
        problems = validate_spec(new, old)
        if problems:
            raise ModelDevelopmentClusterError("; ".join(f"{p}: {m}" for p, m in problems))
        plan = plan_update(old, new)
        path = cluster_path(new)
        if not plan.mask:  # only local settings changed (deletion policy, timeout, ...): nothing to send
            return UpdateResult({**{k: _olds.get(k) for k in OUTPUT_KEYS}, **new})
        client = self._client(new)
        done = patch_once(client, new, plan.mask, self._deadline(new), path)
        cluster = done.get("response") or {}
        if not cluster.get("name"):
            cluster = client.request("GET", path, resource=path)
        return UpdateResult(self._outs(new, cluster))

    # -- delete -------------------------------------------------------------------------------------------
    def delete(self, id_: str, props: dict[str, Any]) -> None:
        spec = normalize(props)
        policy = spec.get("deletion_policy") or "DELETE"
        if policy == "ABANDON":
            pulumi.log.warn(f"cluster {id_}: deletion policy ABANDON: removed from the stack, left running")
            return
        if policy == "PREVENT":
            raise ModelDevelopmentClusterError(
                f"cluster {id_} has deletion policy PREVENT: refusing to delete it; set deletionPolicy to DELETE "
                "(or ABANDON to keep it running) and run `pulumi up` before destroying it"
            )
        client = self._client(spec)
        try:
            op = client.request("DELETE", id_, resource=id_)
        except GoogleApiError as e:
            if e.http_status == 404:
                return
            raise ModelDevelopmentClusterError(f"deleting failed: {e}") from None
        try:
            client.wait_operation(op, self._deadline(spec), style=VERTEX, resource=id_)
        except OperationFailed as e:
            if e.status == "NOT_FOUND":
                return
            raise ModelDevelopmentClusterError(f"deleting failed: {e}") from None


class ModelDevelopmentCluster(pulumi.dynamic.Resource, module="vertexai", name="ModelDevelopmentCluster"):
    """`pulumi-python:dynamic/vertexai:ModelDevelopmentCluster`. Inputs: see the module docstring.

    Outputs add `name` (full resource name), `state`, `create_time`, `update_time`.
    """

    name: pulumi.Output[str]
    state: pulumi.Output[str]

    def __init__(
        self, resource_name: str, props: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(
            ModelDevelopmentClusterProvider(),
            resource_name,
            {**props, "name": None, "state": None, "create_time": None, "update_time": None},
            opts,
        )
