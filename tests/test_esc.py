"""Stacks that import Pulumi ESC environments (mldiag/esc.py): plan, diff and verify say so, name them, mark
the result incomplete (`unopenedEnvironments`, exit code 4), and take their values from --esc-values with the
engine's precedence, every taken value held secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.fakes.k8s_api import FakeKubeApi
from mldiag import esc
from mldiag.diff.compare import exit_code as diff_exit_code
from mldiag.exit_codes import Exit, worst
from mldiag.plan import cli as plan_cli
from program import stack_file
from program.stack_file import StackFileError
from tests.fixtures.verify import lab_target, run_verify

ENV = "ml-platform/gcp-oidc"
KUBECONFIG_MARK = "esc-kubeconfig-token-7f3a"


def write_stack(tmp_path: Path, config: dict[str, Any], environment: Any = (ENV,)) -> Path:
    doc: dict[str, Any] = {"config": {f"ml-diagnostics:{k}": v for k, v in config.items()}}
    if environment is not None:
        doc["environment"] = list(environment) if isinstance(environment, tuple) else environment
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def write_values(tmp_path: Path, config: dict[str, Any], name: str = "esc.json") -> Path:
    path = tmp_path / name
    path.write_text(
        json.dumps({"pulumiConfig": config, "environmentVariables": {"TOKEN": "ya29.not-config"}})
    )
    return path


def plan(
    capsys: pytest.CaptureFixture[str], config_file: Path, *extra: str
) -> tuple[int, dict[str, Any], str]:
    code = plan_cli.main(["test", "--config-file", str(config_file), "--format", "json", "-q", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


@pytest.mark.parametrize(
    ("written", "names"),
    [
        ([ENV], (ENV,)),
        (["shared", {"ml-platform/azure-oidc": {"merge": False}}], ("shared", "ml-platform/azure-oidc")),
        (None, ()),
    ],
)
def test_the_stack_file_names_the_environments_it_imports(tmp_path: Path, written: Any, names: tuple) -> None:
    path = write_stack(tmp_path, {"environment": "dev"}, environment=written)
    assert stack_file.read(path, "ml-diagnostics").environments == names


@pytest.mark.parametrize(
    "written", ["ml-platform/gcp-oidc", [{"a": 1, "b": 2}], [3], ["a/b/c"], {"imports": []}]
)
def test_an_environment_list_of_another_shape_is_refused_by_name(tmp_path: Path, written: Any) -> None:
    path = write_stack(tmp_path, {"environment": "dev"}, environment=written)
    with pytest.raises(StackFileError) as e:
        stack_file.read(path, "ml-diagnostics")
    assert str(e.value) == (
        f"{path}: environment: must be a list of Pulumi ESC environment names ('project/env' or 'env', "
        "optionally as the one key of a mapping of import options), e.g. environment: [ml-platform/gcp-oidc]"
    )


@pytest.mark.parametrize("written", ["dev", "production"])
def test_a_top_level_environment_name_comes_with_the_config_s_problems_and_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], written: str
) -> None:
    """`environment: dev` where `ml-diagnostics:environment: dev` was meant: one error lists it, the missing
    key and the config's other problems, as every problem is reported (verify the same)."""
    path = write_stack(tmp_path, {"kubernetesClusters": [lab_target(mode="managed")]}, environment=written)
    expected = (
        "error: invalid stack configuration (3 problem(s)):\n"
        f"  - {path}: environment: {written!r}: did you mean `ml-diagnostics:environment` under config: (the "
        "stack's environment: dev, staging, prod)? The top-level `environment:` lists the Pulumi ESC "
        "environments the stack imports, e.g. environment: [ml-platform/gcp-oidc]\n"
        "  - ml-diagnostics:environment: required key is missing\n"
        "  - ml-diagnostics:kubernetesClusters[0].mode: managed ML diagnostics exists only on GKE; self-managed "
        "clusters allow: manual, auto (= manual)\n"
    )
    code, report, err = plan(capsys, path)
    assert (code, report, err) == (Exit.INVALID, {}, expected)
    code, report, err = run_verify(capsys, path)
    assert (code, report, err) == (Exit.INVALID, {}, expected)


def test_a_plan_without_the_values_says_it_is_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_stack(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    code, report, err = plan(capsys, path)
    assert code == Exit.INCOMPLETE == 4
    assert report["unopenedEnvironments"] == [ENV]
    assert err == esc.warning(str(path), [ENV]) + "\n"
    assert f"imports Pulumi ESC environment(s) {ENV}: their pulumiConfig values are not in this result" in err
    # the same stack without `environment:`: complete, and no such key
    plain = write_stack(
        tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]}, environment=None
    )
    code, complete, err = plan(capsys, plain)
    assert (code, "unopenedEnvironments" in complete, err) == (0, False, "")
    assert complete["resources"] == report["resources"]


def test_the_values_go_under_the_stack_file_and_stay_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the environment holds the cluster list (its kubeconfig a secret) and a different environment name
    target = lab_target(
        kubeconfig=f"apiVersion: v1\nkind: Config\nusers: [{{name: u, user: {{token: {KUBECONFIG_MARK}}}}}]\n"
    )
    path = write_stack(tmp_path, {"environment": "dev"})
    values = write_values(tmp_path, {"environment": "prod", "ml-diagnostics:kubernetesClusters": [target]})
    code, report, err = plan(capsys, path, "--esc-values", str(values))
    assert code == 0, err
    assert "unopenedEnvironments" not in report and "warning" not in err
    names = {r["name"] for r in report["resources"]}
    assert {"k8s-lab", "k8s-lab-mldiag-diagon-daemonset"} <= names, sorted(names)
    # the stack file wins: the environment's `environment: prod` is not taken
    assert report["outputs"]["environment"] == "dev"
    assert KUBECONFIG_MARK not in json.dumps(report) + err


def test_of_two_files_the_later_wins(tmp_path: Path) -> None:
    first = write_values(tmp_path, {"a": "1", "b": "1"}, "one.json")
    second = write_values(tmp_path, {"ml-diagnostics:b": "2", "gcp:project": "p"}, "two.json")
    assert esc.read_values([first, second], "ml-diagnostics") == {
        "ml-diagnostics:a": "1",
        "ml-diagnostics:b": "2",
        "gcp:project": "p",
    }
    config, secret = esc.merge(
        {"ml-diagnostics:a": "mine"}, ["ml-diagnostics:x"], {"ml-diagnostics:a": "1", "gcp:project": "p"}
    )
    assert (config, secret) == (
        {"ml-diagnostics:a": "mine", "gcp:project": "p"},
        ["gcp:project", "ml-diagnostics:x"],
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "--esc-values: {path} does not exist"),
        ('{"pulumiConfig": {"k": "s3cr3t"', "--esc-values: {path}: not valid JSON (line 1, column 32)"),
        (
            '["s3cr3t"]',
            "--esc-values: {path}: expected the JSON object that `esc open ORG/PROJECT/ENV` prints, got list",
        ),
        (
            '{"pulumiConfig": "s3cr3t"}',
            "--esc-values: {path}: pulumiConfig must be an object of config key -> value, got str",
        ),
    ],
)
def test_a_values_file_that_cannot_be_used_is_named_never_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = write_stack(tmp_path, {"environment": "dev"})
    values = tmp_path / "values.json"
    if content is not None:
        values.write_text(content)
    code, report, err = plan(capsys, path, "--esc-values", str(values))
    assert (code, report) == (2, {})
    assert err == "error: " + message.format(path=values) + "\n"
    assert "s3cr3t" not in err


def test_values_for_a_stack_that_imports_nothing_are_ignored_and_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_stack(tmp_path, {"environment": "dev"}, environment=None)
    values = write_values(tmp_path, {"environment": "prod"})
    code, _, err = plan(capsys, path, "--esc-values", str(values))
    assert (code, err) == (0, f"note: --esc-values ignored: {path} imports no Pulumi ESC environment\n")


def test_verify_says_so_and_ends_4_when_every_check_passed(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_stack(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    code, report, err = run_verify(capsys, path)
    assert (code, report["exitCode"], report["unopenedEnvironments"]) == (4, 4, [ENV])
    assert err == esc.warning(str(path), [ENV]) + "\n"
    values = write_values(tmp_path, {"gcp:project": "p"})
    code, report, err = run_verify(capsys, path, "--esc-values", str(values))
    assert (code, report["exitCode"], "unopenedEnvironments" in report, err) == (0, 0, False, "")


def test_verify_takes_values_only_for_a_stack_file(capsys: pytest.CaptureFixture[str]) -> None:
    from mldiag.verify import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["--stack", "o/p/s", "--esc-values", "x.json"])
    assert e.value.code == 2
    assert (
        "--esc-values supplies a stack file's ESC environments: --stack and --pulumi-stack need none"
        in capsys.readouterr().err
    )


def test_a_diff_and_the_codes_of_several_outcomes() -> None:
    diff = {"summary": {"mandatoryViolations": 0}, "unopenedEnvironments": [ENV]}
    assert diff_exit_code(diff) == Exit.INCOMPLETE
    assert diff_exit_code({**diff, "summary": {"mandatoryViolations": 1}}) == Exit.FINDING
    assert worst(Exit.OK, Exit.INCOMPLETE) == Exit.INCOMPLETE
    assert worst(Exit.INCOMPLETE, Exit.FINDING) == Exit.FINDING
    assert worst(Exit.FINDING, Exit.INVALID, Exit.INCOMPLETE) == Exit.INVALID
    assert worst() == Exit.OK
