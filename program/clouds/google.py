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

from typing import TYPE_CHECKING

from ml_diagnostics.rules.base import spell
from ml_diagnostics.rules.google_api import (
    EMULATOR_NO_IMPERSONATION,
    GoogleApiSpec,
    RetrySpec,
    TargetGoogleApiSpec,
)
from ml_diagnostics.specs.google_endpoints import is_loopback_url
from program.clouds import Cloud, Settings

if TYPE_CHECKING:
    from ml_diagnostics.google_api import GoogleApiArgs

__all__ = ["GoogleApiSettings", "GoogleRetrySettings", "TargetGoogleApi", "is_loopback_url"]

# The keys and rules are the library's (ml_diagnostics.rules.google_api); a target's keys override the stack's.
GoogleRetrySettings = RetrySpec
TargetGoogleApi = TargetGoogleApiSpec


class GoogleApiSettings(GoogleApiSpec):
    """Stack-level REST client settings of the dynamic providers (GKE adopt, Model Development Cluster)."""

    def for_target(self, target: TargetGoogleApi | None) -> GoogleApiSettings:
        """The settings a target uses: the stack's, overridden by the keys the target sets."""
        if target is None:
            return self
        over = {k: getattr(target, k) for k in target.model_fields_set}
        if self.emulator and over.get("impersonate_service_account"):
            raise ValueError(spell(EMULATOR_NO_IMPERSONATION, "stack"))
        return self.model_copy(update=over)

    def to_args(self) -> GoogleApiArgs:
        """As the library's settings (`ml_diagnostics.google_api`): only the keys that are set."""
        out: GoogleApiArgs = {}
        if self.quota_project:
            out["quota_project"] = self.quota_project
        if self.impersonate_service_account:
            out["impersonate_service_account"] = self.impersonate_service_account
        if self.endpoints:
            out["endpoints"] = {name: url for name, url in self.endpoints.items()}
        if self.emulator:
            out["emulator"] = True
        if self.retry is not None:
            out["retry"] = self.retry.model_dump()  # type: ignore[typeddict-item]
        return out


GOOGLE = Cloud(
    "google",
    settings=Settings(
        key="googleApi",
        field="google_api",
        model=GoogleApiSettings,
        description="How the Google parts call Google: the gcp provider, the kubeconfig's auth plugin and the "
        "REST clients of the GKE adopt and Model Development Cluster resources.",
    ),
)
