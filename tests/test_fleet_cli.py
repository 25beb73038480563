"""`mldiag fleet plan|run|gate|status|drift|workflow`: exit codes and messages (README "Exit codes"), with the
simulated executor in place of the Automation API. A bad fleet file is exit 2 with its key paths, and nothing
reaches an engine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dev.fakes.fleet import Script, SimulatedExecutor
from mldiag.common import ROOT
from mldiag.fleet import cli

FLEET = """\
environment: prod
waves:
  - {name: canary, targets: [onprem-prod]}
  - {name: rest, targets: [prod-tpu, train, aks-prod], maxParallel: 3, failureTolerance: 1}
"""
ONPREM, TPU, TRAIN, AKS = (
    "prod.k8s-onprem-prod",
    "prod.gke-prod-tpu",
    "prod.mdc-train",
    "prod.azureml-aks-prod",
)
ALL_TARGETS = (
    "kubernetesClusters/onprem-prod, gkeClusters/prod-tpu, azureMl/aks-prod, modelDevelopmentClusters/train"
)

BAD = {
    "a target in two waves": (
        "environment: prod\nwaves:\n  - {name: a, targets: [onprem-prod, prod-tpu]}\n"
        "  - {name: b, targets: [prod-tpu, train, aks-prod]}\n",
        ["waves[1].targets[0]: gkeClusters/prod-tpu is already in wave 'a'; a target is in one wave only"],
    ),
    "a wave that selects nothing": (
        "environment: prod\nwaves:\n  - {name: a, targets: [onprem-prod, prod-tpu, train, aks-prod]}\n"
        "  - {name: b, selector: {ring: nowhere}}\n",
        [
            "waves[1].selector: {ring: nowhere} selects no target; the targets' labels: onprem-prod {kind: "
            "kubernetesClusters}; prod-tpu {kind: gkeClusters}; aks-prod {kind: azureMl}; train {kind: "
            "modelDevelopmentClusters}"
        ],
    ),
    "a tolerance larger than its wave": (
        "environment: prod\nwaves:\n  - {name: a, targets: [onprem-prod], failureTolerance: 2}\n"
        "  - {name: b, targets: [prod-tpu, train, aks-prod]}\n",
        [
            "waves[0].failureTolerance: 2 is larger than the wave (1 cluster(s): onprem-prod); allowed: 0 to 1, or "
            'a percentage ("25%")'
        ],
    ),
    "an unknown target": (
        "environment: prod\nwaves:\n  - {name: a, targets: [onprem-prd, prod-tpu, train, aks-prod]}\n",
        [
            "waves[0].targets[0]: unknown target 'onprem-prd' (did you mean 'onprem-prod'?); the targets of prod: "
            + ALL_TARGETS,
            "waves: kubernetesClusters/onprem-prod is in no wave; every target of prod must be in exactly one (name it "
            "in a wave's targets or give it a label a selector matches)",
        ],
    ),
    "a bad value in the file itself": (
        "environment: prod\nwaves:\n  - {name: a, targets: [onprem-prod], maxParallel: 0, soak: soon}\n",
        [
            "waves[0].maxParallel: 0 is out of range: from 1 to 1000",
            "waves[0].soak: 'soon' is not a duration like 90s, 10m, 1h30m or 2d, or a number of seconds (at most 7d)",
        ],
    ),
}


def write(tmp_path: Path, text: str = FLEET) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def mldiag(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(plan: Any, args: Any) -> Any:
        raise AssertionError("an engine was reached")

    monkeypatch.setattr(cli, "_executor", refuse)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Callable[..., SimulatedExecutor]:
    """Installs a simulated executor with these scripts (member stack -> Script) and returns it."""

    def install(scripts: dict[str, Script] | None = None) -> SimulatedExecutor:
        sim = SimulatedExecutor(scripts)
        monkeypatch.setattr(cli, "_executor", lambda plan, args: sim)
        return sim

    return install


@pytest.mark.parametrize("command", ["plan", "run", "status", "drift", "adopt", "recover"])
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_fleet_file_is_exit_2_with_every_key_path_and_nothing_runs(
    tmp_path: Path, mldiag: Run, no_engine: None, command: str, case: str
) -> None:
    text, problems = BAD[case]
    path = write(tmp_path, text)
    code, out, err = mldiag(command, str(path))
    lines = "".join(f"  - {p}\n" for p in problems)
    assert (code, out, err) == (
        2,
        "",
        f"error: invalid fleet file {path} ({len(problems)} problem(s)):\n{lines}",
    )


@pytest.mark.parametrize(
    "entry", [[sys.executable, "-m", "mldiag.fleet"], [str(Path(sys.executable).parent / "mldiag"), "fleet"]]
)
def test_both_entry_points_say_so_without_a_traceback_and_write_nothing(
    tmp_path: Path, entry: list[str]
) -> None:
    path = write(tmp_path, BAD["an unknown target"][0])
    work = tmp_path / "work"
    out = subprocess.run(
        [*entry, "run", str(path), "--work-dir", str(work)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.startswith(
        f"error: invalid fleet file {path} (2 problem(s)):\n  - waves[0].targets[0]: unknown"
    )
    assert "Traceback" not in out.stderr
    assert not work.exists()


def test_plan_is_offline_in_every_format(tmp_path: Path, mldiag: Run, no_engine: None) -> None:
    path = write(tmp_path)
    code, out, err = mldiag("plan", str(path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "rollout of prod (prod): 4 cluster(s) in 2 wave(s)"
    assert [ln.split()[:3] for ln in lines[2:6]] == [
        ["1.", "canary", "kubernetesClusters/onprem-prod"],
        ["2.", "rest", "gkeClusters/prod-tpu"],
        ["2.", "rest", "modelDevelopmentClusters/train"],
        ["2.", "rest", "azureMl/aks-prod"],
    ]
    code, out, _ = mldiag("plan", str(path), "--format", "json")
    waves = json.loads(out)["waves"]
    # a wave's revision: its members at their revisions, what an approval names (docs/fleet.md)
    assert lines[6:] == [
        f"  gate of canary: verify (wait 10m), tolerate 0 failed, at most 1 at a time; revision {waves[0]['revision']}",
        f"  gate of rest: verify (wait 10m), tolerate 1 failed, at most 3 at a time; revision {waves[1]['revision']}",
    ]
    assert all(re.fullmatch(r"[0-9a-f]{16}", w["revision"]) for w in waves)
    assert [(w["name"], [c["stack"] for c in w["clusters"]]) for w in waves] == [
        ("canary", [ONPREM]),
        ("rest", [TPU, TRAIN, AKS]),
    ]
    assert mldiag("plan", str(path), "--format", "mermaid")[1].startswith("flowchart LR\n")
    assert mldiag("plan", str(path), "--format", "dot")[1].startswith('digraph "prod rollout" {\n')
    markdown = mldiag("plan", str(path), "--format", "markdown")[1]
    assert markdown.startswith("## Rollout of prod (prod): 4 cluster(s) in 2 wave(s)\n")
    assert "```mermaid\nflowchart LR\n" in markdown


def test_run_exit_0_when_every_wave_passes(tmp_path: Path, mldiag: Run, engine: Any) -> None:
    sim = engine({TPU: Script(deploy=["fail"])})  # inside rest's tolerance of 1
    code, out, err = mldiag("run", str(write(tmp_path)), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["message"] == "every wave passed"
    assert [(c["stack"], c["state"]) for w in report["waves"] for c in w["clusters"]] == [
        (ONPREM, "verified"),
        (TPU, "failed"),
        (TRAIN, "verified"),
        (AKS, "verified"),
    ]
    assert sim.deployed()[0] == ONPREM and sorted(sim.deployed()[1:]) == sorted([TPU, TRAIN, AKS])
    assert "[fleet " in err and "wave rest: passed (1 failed, 1 tolerated)" in err


def test_run_exit_1_when_a_wave_fails_its_gate_and_status_says_where(
    tmp_path: Path, mldiag: Run, engine: Any
) -> None:
    sim = engine({ONPREM: Script(deploy=["fail", "ok"])})
    path = str(write(tmp_path))
    code, out, err = mldiag("run", path)
    assert code == 1
    message = (
        "wave canary failed its gate: 1 cluster(s) failed, 0 tolerated (prod.k8s-onprem-prod: update failed: simulated: "
        "the update of prod.k8s-onprem-prod failed); the next wave was not started; fix the cause and rerun to resume "
        "this wave"
    )
    assert err.endswith(f"error: {message}\n")
    assert out.splitlines()[-1].startswith(f"exit 1: {message}; wall ")
    assert sim.deployed() == [ONPREM]
    code, out, _ = mldiag("status", path, "--format", "json")
    assert code == 1
    status = json.loads(out)
    assert [(w["name"], w["status"]) for w in status["waves"]] == [
        ("canary", "failed its gate"),
        ("rest", "not started"),
    ]
    assert status["waves"][0]["clusters"][0]["state"] == "failed"
    # the fix: the rerun resumes at canary and completes
    assert mldiag("run", path)[0] == 0
    assert sim.deployed()[:2] == [ONPREM, ONPREM] and sorted(sim.deployed()[2:]) == sorted([TPU, TRAIN, AKS])
    code, out, _ = mldiag("status", path)
    assert code == 0
    assert [ln.split()[:2] for ln in out.splitlines()[1:]] == [["canary", "complete"]] + [
        ["rest", "complete"]
    ] * 3


def test_run_and_status_exit_3_when_a_stack_cannot_be_run_or_read(
    tmp_path: Path, mldiag: Run, engine: Any
) -> None:
    path = str(write(tmp_path))
    engine({ONPREM: Script(deploy=["lock"])})
    code, _, err = mldiag("run", path)
    assert code == 3
    assert err.endswith(
        "error: wave canary: stack prod.k8s-onprem-prod is locked by another update; nothing else was started\n"
    )
    engine({TRAIN: Script(tags="unavailable")})
    code, out, _ = mldiag("status", path, "--format", "json")
    assert code == 3
    waves = json.loads(out)["waves"]
    assert [w["status"] for w in waves] == ["not started", "unreadable"]
    assert [
        (c["stack"], c["state"], c["why"]) for c in waves[1]["clusters"] if c["state"] == "unreadable"
    ] == [(TRAIN, "unreadable", "the tags of prod.mdc-train could not be read")]


def test_drift_exit_codes_and_what_each_format_says(tmp_path: Path, mldiag: Run, engine: Any) -> None:
    path = str(write(tmp_path))
    engine()
    assert mldiag("drift", path) == (
        0,
        "0 of 4 cluster(s) of prod drifted\n"
        "cluster                         stack                  wave    status    changes\n"
        "kubernetesClusters/onprem-prod  prod.k8s-onprem-prod   canary  no drift  \n"
        "gkeClusters/prod-tpu            prod.gke-prod-tpu      rest    no drift  \n"
        "modelDevelopmentClusters/train  prod.mdc-train         rest    no drift  \n"
        "azureMl/aks-prod                prod.azureml-aks-prod  rest    no drift  \n",
        "",
    )
    engine({TRAIN: Script(refresh="drift")})
    code, out, _ = mldiag("drift", path)
    assert code == 1
    assert out.splitlines()[0] == "1 of 4 cluster(s) of prod drifted"
    assert (
        out.splitlines()[4]
        == "modelDevelopmentClusters/train  prod.mdc-train         rest    drift     update 1"
    )
    assert out.splitlines()[-1] == (
        "  prod.mdc-train: update kubernetes:core/v1:Namespace::mdc-train-ns (metadata)"
    )
    code, out, _ = mldiag("drift", path, "--format", "markdown")
    assert out.splitlines()[:3] == [
        "## Drift of prod: 1 of 4 cluster(s) of prod drifted",
        "",
        "| cluster | stack | wave | status | changes |",
    ]
    assert (
        "| modelDevelopmentClusters/train | prod.mdc-train | rest | drift | update kubernetes:core/v1:Namespace::"
        in out
    )
    engine({TRAIN: Script(refresh="drift"), AKS: Script(refresh="unavailable")})
    code, out, _ = mldiag("drift", path, "--format", "json")
    assert code == 3  # a cluster nobody could read is not known to be as recorded: it wins over drift
    report = json.loads(out)
    assert report["summary"] == "1 of 4 cluster(s) of prod drifted; 1 could not be read"
    assert {c["stack"]: c["status"] for c in report["clusters"]} == {
        ONPREM: "no drift",
        TPU: "no drift",
        TRAIN: "drift",
        AKS: "unreadable",
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["run", "--cluster", "onprem"],
            "error: --cluster: no cluster 'onprem' in this fleet (did "
            "you mean 'onprem-prod'?); clusters: "
            + ", ".join(
                [
                    "kubernetesClusters/onprem-prod",
                    "gkeClusters/prod-tpu",
                    "modelDevelopmentClusters/train",
                    "azureMl/aks-prod",
                ]
            ),
        ),
        (["run", "--approve", "canry"], "error: --approve: no wave 'canry'; waves: canary, rest"),
        (["gate", "--wave", "nope"], "error: --wave: no wave 'nope'; waves: canary, rest"),
        (["drift", "--parallel", "0"], "error: --parallel must be at least 1"),
        (
            ["run", "--policy-pack-config", "nosuch.json"],
            "error: --policy-pack-config: nosuch.json is not a file (a policy pack config, JSON)",
        ),
    ],
)
def test_bad_arguments_are_exit_2_and_nothing_runs(
    tmp_path: Path, mldiag: Run, engine: Any, argv: list[str], message: str
) -> None:
    sim = engine()
    path = write(tmp_path)
    code, out, err = mldiag(argv[0], str(path), *argv[1:])
    assert (code, out, err) == (2, "", message.format(path=path) + "\n")
    assert sim.calls == []


def test_one_cluster_and_one_gate_as_the_workflow_legs_run_them(
    tmp_path: Path, mldiag: Run, engine: Any
) -> None:
    sim = engine()
    path = str(write(tmp_path))
    code, _, err = mldiag("run", path, "--cluster", "train")
    assert (code, err.splitlines()[-1]) == (
        1,
        "error: prod.mdc-train is in wave rest; earlier wave(s) not complete: canary",
    )
    assert mldiag("run", path, "--cluster", "onprem-prod")[0] == 0
    assert mldiag("gate", path, "--wave", "canary")[0] == 0
    assert mldiag("run", path, "--cluster", "modelDevelopmentClusters/train")[0] == 0
    assert sim.deployed() == [ONPREM, TRAIN]


def test_a_relative_policy_pack_config_reaches_the_engine_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pack.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    args = cli._parser().parse_args(["run", str(write(tmp_path)), "--policy-pack-config", "pack.json"])
    executor = cli._executor(cli.load_plan(args), args)
    assert executor.policy_config == tmp_path / "pack.json"
