"""GKE and Vertex AI checks over the REST APIs, with the REST client the dynamic providers use.

Credentials are the program's: Application Default Credentials with the stack's `googleApi` settings as
the target sees them (`googleApi.for_target`: quota project, `impersonateServiceAccount`, endpoints), and
none at all in its emulator mode (loopback endpoints only). Only GET requests are made.
"""

from __future__ import annotations

from typing import Any

from google.auth.exceptions import GoogleAuthError

from ml_diagnostics import compat
from ml_diagnostics.google_api import rest_inputs
from ml_diagnostics.providers import google_rest
from ml_diagnostics.providers.google_rest import GoogleApiError, GoogleRestClient, RetryPolicy
from program.google_api import GoogleApiSettings
from program.kinds.gke.model import GkeClusterTarget
from program.kinds.model_development.model import ModelDevelopmentClusterTarget
from program.verify.result import TargetResult, Unreachable

CONTAINER_ENDPOINT = "https://container.googleapis.com"
CREDENTIAL_HINT = (
    "set up Application Default Credentials: `gcloud auth application-default login`; or "
    "GOOGLE_APPLICATION_CREDENTIALS (a key file or a workload identity federation config, e.g. GitHub OIDC); or "
    "the metadata server of a GCE/GKE workload; with googleApi.impersonateServiceAccount your identity needs "
    "roles/iam.serviceAccountTokenCreator on it"
)
AIPLATFORM_ENDPOINT = "https://{region}-aiplatform.googleapis.com"
MDC_API_VERSION = "v1beta1"
# Model Development Cluster states while an operation (create, update, repair, delete) is in flight.
MDC_BUSY_STATES = ("PROVISIONING", "UPDATING", "REPAIRING", "STOPPING")


def rest_client(
    endpoint: str | None, default: str, version: str, settings: GoogleApiSettings, api: str
) -> GoogleRestClient:
    """The client the dynamic providers build (`google_rest.client`), from the same settings: emulator mode
    (no credentials) only where this API has a loopback endpoint, else Application Default Credentials,
    impersonating when set. A read-only check retries briefly, then reports."""
    base = (endpoint or default).rstrip("/")
    if not base.endswith(f"/{version}"):
        base = f"{base}/{version}"
    inputs = rest_inputs(settings.to_args(), api)
    if not endpoint:
        inputs.pop("emulator", None)
    try:
        return google_rest.client(base, inputs, retry=RetryPolicy(deadline=5.0), timeout=(5.0, 30.0))
    except ValueError as e:
        raise Unreachable(str(e)) from None


def _get(client: GoogleRestClient, path: str, what: str) -> dict[str, Any] | None:
    """The resource, or None when the API says it does not exist. Raises Unreachable otherwise."""
    try:
        return client.request("GET", path, resource=what)
    except GoogleApiError as e:
        if e.http_status == 404:
            return None
        raise Unreachable(str(e)) from None
    except GoogleAuthError as e:
        raise Unreachable(
            f"no Google credentials: {str(e).splitlines()[0][:300]}. To fix: {CREDENTIAL_HINT}"
        ) from None


def _get_once(client: GoogleRestClient, path: str, what: str) -> dict[str, Any] | None:
    """`_get` with a client used for this one request: closed whatever the outcome."""
    try:
        return _get(client, path, what)
    finally:
        client.close()


def check_gke(
    target: GkeClusterTarget, google_api: GoogleApiSettings, result: TargetResult
) -> dict[str, Any] | None:
    """Cluster status and the managed flag; returns the cluster (endpoint and CA for the in-cluster checks)."""
    google_api = google_api.for_target(target.google_api)
    path = f"projects/{target.project}/locations/{target.location}/clusters/{target.gke_name}"
    client = rest_client(
        google_api.endpoints.get("container"), CONTAINER_ENDPOINT, "v1", google_api, "container"
    )
    cluster = _get_once(client, path, f"GKE cluster {path}")
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
            else f"`gcloud container clusters describe {target.gke_name} --location {target.location}` and "
            "`gcloud container operations list` show what failed; repair or recreate the failing node pool",
        )

    version = cluster.get("currentMasterVersion", "")
    enabled = bool((cluster.get("managedMachineLearningDiagnosticsConfig") or {}).get("enabled", False))
    mode = target.resolved_mode
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
    cluster = _get_once(client, path, f"Model Development Cluster {path}")
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
