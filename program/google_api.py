"""How the Google REST clients of the dynamic resources (GKE adopt, Model Development Cluster) call Google.

Stack level `googleApi` (every Google target) and an optional per-target `googleApi` (gkeClusters[i],
modelDevelopmentClusters[i]) whose keys override the stack's:

    googleApi:
      quotaProject: billing-project          # x-goog-user-project header
      impersonateServiceAccount: deployer@p.iam.gserviceaccount.com
      retry: {deadlineMinutes: 5, initialDelaySeconds: 1, maxDelaySeconds: 32, multiplier: 2}
      endpoints: {aiplatform: http://127.0.0.1:8080, container: http://127.0.0.1:8081}   # stack level only
      emulator: true                         # stack level only: loopback endpoints, no credentials at all

The same `impersonateServiceAccount`/`quotaProject` also drive the gcp provider and the kubeconfig exec
credential (components wire them); the REST clients take them as plain resource inputs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from ml_diagnostics.compat import quote
from ml_diagnostics.specs.google_endpoints import LOOPBACK_HOSTS, is_loopback_url
from program.config_base import Model

if TYPE_CHECKING:
    from ml_diagnostics.google_api import GoogleApiArgs


class GoogleRetrySettings(Model):
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
    def _order(self) -> GoogleRetrySettings:
        if self.max_delay_seconds < self.initial_delay_seconds:
            raise ValueError(
                f"maxDelaySeconds must be >= initialDelaySeconds ({self.initial_delay_seconds:g})"
            )
        return self

    def inputs(self) -> dict[str, float]:
        """As dynamic resource inputs (snake_case)."""
        return self.model_dump()


class TargetGoogleApi(Model):
    """Per-target REST client settings (override the stack's `googleApi`)."""

    quota_project: str | None = None
    """Project billed for API quota (x-goog-user-project header); also the gcp provider's billing project."""
    impersonate_service_account: str | None = None
    """Service account the REST clients, the gcp provider and kubectl impersonate (your identity needs
    roles/iam.serviceAccountTokenCreator on it).
    """
    retry: GoogleRetrySettings | None = None
    """Retry policy of the REST clients (unset: the defaults of each key)."""

    @field_validator("impersonate_service_account")
    @classmethod
    def _service_account(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[^@\s/]+@[a-z0-9.-]+\.gserviceaccount\.com", v, re.ASCII):
            raise ValueError(
                f"{quote(v)} must be a service account email (NAME@PROJECT.iam.gserviceaccount.com)"
            )
        return v


class GoogleApiSettings(TargetGoogleApi):
    """Stack-level REST client settings of the dynamic providers (GKE adopt, Model Development Cluster)."""

    endpoints: dict[Literal["aiplatform", "container", "iamcredentials"], str] = {}
    """Custom API endpoints, e.g. a private endpoint or a local fake: {"aiplatform": "https://...",
    "container": ..., "iamcredentials": ... (where impersonation tokens come from)}
    """
    emulator: bool = False
    """Emulator/loopback mode: every endpoint on 127.0.0.1, localhost or ::1, and no credentials at all (no
    Application Default Credentials, no impersonation). For local fakes and end-to-end tests.
    """

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
    def _emulator(self) -> GoogleApiSettings:
        if not self.emulator:
            return self
        if not self.endpoints:
            raise ValueError("emulator: true needs endpoints (aiplatform and/or container) on the loopback")
        bad = [f"{k} ({u})" for k, u in self.endpoints.items() if not is_loopback_url(u)]
        if bad:
            raise ValueError(
                f"emulator: true allows only loopback endpoints (hosts {', '.join(LOOPBACK_HOSTS)}); "
                f"not loopback: {', '.join(bad)}"
            )
        if self.impersonate_service_account:
            raise ValueError("emulator: true uses no credentials; remove impersonateServiceAccount")
        return self

    def for_target(self, target: TargetGoogleApi | None) -> GoogleApiSettings:
        """The settings a target uses: the stack's, overridden by the keys the target sets."""
        if target is None:
            return self
        over = {k: getattr(target, k) for k in target.model_fields_set}
        if self.emulator and over.get("impersonate_service_account"):
            raise ValueError("emulator: true uses no credentials; remove impersonateServiceAccount")
        return self.model_copy(update=over)

    def to_args(self) -> GoogleApiArgs:
        """As the library's settings (`ml_diagnostics.google_api`): only the keys that are set."""
        out: GoogleApiArgs = {}
        if self.quota_project:
            out["quota_project"] = self.quota_project
        if self.impersonate_service_account:
            out["impersonate_service_account"] = self.impersonate_service_account
        if self.endpoints:
            out["endpoints"] = dict(self.endpoints)
        if self.emulator:
            out["emulator"] = True
        if self.retry is not None:
            out["retry"] = self.retry.inputs()  # type: ignore[typeddict-item]
        return out
