"""The e2e tier's gcp stand-in plugin (dev/e2e/gcp_provider.py) over gRPC on loopback: getCluster from the
GKE fake in the shape of the real invoke's result, every other call refused."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from dev.e2e.gcp_provider import GET_CLUSTER, GcpStandIn, plugin_version
from dev.e2e.harness import REPO
from dev.fakes.gke_api import FakeGkeApi

REQUIREMENTS = REPO / "requirements.txt"


@pytest.fixture()
def stub() -> Iterator[tuple[provider_pb2_grpc.ResourceProviderStub, FakeGkeApi]]:
    with FakeGkeApi() as api:
        cluster = api.add_cluster("p", "us-central1-a", "c", version="1.35.1-gke.1396000", managed=True)
        cluster["masterAuth"] = {"clusterCaCertificate": "Q0E="}
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        provider_pb2_grpc.add_ResourceProviderServicer_to_server(GcpStandIn(api.url), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        try:
            yield provider_pb2_grpc.ResourceProviderStub(channel), api
        finally:
            channel.close()
            server.stop(grace=None)


def args(**kw: str) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(kw)
    return s


def test_get_cluster_answers_from_the_fake(stub) -> None:
    client, api = stub
    resp = client.Invoke(
        provider_pb2.InvokeRequest(
            tok=GET_CLUSTER, args=args(project="p", location="us-central1-a", name="c")
        )
    )
    out = json_format.MessageToDict(resp)["return"]
    assert out["endpoint"] == "203.0.113.10" and out["masterVersion"] == "1.35.1-gke.1396000"
    assert out["masterAuths"] == [
        {
            "clusterCaCertificate": "Q0E=",
            "clientCertificate": "",
            "clientKey": "",
            "clientCertificateConfigs": [{"issueClientCertificate": False}],
        }
    ]
    assert out["managedMachineLearningDiagnosticsConfigs"] == [{"enabled": True}]
    assert api.calls() == [("GET", "/v1/projects/p/locations/us-central1-a/clusters/c")]
    missing = client.Invoke(
        provider_pb2.InvokeRequest(
            tok=GET_CLUSTER, args=args(project="p", location="us-central1-a", name="x")
        )
    )
    assert [(f.property, f.reason) for f in missing.failures] == [("name", "getCluster: HTTP 404")]


def test_everything_else_is_refused(stub) -> None:
    client, _ = stub
    assert (
        client.GetPluginInfo(provider_pb2.google_dot_protobuf_dot_empty__pb2.Empty()).version
        == plugin_version()
    )
    with pytest.raises(grpc.RpcError) as e:
        client.Invoke(provider_pb2.InvokeRequest(tok="gcp:compute/getNetwork:getNetwork", args=args()))
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as e:
        client.Create(provider_pb2.CreateRequest(urn="urn:pulumi:s::p::gcp:container/cluster:Cluster::c"))
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
