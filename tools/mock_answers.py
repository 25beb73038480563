"""Realistic answers for the invokes the program makes, used by the offline plan's mock runtime.

Add one function per invoke token to ANSWERS. Each gets the invoke's arguments (camelCase, as sent)
and returns the result the provider would return.
"""

from __future__ import annotations

import base64
import hashlib
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


# --- gkeClusters: GKE cluster endpoint, CA and version (created: Cluster outputs; adopted: getCluster) ---
# An obviously fake cluster CA (base64 of a PEM block, as GKE returns masterAuth.clusterCaCertificate).
_FAKE_GKE_CA = base64.b64encode(
    b"-----BEGIN CERTIFICATE-----\n"
    b"TU9DSy1HS0UtQ0x1c3Rlci1DQS1ub3QtYS1yZWFsLWNlcnRpZmljYXRlLWZvci1vZmZsaW5lLXBsYW4=\n"
    b"-----END CERTIFICATE-----\n"
).decode()
# What an adopted cluster reports; stacks declare this as currentVersion.
MOCK_GKE_VERSION = "1.35.1-gke.1396000"
# Adopted clusters of the example stacks that run another version.
MOCK_GKE_VERSIONS = {"legacy-train": "1.34.2-gke.1700000"}


def _gke_endpoint(project: str, location: str, name: str) -> str:
    digest = hashlib.sha256(f"{project}/{location}/{name}".encode()).digest()
    return f"34.118.{digest[0]}.{digest[1]}"


def _gke_master_auth() -> dict[str, Any]:
    return {
        "clusterCaCertificate": _FAKE_GKE_CA,
        "clientCertificate": "",
        "clientKey": "",
        "clientCertificateConfig": {"issueClientCertificate": False},
    }


def _gke_get_cluster(args: dict[str, Any]) -> dict[str, Any]:
    project, location, name = args.get("project", "mock-project"), args["location"], args["name"]
    auth = _gke_master_auth()
    auth["clientCertificateConfigs"] = [auth.pop("clientCertificateConfig")]
    return {
        "id": f"projects/{project}/locations/{location}/clusters/{name}",
        "name": name,
        "project": project,
        "location": location,
        "endpoint": _gke_endpoint(project, location, name),
        "masterAuths": [auth],
        "masterVersion": MOCK_GKE_VERSIONS.get(name, MOCK_GKE_VERSION),
        "nodeVersion": MOCK_GKE_VERSIONS.get(name, MOCK_GKE_VERSION),
        "releaseChannels": [{"channel": "REGULAR"}],
        "managedMachineLearningDiagnosticsConfigs": [{"enabled": False}],
        "workloadIdentityConfigs": [{"workloadPool": f"{project}.svc.id.goog"}],
        "selfLink": f"https://container.googleapis.com/v1/projects/{project}/locations/{location}/clusters/{name}",
    }


def _gke_cluster(_name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    project, location, name = inputs.get("project", "mock-project"), inputs["location"], inputs["name"]
    version = inputs.get("minMasterVersion") or MOCK_GKE_VERSION
    return {
        "id": f"projects/{project}/locations/{location}/clusters/{name}",
        "endpoint": _gke_endpoint(project, location, name),
        "masterAuth": _gke_master_auth(),
        "masterVersion": version,
        "selfLink": f"https://container.googleapis.com/v1/projects/{project}/locations/{location}/clusters/{name}",
    }


ANSWERS["gcp:container/getCluster:getCluster"] = _gke_get_cluster
RESOURCE_OUTPUTS["gcp:container/cluster:Cluster"] = _gke_cluster


# --- dynamic resources: what their providers return after create (the plan never runs the providers) ---


def _model_development_cluster(_name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    project, region = inputs["project"], inputs["region"]
    return {
        "name": f"projects/{project}/locations/{region}/modelDevelopmentClusters/{inputs['model_development_cluster_id']}",
        "state": "ACTIVE",
        "create_time": "2026-01-01T00:00:00Z",
        "update_time": "2026-01-01T00:00:00Z",
    }


def _managed_ml_diagnostics(_name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    # As getCluster above reports it: the flag was off before the program touched the cluster.
    return {
        "previousEnabled": False,
        "liveVersion": MOCK_GKE_VERSIONS.get(inputs["cluster"], MOCK_GKE_VERSION),
    }


RESOURCE_OUTPUTS["pulumi-python:dynamic/vertexai:ModelDevelopmentCluster"] = _model_development_cluster
RESOURCE_OUTPUTS["pulumi-python:dynamic/gke:ManagedMlDiagnostics"] = _managed_ml_diagnostics


def _extension(_name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    cluster = (
        f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{inputs['resourceGroupName']}"
        f"/providers/{inputs['clusterRp']}/{inputs['clusterResourceName']}/{inputs['clusterName']}"
    )
    return {
        "id": f"{cluster}/providers/Microsoft.KubernetesConfiguration/extensions/{inputs['extensionName']}",
        "provisioningState": "Succeeded",
    }


RESOURCE_OUTPUTS["azure-native:kubernetesconfiguration:Extension"] = _extension
