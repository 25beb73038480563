"""The one command line (`mldiag`, installed with the project) and the make targets over it: no echoed
commands on stdout, and the command's exit code stated when make (which always exits 2) reports a failure."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from mldiag import cli
from mldiag.common import ROOT
from tests.fixtures.tools import need_command

MLDIAG = ROOT / ".venv" / "bin" / "mldiag"
BAD = ROOT / "tests" / "bad_stacks" / "k8s-images-pinned.yaml"  # prod: a mandatory violation


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_console_script_is_installed_with_the_project() -> None:
    assert MLDIAG.exists(), "requirements.txt installs ./cli (make venv)"
    out = run(str(MLDIAG), "--help", cwd=Path("/"))  # from anywhere: it runs the checkout it came from
    assert out.returncode == 0
    assert out.stdout == cli.help_text()


def _every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    """(`mldiag COMMAND [SUB]`, its parser) of every command and subcommand, read from the parsers."""
    out = []
    for command, parser in cli.parsers().items():
        out.append((f"mldiag {command}", parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                out += [(f"mldiag {command} {sub}", p) for sub, p in action.choices.items()]
    return out


def test_the_help_lists_every_command_and_subcommand_its_parsers_declare() -> None:
    text = cli.help_text()
    listed = re.findall(
        r"^ {2,4}(mldiag [a-z-]+(?: [a-z-]+)?)", text.split("\n\ncommands:\n")[1].split("\n\n")[0], re.M
    )
    names = [name for name, _ in _every_parser()]
    assert listed == names
    assert {"mldiag plan", "mldiag secrets set", "mldiag fleet run", "mldiag fleet workflow"} <= set(names)
    assert len([n for n in names if n.startswith("mldiag fleet ")]) >= 8


def test_every_usage_line_is_the_command_s() -> None:
    """`--help` speaks of the command (`usage: mldiag plan ...`), never of a module (`python -m ...`)."""
    for name, parser in _every_parser():
        text = parser.format_help()
        assert text.startswith(f"usage: {name} "), text[:80]
        assert "python -m" not in text, name


def test_an_unknown_command_says_what_was_meant() -> None:
    out = run(str(MLDIAG), "verfy")
    assert out.returncode == 2
    assert out.stderr.startswith("mldiag: unknown command 'verfy' (did you mean 'verify'?); commands: plan, ")


def test_exit_codes_come_from_the_tools() -> None:
    assert run(str(MLDIAG), "plan", "prod", "--config-file", str(BAD), "-q").returncode == 1
    assert run(str(MLDIAG), "plan", "nosuch", "-q").returncode == 2


def test_make_plan_prints_json_only_and_states_the_commands_exit_code(tmp_path: Path) -> None:
    need_command("make")
    out = run("make", "--no-print-directory", "plan", "STACK=dev", "FORMAT=json")
    assert out.returncode == 0
    assert json.loads(out.stdout)["stack"] == "dev"  # nothing but the report on stdout
    blocked = run("make", "--no-print-directory", "plan", "STACK=prod", f"CONFIG_FILE={BAD}", "FORMAT=json")
    assert blocked.returncode == 2  # GNU make's own code for any failure
    assert "mldiag plan exited 1 (README: Exit codes)" in blocked.stderr
    assert json.loads(blocked.stdout)["policyViolations"]


def test_make_verify_states_unreachable_as_3(tmp_path: Path) -> None:
    need_command("make")
    stack = tmp_path / "Pulumi.lab.yaml"
    stack.write_text(
        "config:\n  ml-diagnostics:environment: dev\n  ml-diagnostics:kubernetesClusters:\n"
        "    - name: lab\n      context: nowhere\n      manualInstall: {jaxVersion: '0.8'}\n"
    )
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none")}
    out = subprocess.run(
        ["make", "--no-print-directory", "verify", "STACK=lab", f"CONFIG_FILE={stack}", "FORMAT=json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 2
    assert "mldiag verify exited 3 (README: Exit codes)" in out.stderr
    assert json.loads(out.stdout)["exitCode"] == 3


def test_the_dispatcher_hands_arguments_through(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["policy-config", "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("usage: mldiag policy-config")


def test_a_one_shot_plan_writes_its_whole_report_and_its_code() -> None:
    # `mldiag plan` and `python -m mldiag.plan` end the process without tearing the heap down
    # (plan_runtime.end_process): what they wrote must still all reach a pipe, with the exit code.
    console = run(str(MLDIAG), "plan", "dev", "--format", "json", "-q")
    module = run(str(ROOT / ".venv" / "bin" / "python"), "-m", "mldiag.plan", "dev", "--format", "json", "-q")
    assert console.returncode == module.returncode == 0
    assert json.loads(console.stdout) == json.loads(module.stdout)
    ended = run(
        str(ROOT / ".venv" / "bin" / "python"),
        "-c",
        # more than a pipe holds, still buffered when the process ends
        "import sys; from mldiag.engine import runtime as plan_runtime; sys.stdout.write('x' * 200000); print('err', file=sys.stderr);"
        " plan_runtime.end_process(3)",
    )
    assert (ended.returncode, len(ended.stdout), ended.stderr) == (3, 200000, "err\n")


def test_one_shot_mode_leaves_the_collector_off_after_the_run() -> None:
    import gc

    from mldiag.engine import runtime as plan_runtime

    saved = plan_runtime.gc_policy
    try:
        plan_runtime.one_shot()
        plan_runtime.run_config({"ml-diagnostics:environment": "dev"}, stack="dev")
        assert gc.isenabled() is False
    finally:
        plan_runtime.gc_policy = saved
        gc.enable()
