"""The offline plan's answers for the gkeClusters kind (created: Cluster outputs; adopted: getCluster).

INVOKES: invoke token -> fn(arguments, camelCase as sent) -> result. OUTPUTS: resource type -> fn(name,
inputs) -> the outputs a resource gets beyond its inputs.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

INVOKES: dict[str, Any] = {}
OUTPUTS: dict[str, Any] = {}


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
# Adopted clusters the lookup reports as Autopilot (none of the example stacks; tests name one).
MOCK_AUTOPILOT = {"autopilot-train"}


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
        "enableAutopilot": name in MOCK_AUTOPILOT,
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


INVOKES["gcp:container/getCluster:getCluster"] = _gke_get_cluster
OUTPUTS["gcp:container/cluster:Cluster"] = _gke_cluster


def _managed_ml_diagnostics(_name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    # As getCluster above reports it: the flag was off before the program touched the cluster.
    return {
        "previousEnabled": False,
        "liveVersion": MOCK_GKE_VERSIONS.get(inputs["cluster"], MOCK_GKE_VERSION),
    }


OUTPUTS["pulumi-python:dynamic/gke:ManagedMlDiagnostics"] = _managed_ml_diagnostics
