"""Checks of an azureMl target over ARM (GET only): the extension's provisioning state and, on Arc, the
Azure Relay objects the extension talks through (the client: program/clouds/azure_client.py)."""

from __future__ import annotations

import base64
from typing import Any

from ml_diagnostics.verify_record import AzureMlRecord
from program.clouds import Unreachable
from program.clouds.azure_client import Arm
from program.verify.result import TargetResult

EXTENSION_API = "2023-05-01"
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


def aks_user_kubeconfig(target: AzureMlRecord, arm: Arm) -> str:
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


def check_extension(target: AzureMlRecord, arm: Arm, result: TargetResult) -> str:
    """The extension's ARM checks; returns its provisioningState ("NotFound" when it does not exist)."""
    c = target.cluster
    path = (
        f"/subscriptions/{c.subscription_id}/resourceGroups/{c.resource_group}/providers/{c.cluster_rp}/"
        f"{c.cluster_type}/{c.name}/providers/Microsoft.KubernetesConfiguration/extensions/{target.extension_name}"
    )
    ext = arm.get(path, EXTENSION_API)
    show = (
        f"az k8s-extension show --name {target.extension_name} --cluster-type {c.cluster_type} "
        f"--cluster-name {c.name} --resource-group {c.resource_group}"
    )
    if ext is None:
        result.add(
            "azureml.extension",
            False,
            f"extension {target.extension_name} not found on {c.name}",
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
                f"{target.extension_name} Succeeded but runs {version}, not the pinned {target.version}",
                "run `pulumi up` (a change made outside the stack drifted the version), or pin the one it runs",
            )
        else:
            result.add(
                "azureml.extension",
                True,
                f"{target.extension_name} Succeeded{f' ({version})' if version else ''}",
            )
    elif state in ("Creating", "Updating", "Pending", "Accepted", "Deleting"):
        result.add(
            "azureml.extension",
            False,
            f"{target.extension_name} is {state}",
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
            f"{target.extension_name} is {state}{f': {why}' if why else ''}",
            known
            or f"`{show}` and `kubectl get pods -n azureml` show the failing component; fix the cause (nodes, "
            "settings, outbound network) and run `pulumi up` again",
        )
    if c.kind == "arc":
        _relay(target, arm, result, props)
    return state


def _relay(target: AzureMlRecord, arm: Arm, result: TargetResult, ext_props: dict[str, Any]) -> None:
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
