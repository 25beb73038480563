"""How the Google parts call Google: one set of settings, in one spelling (snake_case keys), for the gcp
provider, the kubeconfig's exec credential and the REST clients of the dynamic resources.

- `quota_project`: billed for API quota (`x-goog-user-project`; the gcp provider's billing project).
- `impersonate_service_account`: the identity everything acts as (your own needs
  roles/iam.serviceAccountTokenCreator on it).
- `endpoints`: custom API roots (`aiplatform`, `container`, `iamcredentials`), e.g. a private endpoint or a
  local fake; `emulator`: loopback endpoints only, and no credentials at all.
- `retry`: Google's retry guidance (truncated exponential backoff with jitter, under a total deadline).
"""

import re
from typing import Any

from ml_diagnostics.args import GoogleApiArgs, RetryArgs

_ZONE = re.compile(r"[a-z]+-[a-z]+\d+-[a-z]", re.ASCII)


def rest_inputs(settings: GoogleApiArgs | None, api: str) -> dict[str, Any]:
    """The dynamic resources' client inputs for one API (snake_case; unset keys left out)."""
    settings = settings or {}
    endpoints = settings.get("endpoints") or {}
    out: dict[str, Any] = {}
    if endpoints.get(api):
        out["api_endpoint"] = endpoints[api]
    if settings.get("quota_project"):
        out["quota_project"] = settings["quota_project"]
    if settings.get("impersonate_service_account"):
        out["impersonate_service_account"] = settings["impersonate_service_account"]
        if endpoints.get("iamcredentials"):
            out["iam_endpoint"] = endpoints["iamcredentials"]
    if settings.get("emulator"):
        out["emulator"] = True
    if settings.get("retry") is not None:
        out["retry"] = dict(settings["retry"])
    return out


def exec_env(settings: GoogleApiArgs | None) -> list[dict[str, str]]:
    """Environment of the kubeconfig's `gke-gcloud-auth-plugin`: the plugin gets its token from gcloud, which
    reads its properties from CLOUDSDK_* variables (auth/impersonate_service_account, billing/quota_project)."""
    settings = settings or {}
    env = []
    if settings.get("impersonate_service_account"):
        env.append(
            {
                "name": "CLOUDSDK_AUTH_IMPERSONATE_SERVICE_ACCOUNT",
                "value": settings["impersonate_service_account"],
            }
        )
    if settings.get("quota_project"):
        env.append({"name": "CLOUDSDK_BILLING_QUOTA_PROJECT", "value": settings["quota_project"]})
    return env


def gcp_provider_args(project: str, location: str, settings: GoogleApiArgs | None) -> dict[str, Any]:
    """The gcp provider inputs binding a cluster's resources to its project (and identity, quota project)."""
    settings = settings or {}
    args: dict[str, Any] = {"project": project}
    if _ZONE.fullmatch(location):
        args["zone"] = location
        args["region"] = location.rsplit("-", 1)[0]
    else:
        args["region"] = location
    if settings.get("impersonate_service_account"):
        args["impersonate_service_account"] = settings["impersonate_service_account"]
    if settings.get("quota_project"):
        # Without user_project_override the provider ignores billing_project for most APIs.
        args["billing_project"] = settings["quota_project"]
        args["user_project_override"] = True
    return args


__all__ = ["GoogleApiArgs", "RetryArgs", "exec_env", "gcp_provider_args", "rest_inputs"]
