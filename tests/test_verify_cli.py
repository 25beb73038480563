"""mldiag.verify end to end: exit codes, --wait polling with progress on stderr, config errors, the secret
kubeconfig read through the Pulumi CLI, and `python -m mldiag.verify` / `make verify` as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from dev.fakes.fleet import SimulatedClock
from dev.fakes.k8s_api import FakeKubeApi
from tests.fixtures.verify import GOOD_LOG, checks, kubeconfig, lab_target, run_verify, stack_file

ROOT = Path(__file__).resolve().parent.parent


def test_wait_polls_until_the_daemon_logs_its_heartbeat(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reads = {"n": 0}

    def log() -> str:
        reads["n"] += 1
        return GOOD_LOG if reads["n"] > 3 else GOOD_LOG.split("I1130 10:00:32")[0]

    healthy_lab.logs[("diagon", "diagon-daemon-1", "diagon-daemon")] = log
    config = stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    clock = SimulatedClock()
    code, report, err = run_verify(capsys, config, "--wait", "30", "--interval", "0.05", clock=clock)
    assert code == 0, report
    progress = err.splitlines()
    assert len(progress) == 3 and clock.slept == [0.05] * 3
    assert all("waiting" in line and "kubernetesClusters/lab diagon.logs" in line for line in progress)
    assert progress[0].startswith("[verify ")
    assert checks(report)["diagon.logs"]["ok"] is True


def test_wait_gives_up_at_the_deadline_with_the_last_result(
    healthy_lab: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_lab.logs[("diagon", "diagon-daemon-0", "diagon-daemon")] = "nothing yet\n"
    config = stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    clock = SimulatedClock()
    code, report, err = run_verify(capsys, config, "--wait", "1", "--interval", "0.25", clock=clock)
    assert code == 1
    assert checks(report)["diagon.logs"]["ok"] is False
    # passes at 0, 0.25, 0.5, 0.75 wait; the one at 1 s is the deadline's and its result is the report
    assert clock.slept == [0.25] * 4
    lines = err.splitlines()
    assert len(lines) == 4 and all(
        " waiting (" in ln and ln.endswith("kubernetesClusters/lab diagon.logs") for ln in lines
    )


def test_invalid_config_exits_2_naming_the_key_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target(mode="managed")]})
    code, report, err = run_verify(capsys, bad)
    assert code == 2 and report == {}
    assert "ml-diagnostics:kubernetesClusters[0].mode: managed ML diagnostics exists only on GKE" in err
    assert "Traceback" not in err


def test_a_missing_stack_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_verify(capsys, tmp_path / "Pulumi.nope.yaml")
    assert code == 2
    assert err == f"error: stack file {tmp_path / 'Pulumi.nope.yaml'} does not exist\n"


def fake_pulumi(bin_dir: Path, config: dict, args_log: Path) -> None:
    """A `pulumi` executable that prints `config --json --show-secrets` output for the given config."""
    bin_dir.mkdir()
    data = bin_dir / "config.json"
    data.write_text(json.dumps(config))
    script = bin_dir / "pulumi"
    script.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import sys
            open({str(args_log)!r}, "w").write(" ".join(sys.argv[1:]))
            if sys.argv[1:3] != ["config", "--json"]:
                sys.exit("unexpected call")
            sys.stdout.write(open({str(data)!r}).read())
            """
        )
    )
    script.chmod(0o755)


def test_pulumi_stack_reads_the_decrypted_kubeconfig_through_the_cli(
    kube: FakeKubeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fixtures.verify import seed_diagon, seed_manual_install, seed_namespaces

    kube.token = "lab-token-not-to-be-printed"
    seed_manual_install(kube)
    seed_namespaces(kube, "ai-workloads")
    seed_diagon(kube)
    target = lab_target()
    target["kubeconfig"] = yaml.safe_dump(kubeconfig(kube.url, token=kube.token))
    cli_config = {
        "ml-diagnostics:environment": {"value": "dev", "secret": False},
        "ml-diagnostics:kubernetesClusters": {
            "value": json.dumps([target]),
            "objectValue": [target],
            "secret": True,
        },
    }
    fake_pulumi(tmp_path / "bin", cli_config, tmp_path / "args")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    from mldiag.verify import cli

    code = cli.main(["test", "--pulumi-stack", "acme/ml-diagnostics/test"])
    out, err = capsys.readouterr()
    assert code == 0, out
    assert (tmp_path / "args").read_text() == "config --json --show-secrets --stack acme/ml-diagnostics/test"
    assert "13/13 checks passed" in out
    assert kube.token not in out + err
    assert {r.authorization for r in kube.requests} == {f"Bearer {kube.token}"}


def test_a_failing_pulumi_cli_is_a_config_error_without_its_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").write_text(
        f"#!{sys.executable}\nimport sys\nprint('secret-ish')\nsys.exit('error: no stack named x')\n"
    )
    (bin_dir / "pulumi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    from mldiag.verify import cli

    assert cli.main(["test", "--pulumi-stack", "x"]) == 2
    out, err = capsys.readouterr()
    assert "error: no stack named x" in err and "secret-ish" not in out + err


def test_python_m_tools_verify_and_make_verify_as_processes(healthy_lab: FakeKubeApi, tmp_path: Path) -> None:
    config = stack_file(tmp_path, {"environment": "dev", "kubernetesClusters": [lab_target()]})
    env = {**os.environ}
    run = subprocess.run(
        [sys.executable, "-m", "mldiag.verify", "test", "--config-file", str(config), "--format", "markdown"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("## Verify `test`: all checks passed\n")
    healthy_lab.logs[("diagon", "diagon-daemon-0", "diagon-daemon")] = ""
    make = ["make", "-s", "-o", ".venv/.installed", "verify", "STACK=test", f"CONFIG_FILE={config}"]
    run = subprocess.run(make, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "diagon.logs" in run.stdout and "FAIL" in run.stdout
    assert "verify] Error 1" in run.stderr  # the tool's own exit code, as make reports it
