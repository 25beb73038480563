"""Realistic answers for the invokes the program makes, used by the offline plan's mock runtime.

Add one function per invoke token to ANSWERS. Each gets the invoke's arguments (camelCase, as sent)
and returns the result the provider would return.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Answer = Callable[[dict[str, Any]], dict[str, Any]]

ANSWERS: dict[str, Answer] = {}


def answer(token: str, args: dict[str, Any]) -> dict[str, Any]:
    fn = ANSWERS.get(token)
    if fn is None:
        raise KeyError(
            f"the offline plan has no mock answer for invoke {token!r}; add one to tools/mock_answers.py"
        )
    return fn(args)


ResourceOutputs = Callable[[str, dict[str, Any]], dict[str, Any]]

# Output properties a resource type gets beyond its inputs (e.g. a cluster's endpoint), keyed by type token.
RESOURCE_OUTPUTS: dict[str, ResourceOutputs] = {}


# --- azureMl (Azure ML extension on Arc): the relay's keys and the hybrid connection's ARM id ---
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


ANSWERS["azure-native:relay:listHybridConnectionKeys"] = _relay_hybrid_connection_keys
RESOURCE_OUTPUTS["azure-native:relay:HybridConnection"] = _relay_hybrid_connection
