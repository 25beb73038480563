"""certManager.values against the cert-manager chart version's own values.schema.json, before anything is
registered (issue 56): the data (generated from cert-manager's Go modules, with its --check), the refusals
with their key paths from a stack file and from a program, versions without a known schema, and the plan's
note of which."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pulumi
import pytest
import yaml

from dev.e2e import cert_manager_chart
from dev.gen import cert_manager_schemas as gen
from ml_diagnostics import cert_manager_schema as schema
from mldiag.engine.runtime import run_config
from mldiag.plan import cli as plan
from tests.fixtures.tools import need_command

ROOT = Path(__file__).resolve().parents[1]
KEY = "ml-diagnostics:kubernetesClusters"


def target(cert_manager: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "lab",
        "context": "lab-admin",
        "mode": "manual",
        "certManager": cert_manager,
        "manualInstall": {"jaxVersion": "0.8"},
    }


def stack(tmp_path: Path, cert_manager: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.lab.yaml"
    config = {"ml-diagnostics:environment": "dev", KEY: [target(cert_manager)]}
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def plan_of(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = plan.main(["lab", "--config-file", str(path), "--skip-policies", "-q"])
    out, err = capsys.readouterr()
    return code, out, err


# -- from a stack file --------------------------------------------------------------------------------------


def test_a_stack_with_an_unknown_key_is_refused_with_its_key_path(tmp_path, capsys):
    path = stack(tmp_path, {"version": "v1.16.5", "values": {"webhook": {"replicaCont": 2}}})
    code, out, err = plan_of(path, capsys)
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[0] == "error: invalid stack configuration (1 problem(s)):"
    assert lines[1].startswith(
        f"  - {KEY}[0].certManager.values.webhook.replicaCont: unknown key of cert-manager v1.16.5's "
        "values.schema.json (did you mean 'replicaCount'?); allowed keys: affinity, automountServiceAccountToken"
    )
    assert "Traceback" not in err


def test_every_problem_is_named_and_the_programs_own_values_are_checked_with_them(tmp_path, capsys):
    values = {"replicaCount": "2", "webhook": {"replicaCount": None}, "crds": {"enabled": "yes"}}
    code, _, err = plan_of(stack(tmp_path, {"version": "1.18.2", "values": values}), capsys)
    assert code == 2
    assert err.splitlines()[1:] == [
        f"  - {KEY}[0].certManager.values.crds.enabled: must be true or false, not a string (cert-manager "
        "v1.18.2's values.schema.json)",
        f"  - {KEY}[0].certManager.values.replicaCount: must be a number, not a string (cert-manager v1.18.2's "
        "values.schema.json)",
    ]


@pytest.mark.parametrize(
    ("version", "note"),
    [
        ("v1.13.0", "values unchecked: no values.schema.json before v1.16.0"),
        ("v1.99.0", "values unchecked: newer than the schemas known (up to v1.21.2)"),
        ("v1.18.4", "values unchecked: no schema known for v1.18.4"),
    ],
)
def test_a_version_without_a_known_schema_is_not_refused_and_the_plan_says_so(
    tmp_path, capsys, version, note
):
    values = {"notAValueOfTheChart": 1, **({"installCRDs": True} if version == "v1.13.0" else {})}
    code, out, err = plan_of(stack(tmp_path, {"version": version, "values": values}), capsys)
    assert code == 0, err
    assert (
        f"kubernetes:helm.sh/v3:Release  k8s-lab-mldiag-cert-manager-release  cert-manager {version} ({note})"
        in out
    )


def test_a_checked_version_says_so_in_the_plan(tmp_path, capsys):
    code, out, err = plan_of(
        stack(tmp_path, {"version": "v1.16.5", "values": {"webhook": {"replicaCount": 2}}}), capsys
    )
    assert code == 0, err
    assert "cert-manager v1.16.5 (values checked against its values.schema.json)" in out


# -- from a program -----------------------------------------------------------------------------------------

PROGRAM = """
import pulumi
from ml_diagnostics.cert_manager import CertManager

CertManager("cm", {"version": "v1.16.5", "values": VALUES})
"""


def run_program(tmp_path: Path, values: str):
    program = tmp_path / "__main__.py"
    program.write_text(PROGRAM.replace("VALUES", values))
    return run_config({}, program=program)


def test_a_program_gets_the_same_refusal_and_nothing_is_registered(tmp_path, monkeypatch):
    registered: list[str] = []
    real = pulumi.CustomResource.__init__
    monkeypatch.setattr(
        pulumi.CustomResource,
        "__init__",
        lambda self, t, n, *a, **k: registered.append(n) or real(self, t, n, *a, **k),
    )
    with pytest.raises(ValueError) as e:
        run_program(tmp_path, '{"webhook": {"replicaCont": 2}}')
    lines = str(e.value).splitlines()
    assert lines[0] == "invalid arguments of CertManager 'cm' (1 problem(s)):"
    assert lines[1].startswith(
        "  - CertManagerArgs.values.webhook.replicaCont: unknown key of cert-manager v1.16.5's values.schema.json "
        "(did you mean 'replicaCount'?); allowed keys: affinity,"
    )
    assert registered == []


def test_an_output_value_is_checked_for_its_key_only(tmp_path):
    result = run_program(tmp_path, '{"webhook": {"replicaCount": pulumi.Output.from_input(2)}}')
    (release,) = result.by_type("kubernetes:helm.sh/v3:Release")
    assert release.inputs["values"]["webhook"] == {"replicaCount": 2}
    with pytest.raises(ValueError, match=r"CertManagerArgs.values.webhook.replicaCont: unknown key of"):
        run_program(tmp_path, '{"webhook": {"replicaCont": pulumi.Output.from_input(2)}}')


# -- the module the library and the pack share ---------------------------------------------------------------


def test_values_problems_in_the_data_as_helm_gets_them():
    assert schema.values_problems("v1.13.0", {"anything": 1}) is None
    merged = schema.cert_manager_values("v1.16.5", {"webhook": {"replicaCount": 3}})
    assert merged == {
        "crds": {"enabled": True, "keep": True},
        "global": {"leaderElection": {"namespace": "cert-manager"}},
        "webhook": {"replicaCount": 3},
    }
    assert schema.values_problems("v1.16.5", merged) == []
    values = {
        "webhook": {"timeoutSeconds": 1.5, "serviceType": 7, "hostNetwork": "yes"},
        "enableCertificateOwnerRef": 1,
    }
    found = schema.values_problems("v1.16.5", values)
    label = "(cert-manager v1.16.5's values.schema.json)"
    assert [(p.path, p.message) for p in found or []] == [
        (("enableCertificateOwnerRef",), f"must be true or false, not a whole number {label}"),
        (("webhook", "hostNetwork"), f"must be true or false, not a string {label}"),
        (("webhook", "serviceType"), f"must be a string, not a whole number {label}"),
    ]
    # a value the caller cannot know yet: its key is checked, its value is not
    later = object()
    found = schema.values_problems(
        "v1.16.5", {"webhook": {"serviceType": later, "replicas": later}}, unknown=lambda v: v is later
    )
    assert [p.path for p in found or []] == [("webhook", "replicas")]


def test_the_data_says_where_it_comes_from_and_holds_each_schema_once():
    data = json.loads(schema.DATA.read_text())
    assert data["generatedBy"] == "python -m dev.gen.cert_manager_schemas --write"
    assert list(data["versions"]) == sorted(gen.VERSIONS, key=lambda v: [int(x) for x in v[1:].split(".")])
    assert schema.known_versions()[0] == "v1.16.0"
    ids = {v["schema"] for v in data["versions"].values()}
    assert ids == set(data["schemas"]) and len(
        {json.dumps(s, sort_keys=True) for s in data["schemas"].values()}
    ) == len(ids)
    assert data["versions"]["v1.16.5"]["sum"] == cert_manager_chart.VERSIONS["v1.16.5"]


# -- generated from the modules: current, and validating as the chart's own schema -----------------------------


def test_the_generated_schemas_are_current():
    need_command("go")
    run = subprocess.run(
        [sys.executable, "-m", "dev.gen.cert_manager_schemas", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (run.returncode, run.stdout) == (0, "cert-manager schemas are current\n"), run.stdout + run.stderr


def _with_unknown_keys(values: Any) -> Any:
    """Every map of the chart's values with a key it does not define."""
    if isinstance(values, dict):
        return {**{k: _with_unknown_keys(v) for k, v in values.items()}, "notAValueOfTheChart": 1}
    return values


def _retyped(values: Any) -> Any:
    """Every leaf of the chart's values as a value of another type (a map for a scalar, a string for a list)."""
    if isinstance(values, dict):
        return {k: _retyped(v) for k, v in values.items()}
    return "a string" if isinstance(values, list) else {"a": "map"}


def test_the_reduced_schemas_validate_exactly_as_the_charts_own():
    """Each release's own values.yaml passes both; with a key it does not define in every map, and with every
    leaf of another type, both refuse it at the same paths for the same reasons (every error is reported, so
    one instance checks every path)."""
    need_command("go")
    answers = cert_manager_chart.go_download(list(gen.VERSIONS))
    for version in gen.VERSIONS:
        src = Path(answers[version]["Dir"]) / cert_manager_chart.CHART_SOURCE
        original = jsonschema.Draft7Validator(json.loads((src / "values.schema.json").read_text()))
        ours = schema._validator(version)
        assert ours is not None
        defaults = yaml.safe_load((src / "values.yaml").read_text())
        assert list(original.iter_errors(defaults)) == [] and list(ours.iter_errors(defaults)) == []
        for instance in (_with_unknown_keys(defaults), _retyped(defaults)):
            theirs = sorted(
                (list(map(str, e.absolute_path)), e.validator) for e in original.iter_errors(instance)
            )
            mine = sorted((list(map(str, e.absolute_path)), e.validator) for e in ours.iter_errors(instance))
            assert theirs and mine == theirs, version
