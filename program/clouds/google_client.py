"""Verify's read-only clients of the Google REST APIs: the client the dynamic providers use, from the same
settings (Application Default Credentials with the stack's `googleApi` as the target sees it: quota project,
impersonation, endpoints; none at all in its emulator mode, loopback endpoints only). Only GET requests."""

from __future__ import annotations

from typing import Any

from google.auth.exceptions import GoogleAuthError

from ml_diagnostics.google_api import rest_inputs
from ml_diagnostics.providers import google_rest
from ml_diagnostics.providers.google_rest import GoogleApiError, GoogleRestClient, RetryPolicy
from ml_diagnostics.rules.google_api import GoogleApiSpec
from program.clouds import Unreachable

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
    endpoint: str | None, default: str, version: str, settings: GoogleApiSpec, api: str
) -> GoogleRestClient:
    """The client the dynamic providers build (`google_rest.client`), from the same settings: emulator mode
    (no credentials) only where this API has a loopback endpoint, else Application Default Credentials,
    impersonating when set. A read-only check retries briefly, then reports."""
    base = (endpoint or default).rstrip("/")
    if not base.endswith(f"/{version}"):
        base = f"{base}/{version}"
    inputs = rest_inputs(settings.model_dump(exclude_defaults=True), api)  # type: ignore[arg-type]
    if not endpoint:
        inputs.pop("emulator", None)
    try:
        return google_rest.client(base, inputs, retry=RetryPolicy(deadline=5.0), timeout=(5.0, 30.0))
    except ValueError as e:
        raise Unreachable(str(e)) from None


def get(client: GoogleRestClient, path: str, what: str) -> dict[str, Any] | None:
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


def get_once(client: GoogleRestClient, path: str, what: str) -> dict[str, Any] | None:
    """`get` with a client used for this one request: closed whatever the outcome."""
    try:
        return get(client, path, what)
    finally:
        client.close()
