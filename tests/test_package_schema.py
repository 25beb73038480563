"""The component plugin's schema is the one the analyzer infers from the Args today (committed, so a change
of the Args without `python -m ml_diagnostics.plugin --write` fails here), and the Args, the export table,
the verify record's sections and components/README.md's table are the ones generated from the library's
parts (`python -m dev.gen.args --write`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dev.gen import args as gen_args
from dev.gen import parts
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
    # every component a part exports (dev/gen/parts.py), and so these
    exported = {
        f"mldiag:index:{f.part.component}"
        for f in parts.components(parts.discover())
        if f.part.component in f.part.exports
    }
    assert set(schema["resources"]) == exported
    assert {
        "mldiag:index:AzureMlExtension",
        "mldiag:index:ClusterMlDiagnostics",
        "mldiag:index:Diagon",
        "mldiag:index:GkeCluster",
        "mldiag:index:KubernetesCluster",
        "mldiag:index:ModelDevelopmentCluster",
        "mldiag:index:WorkloadOptIn",
    } <= exported
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
    assert set(gen_args.outputs()) == {gen_args.OUT, gen_args.EXPORTS, gen_args.RECORD, gen_args.README}
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


def test_the_exports_and_the_record_sections_are_the_parts():
    import ml_diagnostics
    from ml_diagnostics import verify_record

    found = parts.discover()
    assert set(ml_diagnostics.__all__) == {name.rpartition(":")[2] for f in found for name in f.part.exports}
    assert tuple(section for section, _ in parts.sections(found)) == verify_record.SECTIONS
    for section, record in parts.sections(found):
        assert verify_record.VerifyRecord.model_fields[section].annotation == record | None


def test_a_stale_generated_file_fails_the_check(monkeypatch, capsys):
    """--check names each generated file whose text is not what the parts make of it."""
    wanted = gen_args.outputs()
    wanted[gen_args.RECORD] += "# a section more\n"
    monkeypatch.setattr(gen_args, "outputs", lambda: wanted)
    assert gen_args.main(["--check"]) == 1
    assert capsys.readouterr().out == (
        "components/ml_diagnostics/_record.py is stale: run python -m dev.gen.args --write\n"
    )


def test_two_parts_of_one_order_are_refused(monkeypatch):
    import dataclasses

    from ml_diagnostics import diagon

    monkeypatch.setattr(diagon, "PART", dataclasses.replace(diagon.PART, order=10))
    with pytest.raises(ValueError, match="have the same order 10"):
        parts.discover()
