"""Rules of how the Google parts call Google: the gcp provider, the kubeconfig's auth plugin and the REST
clients of the dynamic resources (GKE adopt, Model Development Cluster) take one set of settings."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from ml_diagnostics.compat import quote
from ml_diagnostics.rules.base import Spec, key
from ml_diagnostics.specs.google_endpoints import LOOPBACK_HOSTS, is_loopback_url

EMULATOR_NO_IMPERSONATION = (
    f"{key('emulator')}: true uses no credentials; remove {key('impersonate_service_account')}"
)


class RetrySpec(Spec):
    """Google's retry guidance: truncated exponential backoff with full jitter, under a total deadline.

    Retried: HTTP 408/429/500/502/503/504 and lost connections (Retry-After honoured), idempotent calls only.
    """

    deadline_minutes: float = Field(default=5.0, gt=0, le=60)
    """Total time spent retrying one call (and waiting out brief operation 404s) before giving up."""
    initial_delay_seconds: float = Field(default=1.0, gt=0, le=60)
    """First delay; each retry multiplies it by `multiplier`, up to `maxDelaySeconds`."""
    max_delay_seconds: float = Field(default=32.0, ge=1, le=300)
    """Longest single delay between two attempts."""
    multiplier: float = Field(default=2.0, ge=1, le=10)
    """Growth factor of the delay."""

    @model_validator(mode="after")
    def _order(self) -> RetrySpec:
        if self.max_delay_seconds < self.initial_delay_seconds:
            raise ValueError(
                f"{key('max_delay_seconds')} must be >= {key('initial_delay_seconds')} "
                f"({self.initial_delay_seconds:g})"
            )
        return self


_SERVICE_ACCOUNT = re.compile(r"[^@\s/]+@[a-z0-9.-]+\.gserviceaccount\.com", re.ASCII)


class TargetGoogleApiSpec(Spec):
    """The settings one target may set for itself (over the stack's): quota project, identity, retries."""

    quota_project: str | None = None
    """Project billed for API quota (x-goog-user-project header); also the gcp provider's billing project."""
    impersonate_service_account: str | None = None
    """Service account the REST clients, the gcp provider and kubectl impersonate (your identity needs
    roles/iam.serviceAccountTokenCreator on it)."""
    retry: RetrySpec | None = None
    """Retry policy of the REST clients (unset: the defaults of each key)."""

    @field_validator("impersonate_service_account")
    @classmethod
    def _service_account(cls, v: str | None) -> str | None:
        if v is not None and not _SERVICE_ACCOUNT.fullmatch(v):
            raise ValueError(
                f"{quote(v)} must be a service account email (NAME@PROJECT.iam.gserviceaccount.com)"
            )
        return v


class GoogleApiSpec(TargetGoogleApiSpec):
    """How the Google parts authenticate and where they send requests. Every key is optional."""

    endpoints: dict[Literal["aiplatform", "container", "iamcredentials"], str] = {}
    """Custom API endpoints, e.g. a private endpoint or a local fake: {"aiplatform": "https://...",
    "container": ..., "iamcredentials": ... (where impersonation tokens come from)}"""
    emulator: bool = False
    """Emulator/loopback mode: every endpoint on 127.0.0.1, localhost or ::1, and no credentials at all (no
    Application Default Credentials, no impersonation). For local fakes and end-to-end tests."""

    @field_validator("endpoints")
    @classmethod
    def _endpoint_shape(cls, v: dict[str, str]) -> dict[str, str]:
        for kind, url in v.items():
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"{kind}: {quote(url)} must be an http(s):// URL")
            if parts.scheme == "http" and not is_loopback_url(url):
                # the REST clients send tokens with every call: plain http only where nothing leaves the host
                raise ValueError(
                    f"{kind}: {quote(url)} sends credentials over plain http; use https://, or http:// only on "
                    f"the loopback ({', '.join(LOOPBACK_HOSTS)})"
                )
        return v

    @model_validator(mode="after")
    def _emulator(self) -> GoogleApiSpec:
        if not self.emulator:
            return self
        if not self.endpoints:
            raise ValueError(
                f"{key('emulator')}: true needs {key('endpoints')} (aiplatform and/or container) on the loopback"
            )
        bad = [f"{k} ({u})" for k, u in self.endpoints.items() if not is_loopback_url(u)]
        if bad:
            raise ValueError(
                f"{key('emulator')}: true allows only loopback endpoints (hosts {', '.join(LOOPBACK_HOSTS)}); "
                f"not loopback: {', '.join(bad)}"
            )
        if self.impersonate_service_account:
            raise ValueError(EMULATOR_NO_IMPERSONATION)
        return self
