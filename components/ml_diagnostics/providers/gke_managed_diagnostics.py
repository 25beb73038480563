"""Dynamic resource: the managed ML Diagnostics flag of a GKE cluster this program adopts (does not own).

Type token `pulumi-python:dynamic/gke:ManagedMlDiagnostics`. Create/update send
`PUT https://container.googleapis.com/v1/projects/P/locations/L/clusters/C` with
`{"update": {"desiredManagedMachineLearningDiagnosticsConfig": {"enabled": <bool>}}}` (the API's
ClusterUpdate field; what `gcloud beta container clusters update --[no-]enable-managed-mldiagnostics`
does) and wait for the returned GKE operation. Create records the flag's value before the program first
touched it (`previousEnabled`); delete puts that value back.

Inputs: project, location, cluster, enabled, clusterVersion (the version the stack declares; the policy
pack checks it against the managed threshold), and the REST client settings from `googleApi`: apiEndpoint,
quotaProject, impersonateServiceAccount, iamEndpoint, emulator, retry. `read` supports `import_` with the
cluster path as id (inputs with the live flag, so an adopted cluster in the declared state shows no diff).

This module's path is pickled into state with the provider: do not move it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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
from ml_diagnostics.compat import quote
from ml_diagnostics.providers import google_rest
from ml_diagnostics.providers.google_rest import GKE, Clock, GoogleApiError, GoogleRestClient

DEFAULT_ENDPOINT = "https://container.googleapis.com"
OPERATION_DEADLINE_SECONDS = 45 * 60  # enabling a cluster feature redeploys add-ons; minutes, not seconds
IDENTITY_KEYS = ("project", "location", "cluster")
# REST client settings (googleApi): inputs that never reach the API.
CLIENT_KEYS = ("apiEndpoint", "quotaProject", "impersonateServiceAccount", "iamEndpoint", "emulator", "retry")
_CLIENT_INPUTS = dict(
    zip(
        ("api_endpoint", "quota_project", "impersonate_service_account", "iam_endpoint", "emulator", "retry"),
        CLIENT_KEYS,
        strict=True,
    )
)
FIELD = "desiredManagedMachineLearningDiagnosticsConfig"

_BUSY = re.compile(r"incompatible operation (operation-[\w-]+)")


class ClusterNotFound(Exception):
    pass


def cluster_path(props: dict[str, Any]) -> str:
    return f"projects/{props['project']}/locations/{props['location']}/clusters/{props['cluster']}"


def live_enabled(cluster: dict[str, Any]) -> bool:
    """The flag as GKE reports it; an absent block means the feature is off."""
    return bool((cluster.get("managedMachineLearningDiagnosticsConfig") or {}).get("enabled", False))


class ManagedMlDiagnosticsProvider(ResourceProvider):
    # Nothing secret is captured: the pickled provider need not be a secret.
    serialize_as_secret_always = False

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__()
        # Tests and benchmarks pass a simulated clock (no real sleeping); None = wall clock. Instances
        # pickled by older versions carry an unused `anonymous` attribute instead.
        self.clock = clock

    # --- helpers -----------------------------------------------------------------------------------

    def _client(self, props: dict[str, Any]) -> GoogleRestClient:
        endpoint = (props.get("apiEndpoint") or DEFAULT_ENDPOINT).rstrip("/")
        base = endpoint if endpoint.endswith("/v1") else f"{endpoint}/v1"
        # The wire (and state) names of this resource's settings are camelCase; the settings are snake_case.
        settings = {snake: props.get(camel) for snake, camel in _CLIENT_INPUTS.items()}
        try:
            return google_rest.client(base, settings, clock=getattr(self, "clock", None))
        except ValueError as e:
            raise ValueError(f"googleApi settings of {self._resource(props)}: {e}") from None

    @staticmethod
    def _resource(props: dict[str, Any]) -> str:
        return f"GKE cluster {cluster_path(props)}"

    def _get(self, client: GoogleRestClient, props: dict[str, Any]) -> dict[str, Any] | None:
        return client.get_or_none(cluster_path(props), resource=self._resource(props))

    def _get_existing(self, client: GoogleRestClient, props: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(client, props)
        if cluster is None:
            raise ClusterNotFound(
                f"{self._resource(props)} not found (HTTP 404): an adopted cluster must already exist; "
                "check project, location and cluster name, or set create: true to have the program create it"
            )
        return cluster

    def _set(self, client: GoogleRestClient, props: dict[str, Any], enabled: bool) -> str:
        """Sends the update and waits for its operation; returns the operation name."""
        body = {"update": {FIELD: {"enabled": enabled}}}
        path = cluster_path(props)
        resource = self._resource(props)
        for attempt in range(2):
            try:
                op = client.request("PUT", path, json=body, resource=resource)
                break
            except GoogleApiError as e:
                # GKE runs one operation per cluster at a time: wait for the running one (possibly our own
                # PUT whose answer was lost and was retried), then send again only if the flag still differs.
                busy = _BUSY.search(e.message)
                if attempt or not busy or e.status != "FAILED_PRECONDITION":
                    raise
                self._wait(client, props, {"name": busy.group(1)})
                if live_enabled(self._get_existing(client, props)) == enabled:
                    return busy.group(1)
        return str(self._wait(client, props, op).get("name", ""))

    def _wait(self, client: GoogleRestClient, props: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
        name = str(op.get("name", ""))
        # GKE v1 operation names are short; poll them under the configured endpoint, not the selfLink host.
        full = (
            name
            if "/" in name
            else f"projects/{props['project']}/locations/{props['location']}/operations/{name}"
        )
        done = client.wait_operation(
            {**op, "name": full}, OPERATION_DEADLINE_SECONDS, style=GKE, resource=self._resource(props)
        )
        return {**done, "name": name}

    @staticmethod
    def _outs(
        props: dict[str, Any], previous: bool, cluster: dict[str, Any], operation: str
    ) -> dict[str, Any]:
        keep = (*IDENTITY_KEYS, "enabled", "clusterVersion", *CLIENT_KEYS)
        outs = {k: props.get(k) for k in keep if k in props}
        outs.update(
            previousEnabled=previous,
            liveVersion=cluster.get("currentMasterVersion", ""),
            lastOperation=operation,
        )
        return outs

    # --- provider protocol -----------------------------------------------------------------------

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        for key in IDENTITY_KEYS:
            v = news.get(key)
            if isinstance(v, str) and not v.strip():
                failures.append(CheckFailure(key, f"{key} must be a non-empty string"))
        enabled = news.get("enabled")
        if enabled is not None and not isinstance(enabled, bool) and not _unknown(enabled):
            failures.append(CheckFailure("enabled", "enabled must be true or false"))
        version = news.get("clusterVersion")
        if isinstance(version, str) and version:
            try:
                v = compat.GkeVersion.parse(version)
            except ValueError as e:
                failures.append(CheckFailure("clusterVersion", str(e)))
            else:
                if enabled is True and v < compat.MANAGED_MIN_VERSION:
                    failures.append(
                        CheckFailure(
                            "enabled",
                            f"managed ML diagnostics needs GKE >= {compat.MANAGED_MIN_VERSION}; "
                            f"clusterVersion is {v}",
                        )
                    )
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in IDENTITY_KEYS if _unknown(news.get(k)) or olds.get(k) != news.get(k)]
        watched = ("enabled", "clusterVersion", *CLIENT_KEYS)
        changed = [k for k in watched if _unknown(news.get(k)) or olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(replaces or changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        client = self._client(props)
        try:
            cluster = self._get_existing(client, props)
            previous = live_enabled(cluster)
            enabled = bool(props["enabled"])
            if enabled:
                _require_managed_version(self._resource(props), cluster)
            operation = self._set(client, props, enabled) if previous != enabled else ""
            return CreateResult(cluster_path(props), self._outs(props, previous, cluster, operation))
        finally:
            client.close()

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """Refresh gets the stored outputs; an import (`import_` = the cluster path) the program's inputs.

        The returned inputs are the program's with `enabled` as GKE reports it, so adopting a cluster whose
        flag already has the declared value shows no diff, and one that differs shows exactly `enabled`.
        """
        props = dict(props)
        if not all(props.get(k) for k in IDENTITY_KEYS):  # by id alone
            m = re.fullmatch(r"projects/([^/]+)/locations/([^/]+)/clusters/([^/]+)", id_)
            if not m:
                raise ValueError(
                    f"cannot import {quote(id_)}: expected projects/PROJECT/locations/LOCATION/clusters/NAME"
                )
            props.update(project=m[1], location=m[2], cluster=m[3])
        client = self._client(props)
        try:
            cluster = self._get(client, props)
        finally:
            client.close()
        if cluster is None:
            return ReadResult("", {})
        live = live_enabled(cluster)
        inputs = {
            k: props[k] for k in (*IDENTITY_KEYS, "clusterVersion", *CLIENT_KEYS) if props.get(k) is not None
        }
        inputs["enabled"] = live
        if "clusterVersion" not in inputs:
            inputs["clusterVersion"] = cluster.get("currentMasterVersion", "")
        previous = props.get("previousEnabled")
        outs = self._outs(
            inputs, live if previous is None else bool(previous), cluster, props.get("lastOperation") or ""
        )
        return ReadResult(id_, outs, inputs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        client = self._client(news)
        try:
            cluster = self._get_existing(client, news)
            enabled = bool(news["enabled"])
            if enabled:
                _require_managed_version(self._resource(news), cluster)
            operation = self._set(client, news, enabled) if live_enabled(cluster) != enabled else ""
            previous = olds.get("previousEnabled")
            previous = live_enabled(cluster) if previous is None else bool(previous)
            return UpdateResult(self._outs(news, previous, cluster, operation))
        finally:
            client.close()

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        client = self._client(props)
        try:
            cluster = self._get(client, props)
            if cluster is None:
                return  # the cluster is gone: nothing to restore
            previous = bool(props.get("previousEnabled", False))
            if live_enabled(cluster) != previous:
                self._set(client, props, previous)
        finally:
            client.close()


def _unknown(v: Any) -> bool:
    from pulumi.runtime import rpc

    return v == rpc.UNKNOWN


def _require_managed_version(resource: str, cluster: dict[str, Any]) -> None:
    live = cluster.get("currentMasterVersion")
    if live and not compat.supports_managed(live):
        raise ValueError(
            f"{resource} runs GKE {live}; managed ML diagnostics needs GKE >= {compat.MANAGED_MIN_VERSION}. "
            "Upgrade the cluster or use mode manual"
        )


class ManagedMlDiagnostics(pulumi.dynamic.Resource, module="gke", name="ManagedMlDiagnostics"):
    """The managed ML Diagnostics flag of an existing GKE cluster. Outputs `previousEnabled`, `liveVersion`."""

    previousEnabled: pulumi.Output[bool]  # noqa: N815 (wire names: dynamic outputs are not translated)
    liveVersion: pulumi.Output[str]  # noqa: N815
    enabled: pulumi.Output[bool]

    def __init__(
        self,
        name: str,
        *,
        project: pulumi.Input[str],
        location: pulumi.Input[str],
        cluster: pulumi.Input[str],
        enabled: pulumi.Input[bool],
        cluster_version: pulumi.Input[str],
        api_endpoint: str | None = None,
        quota_project: str | None = None,
        google_api: Mapping[str, Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`google_api`: the REST client settings `ml_diagnostics.google_api.rest_inputs(..., "container")` returns
        (api_endpoint, quota_project, impersonate_service_account, iam_endpoint, emulator, retry); they override
        `api_endpoint`/`quota_project`."""
        props: dict[str, Any] = {
            "project": project,
            "location": location,
            "cluster": cluster,
            "enabled": enabled,
            "clusterVersion": cluster_version,
            "apiEndpoint": api_endpoint,
            "quotaProject": quota_project,
            **{_CLIENT_INPUTS[k]: v for k, v in (google_api or {}).items()},
            "previousEnabled": None,
            "liveVersion": None,
            "lastOperation": None,
        }
        super().__init__(ManagedMlDiagnosticsProvider(), name, props, opts)
