"""Azure ML extension checks over ARM (GET only): the extension's provisioning state and, on Arc, the
Azure Relay objects the extension talks through.

Credentials: `azure.identity.DefaultAzureCredential` (environment, workload identity, managed identity,
`az login`), the same identities the azure-native provider accepts; the token is never printed. An ARM
endpoint on the loopback interface (a local fake) is called without a token.
"""

from __future__ import annotations

import logging
from typing import Any

import requests

from program.google_api import is_loopback_url
from program.kinds.azure_ml.model import AzureMlTarget
from program.verify.result import TargetResult, Unreachable

ARM_ENDPOINT = "https://management.azure.com"
ARM_SCOPE = "https://management.azure.com/.default"
EXTENSION_API = "2023-05-01"
# What to set up when ARM cannot be asked: the chain DefaultAzureCredential walks, and the role it needs.
CREDENTIAL_HINT = (
    "set up a credential DefaultAzureCredential finds: `az login`; or AZURE_TENANT_ID and AZURE_CLIENT_ID with "
    "AZURE_CLIENT_SECRET (a service principal) or AZURE_FEDERATED_TOKEN_FILE (workload identity, e.g. GitHub "
    "OIDC or AKS); or a managed identity where verify runs"
)
ROLE_HINT = "the identity needs Reader on the cluster's resource group (and its relay namespace on Arc)"
RELAY_API = "2021-11-01"


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
        url = f"{self.endpoint}{path}"
        try:
            resp = self.session.get(
                url, params={"api-version": api_version}, headers=self._headers(), timeout=(5, 30)
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
                f"ARM GET {path}: HTTP {resp.status_code} {err.get('code', '')}: {err.get('message', resp.reason)}.{fix}"
            )
        return resp.json()


def check_extension(target: AzureMlTarget, arm: Arm, result: TargetResult) -> None:
    c = target.cluster
    path = (
        f"/subscriptions/{c.subscription_id}/resourceGroups/{c.resource_group}/providers/{c.cluster_rp}/"
        f"{c.cluster_type}/{c.name}/providers/Microsoft.KubernetesConfiguration/extensions/{target.extension}"
    )
    ext = arm.get(path, EXTENSION_API)
    show = (
        f"az k8s-extension show --name {target.extension} --cluster-type {c.cluster_type} "
        f"--cluster-name {c.name} --resource-group {c.resource_group}"
    )
    if ext is None:
        result.add(
            "azureml.extension",
            False,
            f"extension {target.extension} not found on {c.name}",
            "run `pulumi up`",
        )
        return
    props = ext.get("properties") or {}
    state = props.get("provisioningState", "Unknown")
    if state == "Succeeded":
        version = props.get("currentVersion") or props.get("version") or ""
        result.add(
            "azureml.extension", True, f"{target.extension} Succeeded{f' ({version})' if version else ''}"
        )
    elif state in ("Creating", "Updating", "Pending", "Accepted", "Deleting"):
        result.add(
            "azureml.extension",
            False,
            f"{target.extension} is {state}",
            f"it can take several minutes: rerun with --wait SECONDS, or watch `{show}`",
        )
    else:
        info = props.get("errorInfo") or {}
        messages = [s.get("message", "") for s in props.get("statuses") or [] if s.get("level") == "Error"]
        why = "; ".join(m for m in [info.get("message", ""), *messages] if m)
        result.add(
            "azureml.extension",
            False,
            f"{target.extension} is {state}{f': {why}' if why else ''}",
            f"`{show}` and `kubectl get pods -n azureml` show the failing component; fix the cause (nodes, "
            "settings, outbound network) and run `pulumi up` again",
        )
    if c.kind == "arc":
        _relay(target, arm, result, props)


def _relay(target: AzureMlTarget, arm: Arm, result: TargetResult, ext_props: dict[str, Any]) -> None:
    # The component's own naming rule (imported here: the module loads the azure-native SDK).
    from ml_diagnostics.azure_ml import RELAY_AUTH_RULE, RELAY_RIGHTS, relay_namespace_name

    c = target.cluster
    ns = relay_namespace_name(c.name, c.subscription_id, c.resource_group)
    base = f"/subscriptions/{c.subscription_id}/resourceGroups/{c.resource_group}/providers/Microsoft.Relay/namespaces/{ns}"
    fix = "run `pulumi up` (it creates the relay); do not edit or delete the relay by hand (the compute target breaks)"
    namespace = arm.get(base, RELAY_API)
    if namespace is None:
        result.add("azureml.relay", False, f"Azure Relay namespace {ns} not found", fix)
        return
    state = (namespace.get("properties") or {}).get("provisioningState", "Unknown")
    hybrid = arm.get(f"{base}/hybridConnections/{c.name}", RELAY_API)
    rule = arm.get(f"{base}/hybridConnections/{c.name}/authorizationRules/{RELAY_AUTH_RULE}", RELAY_API)
    problems = []
    if state != "Succeeded":
        problems.append(f"namespace {ns} is {state}")
    if hybrid is None:
        problems.append(f"hybrid connection {c.name} missing")
    elif (ext_props.get("configurationSettings") or {}).get("relayserver.hybridConnectionResourceID") not in (
        None,
        hybrid.get("id"),
    ):
        problems.append("the extension points at another hybrid connection")
    rights = set(((rule or {}).get("properties") or {}).get("rights") or [])
    if rule is None:
        problems.append(f"authorization rule {RELAY_AUTH_RULE} missing")
    elif not set(RELAY_RIGHTS) <= rights:
        problems.append(f"rule {RELAY_AUTH_RULE} has rights {sorted(rights)}, needs {RELAY_RIGHTS}")
    if problems:
        result.add("azureml.relay", False, "; ".join(problems), fix)
    else:
        result.add("azureml.relay", True, f"{ns}/{c.name} with rule {RELAY_AUTH_RULE}")
