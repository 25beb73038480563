"""The offline plan's answers for the azureMl kind.

INVOKES: invoke token -> fn(arguments, camelCase as sent) -> result. OUTPUTS: resource type -> fn(name,
inputs) -> the outputs a resource gets beyond its inputs.
"""

from __future__ import annotations

import base64
from typing import Any

INVOKES: dict[str, Any] = {}
OUTPUTS: dict[str, Any] = {}


_FAKE_RELAY_KEY = "bW9jay1yZWxheS1rZXktbm90LWEtcmVhbC1zZWNyZXQ="  # base64 of an obviously fake key


def _relay_hybrid_connection_keys(args: dict[str, Any]) -> dict[str, Any]:
    ns, hc, rule = args["namespaceName"], args["hybridConnectionName"], args["authorizationRuleName"]
    endpoint = f"Endpoint=sb://{ns}.servicebus.windows.net/"

    def conn(key: str) -> str:
        return f"{endpoint};SharedAccessKeyName={rule};SharedAccessKey={key};EntityPath={hc}"

    secondary = _FAKE_RELAY_KEY[::-1]
    return {
        "keyName": rule,
        "primaryKey": _FAKE_RELAY_KEY,
        "secondaryKey": secondary,
        "primaryConnectionString": conn(_FAKE_RELAY_KEY),
        "secondaryConnectionString": conn(secondary),
    }


def _relay_hybrid_connection(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    rg, ns, hc = inputs["resourceGroupName"], inputs["namespaceName"], inputs["hybridConnectionName"]
    return {
        "id": f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{rg}"
        f"/providers/Microsoft.Relay/namespaces/{ns}/hybridConnections/{hc}",
        "name": hc,
        "type": "Microsoft.Relay/namespaces/hybridConnections",
    }


INVOKES["azure-native:relay:listHybridConnectionKeys"] = _relay_hybrid_connection_keys
OUTPUTS["azure-native:relay:HybridConnection"] = _relay_hybrid_connection


def _extension(_name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    cluster = (
        f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{inputs['resourceGroupName']}"
        f"/providers/{inputs['clusterRp']}/{inputs['clusterResourceName']}/{inputs['clusterName']}"
    )
    return {
        "id": f"{cluster}/providers/Microsoft.KubernetesConfiguration/extensions/{inputs['extensionName']}",
        "provisioningState": "Succeeded",
    }


OUTPUTS["azure-native:kubernetesconfiguration:Extension"] = _extension


def _aks_user_credentials(args: dict[str, Any]) -> dict[str, Any]:
    # An obviously fake kubeconfig for the offline plan (the verify role's provider only needs some text).
    text = (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: offline\n  cluster: {server: https://offline.invalid}\n"
        "users:\n- name: offline\n  user: {token: offline-plan-not-a-token}\ncontexts:\n- name: offline\n"
        f"  context: {{cluster: offline, user: offline}}\ncurrent-context: offline\n# {args['resourceName']}\n"
    )
    return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(text.encode()).decode()}]}


INVOKES["azure-native:containerservice:listManagedClusterUserCredentials"] = _aks_user_credentials
