"""A stand-in gcp provider plugin (`pulumi-resource-gcp`) for the e2e tier: the one call an adopted GKE target
makes, against the loopback GKE fake.

The gcp provider is a Go module the module proxy does not serve (github.com/pulumi/pulumi-gcp/provider/v8,
v9 and v10 answer 403), so the adopted-cluster scenario cannot use the real one. An adopted `gkeClusters`
target needs from it only an explicit provider (CheckConfig, DiffConfig, Configure) and the
`gcp:container/getCluster:getCluster` invoke for the endpoint and CA; this plugin implements those, reading
the cluster from the GKE fake (`GET /v1/projects/P/locations/L/clusters/C`) and answering in the shape of
the real invoke's result. Every other call fails with UNIMPLEMENTED, so a scenario cannot silently rely on
more than this.

Started by the CLI as `pulumi-resource-gcp [flags] ENGINE_ADDRESS`; prints its port, then serves.
Environment: MLDIAG_E2E_GKE_API, the base URL of the GKE fake (http://127.0.0.1:PORT).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from importlib import resources
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc

if not __package__:  # started as a script by the CLI (through a wrapper on PATH): make `dev` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from dev.e2e.plugin_server import serve  # noqa: E402

GET_CLUSTER = "gcp:container/getCluster:getCluster"


def plugin_version() -> str:
    """The version the pinned pulumi_gcp SDK asks the engine for."""
    meta = json.loads(resources.files("pulumi_gcp").joinpath("pulumi-plugin.json").read_text())
    return meta["version"]


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


def get_cluster(api: str, args: dict[str, Any]) -> dict[str, Any]:
    """The getCluster result for a cluster of the GKE fake (the fields an adopted target reads, and more)."""
    project, location, name = args["project"], args["location"], args["name"]
    path = f"projects/{project}/locations/{location}/clusters/{name}"
    with urllib.request.urlopen(f"{api.rstrip('/')}/v1/{path}", timeout=30) as resp:  # noqa: S310 (loopback)
        cluster = json.load(resp)
    auth = cluster.get("masterAuth") or {}
    return {
        "id": path,
        "name": cluster["name"],
        "project": project,
        "location": location,
        "endpoint": cluster.get("endpoint", ""),
        "masterAuths": [
            {
                "clusterCaCertificate": auth.get("clusterCaCertificate", ""),
                "clientCertificate": "",
                "clientKey": "",
                "clientCertificateConfigs": [{"issueClientCertificate": False}],
            }
        ],
        "masterVersion": cluster.get("currentMasterVersion", ""),
        "managedMachineLearningDiagnosticsConfigs": [
            {"enabled": bool((cluster.get("managedMachineLearningDiagnosticsConfig") or {}).get("enabled"))}
        ],
        "enableAutopilot": bool((cluster.get("autopilot") or {}).get("enabled")),
        "selfLink": cluster.get("selfLink", ""),
    }


class GcpStandIn(provider_pb2_grpc.ResourceProviderServicer):
    def __init__(self, api: str) -> None:
        self.api = api

    def GetPluginInfo(self, request, context):  # noqa: N802
        return plugin_pb2.PluginInfo(version=plugin_version())

    def CheckConfig(self, request, context):  # noqa: N802
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request, context):  # noqa: N802
        old, new = json_format.MessageToDict(request.olds), json_format.MessageToDict(request.news)
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        kind = provider_pb2.DiffResponse.DIFF_SOME if changed else provider_pb2.DiffResponse.DIFF_NONE
        return provider_pb2.DiffResponse(changes=kind, diffs=changed)

    def Configure(self, request, context):  # noqa: N802
        return provider_pb2.ConfigureResponse(acceptSecrets=True, supportsPreview=True, acceptResources=True)

    def Invoke(self, request, context):  # noqa: N802
        if request.tok != GET_CLUSTER:
            context.abort(
                grpc.StatusCode.UNIMPLEMENTED, f"the e2e gcp stand-in does not implement {request.tok}"
            )
        try:
            result = get_cluster(self.api, json_format.MessageToDict(request.args))
        except urllib.error.HTTPError as e:
            return provider_pb2.InvokeResponse(
                failures=[provider_pb2.CheckFailure(property="name", reason=f"getCluster: HTTP {e.code}")]
            )
        return provider_pb2.InvokeResponse(**{"return": _struct(result)})

    def Cancel(self, request, context):  # noqa: N802
        return empty_pb2.Empty()


def main() -> None:
    api = os.environ["MLDIAG_E2E_GKE_API"]
    serve(lambda server: provider_pb2_grpc.add_ResourceProviderServicer_to_server(GcpStandIn(api), server), 4)


if __name__ == "__main__":
    main()
