"""Diagon's max_unavailable is one type everywhere, the one Kubernetes takes (IntOrString): `int | str` in the
library's Spec, its Args and the stack file, and a oneOf integer or string in the component plugin's schema
(the SDK's analyzer takes no unions: the plugin shows it a string and writes the oneOf in)."""

from __future__ import annotations

import typing
from typing import NotRequired

import grpc
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.proto import provider_pb2

from ml_diagnostics import DiagonArgs, plugin
from ml_diagnostics.rules.diagon import DiagonSpec
from tests.test_kubernetes_components import by_name, cluster, run
from tests.test_plugin_errors import plugin as plugin_process  # noqa: F401 (the plugin's gRPC server)

ONE_OF = [{"type": "integer"}, {"type": "string"}]


def test_the_spec_and_the_args_take_a_count_or_a_percentage() -> None:
    assert DiagonSpec.model_fields["max_unavailable"].annotation == int | str
    assert DiagonSpec.model_validate({"max_unavailable": 4.0}).max_unavailable == 4
    assert DiagonArgs.__annotations__["max_unavailable"] == NotRequired[int | str]
    assert [DiagonSpec.model_validate({"max_unavailable": v}).max_unavailable for v in (2, "2", "10%")] == [
        2,
        "2",
        "10%",
    ]


@pytest.mark.parametrize(("given", "sent"), [(3, 3), ("3", 3), ("25%", "25%")])
def test_the_daemonset_gets_a_count_as_a_number_and_a_percentage_as_text(given, sent) -> None:
    result = run(cluster(diagon={"enabled": True, "maxUnavailable": given}))
    ds = by_name(result, "k8s-lab-mldiag-diagon-daemonset").inputs
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": sent},
    }


def test_the_plugin_schema_says_integer_or_string_and_the_annotation_is_restored() -> None:
    spec = plugin.schema()
    assert spec["types"]["mldiag:index:DiagonArgs"]["properties"]["maxUnavailable"]["oneOf"] == ONE_OF
    assert spec["resources"]["mldiag:index:Diagon"]["inputProperties"]["maxUnavailable"]["oneOf"] == ONE_OF
    assert "type" not in spec["resources"]["mldiag:index:Diagon"]["inputProperties"]["maxUnavailable"]
    assert typing.get_args(DiagonArgs.__annotations__["max_unavailable"]) == (int | str,)
    served = plugin.provider()
    assert '"oneOf": [{"type": "integer"}, {"type": "string"}]' in (served.schema or "")


@pytest.mark.parametrize(("value", "problems"), [(2, 1), (0, 2), ("10%", 1)])
def test_a_number_from_another_language_reaches_the_rule(plugin_process, value, problems) -> None:  # noqa: F811
    inputs = struct_pb2.Struct()
    inputs.update({"namespace": "Not_A_Label", "maxUnavailable": value})
    request = provider_pb2.ConstructRequest(
        project="p", stack="s", type="mldiag:index:Diagon", name="d", inputs=inputs, dryRun=True
    )
    with pytest.raises(grpc.RpcError) as e:
        plugin_process.Construct(request, timeout=120)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details().startswith(f"invalid arguments of Diagon 'd' ({problems} problem(s)):")
    refused = "DiagonArgs.max_unavailable: must be a positive integer or a percentage like 10%"
    assert (refused in e.value.details()) == (value == 0)
