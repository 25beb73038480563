"""Azure ML extension checks over ARM (GET only): the extension's provisioning state and, on Arc, the
Azure Relay objects the extension talks through.

Credentials: `azure.identity.DefaultAzureCredential` (environment, workload identity, managed identity,
`az login`), the same identities the azure-native provider accepts; the token is never printed. An ARM
endpoint on the loopback interface (a local fake) is called without a token.
"""

from __future__ import annotations

import base64
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
AKS_API = "2024-05-01"
_GUIDE = "how-to-troubleshoot-kubernetes-extension.md"
# The deployment errors the troubleshooting guide names (matched in the extension's status, lowercase) and its fix.
DEPLOYMENT_ERRORS = (
    (
        "can't reuse a name that is still in use",
        f"the extension name is in use: by an earlier Azure ML extension, wait about an hour and run `pulumi up`; "
        f"by another Helm release (`helm list -Aa`), set another extensionName ({_GUIDE})",
    ),
    (
        "still in progress",
        f"an earlier Helm operation of the extension is still in progress: wait about an hour, then `pulumi up` "
        f"({_GUIDE})",
    ),
    (
        "being terminated",
        f"an uninstall has not finished: wait until `az k8s-extension show` no longer finds the extension, then "
        f"`pulumi up` ({_GUIDE})",
    ),
    (
        "chart path not found",
        f"the pinned version does not exist: set version to one `az k8s-extension extension-types "
        f"list-versions-by-cluster` lists, or remove version (and autoUpgradeMinorVersion) to follow the release "
        f"train ({_GUIDE})",
    ),
    (
        "invalid ownership metadata",
        f"a resource the extension installs belongs to another release (often Volcano's CRDs): set installVolcano: "
        f"false or installPromOp: false for the component the cluster already runs, or hand the resource to the "
        f"extension with the labels and annotations the guide gives ({_GUIDE})",
    ),
)
AKS_USER_HINT = (
    "verify's identity needs the Azure Kubernetes Service Cluster User Role on the cluster "
    "(Microsoft.ContainerService/managedClusters/listClusterUserCredential/action), or give verifyAccess.kubeconfig"
)


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


def aks_user_kubeconfig(target: AzureMlTarget, arm: Arm) -> str:
    """The cluster user kubeconfig ARM lists for verify's identity (AKS; kept in memory only)."""
    c = target.cluster
    body = arm.post(f"{c.resource_id}/listClusterUserCredential", AKS_API) or {}
    configs = body.get("kubeconfigs") or []
    if not configs or not configs[0].get("value"):
        raise Unreachable(f"ARM listed no cluster user credentials for {c.name}. To fix: {AKS_USER_HINT}")
    try:
        return base64.b64decode(configs[0]["value"]).decode()
    except (ValueError, UnicodeDecodeError):
        raise Unreachable(f"ARM's cluster user kubeconfig for {c.name} is not base64 text") from None


def check_extension(target: AzureMlTarget, arm: Arm, result: TargetResult) -> str:
    """The extension's ARM checks; returns its provisioningState ("NotFound" when it does not exist)."""
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
        return "NotFound"
    props = ext.get("properties") or {}
    state = props.get("provisioningState", "Unknown")
    if state == "Succeeded":
        version = props.get("currentVersion") or props.get("version") or ""
        if target.version and version and version != target.version:
            result.add(
                "azureml.extension",
                False,
                f"{target.extension} Succeeded but runs {version}, not the pinned {target.version}",
                "run `pulumi up` (a change made outside the stack drifted the version), or pin the one it runs",
            )
        else:
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
        messages = [
            f"{s.get('code') or s.get('level') or 'status'}: {s.get('message', '')}"
            if s.get("level") != "Error"
            else s.get("message", "")
            for s in props.get("statuses") or []
            if s.get("message")
        ]
        why = "; ".join(m for m in [info.get("message", ""), *messages] if m)
        known = next((fix for pattern, fix in DEPLOYMENT_ERRORS if pattern in why.lower()), None)
        result.add(
            "azureml.extension",
            False,
            f"{target.extension} is {state}{f': {why}' if why else ''}",
            known
            or f"`{show}` and `kubectl get pods -n azureml` show the failing component; fix the cause (nodes, "
            "settings, outbound network) and run `pulumi up` again",
        )
    if c.kind == "arc":
        _relay(target, arm, result, props)
    return state


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
