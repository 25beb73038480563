"""A refused argument is a `pulumi.InputPropertiesError` carrying each problem's property path, in Python and
through the component plugin's gRPC Construct (the engine's input-property errors, as other languages get
them); the message and the InvalidArgsError/ValueError a Python caller catches stay as they were."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pulumi
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.proto import errors_pb2, provider_pb2, provider_pb2_grpc, status_pb2

from ml_diagnostics import Diagon, InvalidArgsError

ROOT = Path(__file__).resolve().parents[1]
BAD_DIAGON = {"namespace": "Not_A_Label", "max_unavailable": "0"}


def test_a_refused_call_is_an_input_properties_error_with_a_path_per_problem():
    with pytest.raises(InvalidArgsError) as e:
        Diagon("d", BAD_DIAGON)  # type: ignore[typeddict-item]
    err = e.value
    assert isinstance(err, pulumi.InputPropertiesError)
    assert isinstance(err, pulumi.RunError) and isinstance(err, ValueError)
    assert str(err).startswith(
        "invalid arguments of Diagon 'd' (2 problem(s)):\n  - DiagonArgs.max_unavailable: "
    )
    assert err.message == str(err)
    assert err.errors is not None
    assert [x["property_path"] for x in err.errors] == ["max_unavailable", "namespace"]
    assert [f"DiagonArgs.{x['property_path']}: {x['reason']}" for x in err.errors] == err.problems


def test_a_problem_of_the_whole_args_has_an_empty_path():
    with pytest.raises(InvalidArgsError) as e:
        Diagon("d", ["not", "a", "dict"])  # type: ignore[arg-type]
    assert e.value.errors == [{"property_path": "", "reason": "must be a dict of its keys, not list"}]


@pytest.fixture(scope="module")
def plugin() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    # The plugin as the engine starts it (components/__main__.py); the engine address is never dialled here.
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "components" / "__main__.py"), "127.0.0.1:9"],
        stdout=subprocess.PIPE,
        cwd=ROOT / "components",
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield provider_pb2_grpc.ResourceProviderStub(channel)
    finally:
        proc.kill()
        proc.wait()


def test_the_plugin_construct_returns_the_engines_input_property_errors(plugin):
    inputs = struct_pb2.Struct()
    inputs.update({"namespace": "Not_A_Label", "maxUnavailable": "0"})
    request = provider_pb2.ConstructRequest(
        project="p", stack="s", type="mldiag:index:Diagon", name="d", inputs=inputs, dryRun=True
    )
    with pytest.raises(grpc.RpcError) as e:
        plugin.Construct(request, timeout=120)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details().startswith("invalid arguments of Diagon 'd' (2 problem(s)):")
    trailer = dict(e.value.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(trailer)
    found = errors_pb2.InputPropertiesError()
    assert status.details[0].Unpack(found)
    with pytest.raises(InvalidArgsError) as direct:
        Diagon("d", BAD_DIAGON)  # type: ignore[typeddict-item]
    assert [
        {"property_path": x.property_path, "reason": x.reason} for x in found.errors
    ] == direct.value.errors
    assert found.errors[0].reason == "must be a positive integer or a percentage like 10%"
