"""The component plugin's schema is the one the analyzer infers from the Args today (committed, so a change
of the Args without `python -m ml_diagnostics.plugin --write` fails here), and the Args are the ones
generated from the Specs of ml_diagnostics.rules (`python -m dev.gen.args`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ml_diagnostics import plugin
from ml_diagnostics.specs.model_development import ClusterSpec

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_schema_is_the_inferred_one():
    committed = json.loads(plugin.SCHEMA.read_text())
    assert committed == plugin.schema(), "Args changed: run python -m ml_diagnostics.plugin --write"
    assert plugin.SCHEMA.read_text() == plugin.render()


def test_the_schema_offers_the_main_components_with_typed_inputs():
    schema = plugin.schema()
    assert schema["name"] == "mldiag" and schema["version"] == plugin.VERSION
    assert sorted(schema["resources"]) == [
        "mldiag:index:AzureMlExtension",
        "mldiag:index:ClusterMlDiagnostics",
        "mldiag:index:Diagon",
        "mldiag:index:GkeCluster",
        "mldiag:index:KubernetesCluster",
        "mldiag:index:ModelDevelopmentCluster",
        "mldiag:index:WorkloadOptIn",
    ]
    cluster = schema["resources"]["mldiag:index:ClusterMlDiagnostics"]
    assert cluster["isComponent"] is True
    assert cluster["requiredInputs"] == ["mode"]
    assert cluster["inputProperties"]["mode"]["$ref"] == "#/types/mldiag:index:MlDiagnosticsMode"
    assert cluster["inputProperties"]["workloadNamespaces"]["items"]["$ref"] == (
        "#/types/mldiag:index:WorkloadNamespaceArgs"
    )
    assert {e["value"] for e in schema["types"]["mldiag:index:MlDiagnosticsMode"]["enum"]} == {
        "managed",
        "manual",
        "auto",
    }
    assert sorted(cluster["properties"]) == [
        "certManagerSource",
        "diagonNamespace",
        "mode",
        "verifyRecord",
        "workloadMonitoring",
        "workloadNamespaces",
    ]
    # every input and output carries its docstring (a reference: its type does)
    for token, res in schema["resources"].items():
        assert res.get("description"), token
        for name, prop in {**res["inputProperties"], **res["properties"]}.items():
            ref = prop.get("$ref") or prop.get("items", {}).get("$ref")
            if ref:
                assert schema["types"][ref.split("/")[-1]].get("description"), (token, name)
            else:
                assert prop.get("description"), (token, name)


def test_the_args_are_generated_from_the_specs():
    run = subprocess.run(
        [sys.executable, "-m", "dev.gen.args", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    from ml_diagnostics.args import GkeClusterArgs, ModelDevelopmentClusterArgs
    from ml_diagnostics.rules.gke import GkeClusterSpec
    from ml_diagnostics.rules.model_development import ModelDevelopmentClusterSpec

    for args, spec in (
        (ModelDevelopmentClusterArgs, ModelDevelopmentClusterSpec),
        (GkeClusterArgs, GkeClusterSpec),
    ):
        assert list(args.__annotations__) == list(spec.model_fields)
        assert args.__required_keys__ == {n for n, f in spec.model_fields.items() if f.is_required()}
    assert set(ModelDevelopmentClusterArgs.__annotations__) == {
        *ClusterSpec.model_fields,
        "google_api",
        "adopt",
    }
