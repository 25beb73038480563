"""Verify's read-only client of Azure Resource Manager: authenticated GETs (and the one POST action it reads
with), credentials from `azure.identity.DefaultAzureCredential` (environment, workload identity, managed
identity, `az login`), the identities the azure-native provider accepts; the token is never printed. An ARM
endpoint on the loopback interface (a local fake) is called without a token."""

from __future__ import annotations

import logging
from typing import Any

import requests

from ml_diagnostics.specs.google_endpoints import is_loopback_url
from program.clouds import Unreachable

ARM_ENDPOINT = "https://management.azure.com"
ARM_SCOPE = "https://management.azure.com/.default"
# What to set up when ARM cannot be asked: the chain DefaultAzureCredential walks, and the role it needs.
CREDENTIAL_HINT = (
    "set up a credential DefaultAzureCredential finds: `az login`; or AZURE_TENANT_ID and AZURE_CLIENT_ID with "
    "AZURE_CLIENT_SECRET (a service principal) or AZURE_FEDERATED_TOKEN_FILE (workload identity, e.g. GitHub "
    "OIDC or AKS); or a managed identity where verify runs"
)
ROLE_HINT = "the identity needs Reader on the cluster's resource group (and its relay namespace on Arc)"


class Arm:
    """Authenticated GETs against one ARM endpoint."""

    def __init__(self, endpoint: str = ARM_ENDPOINT, session: requests.Session | None = None) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.session = session or requests.Session()
        self._anonymous = is_loopback_url(self.endpoint)
        self._credential: Any = None

    def _headers(self) -> dict[str, str]:
        if self._anonymous:
            return {}
        if self._credential is None:
            from azure.identity import DefaultAzureCredential

            # Its per-credential warnings go to stderr; the failure is reported as the target's reason.
            logging.getLogger("azure.identity").setLevel(logging.ERROR)
            self._credential = DefaultAzureCredential(exclude_interactive_browser_credential=True)
        try:
            token = self._credential.get_token(ARM_SCOPE).token
        except Exception as e:  # azure-identity raises its own types per credential kind
            raise Unreachable(
                f"no Azure credential: {type(e).__name__}: {str(e).splitlines()[0][:300]}. To fix: {CREDENTIAL_HINT}"
            ) from None
        return {"Authorization": f"Bearer {token}"}

    def get(self, path: str, api_version: str) -> dict[str, Any] | None:
        return self._call("GET", path, api_version)

    def post(self, path: str, api_version: str) -> dict[str, Any] | None:
        """An ARM action (e.g. listClusterUserCredential): POST without a body, a read for RBAC purposes."""
        return self._call("POST", path, api_version)

    def _call(self, method: str, path: str, api_version: str) -> dict[str, Any] | None:
        url = f"{self.endpoint}{path}"
        try:
            resp = self.session.request(
                method, url, params={"api-version": api_version}, headers=self._headers(), timeout=(5, 30)
            )
        except requests.RequestException as e:
            raise Unreachable(f"ARM not reachable: {type(e).__name__}") from None
        if resp.status_code == 404:
            return None
        if resp.status_code >= 400:
            try:
                err = resp.json().get("error") or {}
            except ValueError:
                err = {}
            fix = {401: f" To fix: {CREDENTIAL_HINT}", 403: f" To fix: {ROLE_HINT}"}.get(resp.status_code, "")
            raise Unreachable(
                f"ARM {method} {path}: HTTP {resp.status_code} {err.get('code', '')}: {err.get('message', resp.reason)}.{fix}"
            )
        return resp.json()


def client(settings: Any, options: dict[str, Any]) -> Arm:
    """The run's one ARM client (the azure cloud's entry names it), at verify's --arm-endpoint."""
    return Arm(options.get("arm_endpoint") or ARM_ENDPOINT)
