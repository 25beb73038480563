"""The GitHub Actions engine of a fleet (mldiag/fleet/workflow.py): the committed workflows are exactly what the
generator makes from fleet/*.yaml now, their jobs follow the fleet's waves, and actionlint accepts them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag.common import ROOT
from mldiag.fleet import cli, model, planner, workflow
from mldiag.fleet.planner import EnvTarget, resolve
from tests.fixtures.tools import actionlint, need_command

WORKFLOWS = ROOT / ".github" / "workflows"
PROD = planner.load(ROOT / "fleet" / "prod.yaml", ROOT)


def test_the_committed_workflows_are_the_generated_ones() -> None:
    generated = workflow.generated(ROOT)
    assert sorted(str(p) for p in generated) == [
        ".github/workflows/fleet-drift.yml",
        ".github/workflows/fleet-prod.yml",
    ]
    for rel, text in generated.items():
        assert (ROOT / rel).read_text() == text, f"{rel} is stale: run `mldiag fleet workflow --write`"


def jobs(text: str) -> dict[str, Any]:
    return yaml.safe_load(text)["jobs"]


def step_running(job: dict[str, Any], command: str) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if command in s.get("run", "")]
    return step


def test_one_matrix_job_per_wave_then_its_gate_chained_with_needs() -> None:
    wf = yaml.safe_load((WORKFLOWS / "fleet-prod.yml").read_text())
    assert wf["concurrency"] == {"group": "fleet-prod", "cancel-in-progress": False}
    assert wf["permissions"] == {"contents": "read"}
    j = wf["jobs"]
    assert {k: v.get("needs") for k, v in j.items()} == {
        "plan": None,
        "wave-1-canary": "plan",
        "gate-1-canary": "wave-1-canary",
        "wave-2-main": "gate-1-canary",
        "gate-2-main": "wave-2-main",
        "approve-2-main": "gate-2-main",
        "wave-3-last": "approve-2-main",
        "gate-3-last": "wave-3-last",
    }
    for wave in PROD.waves:
        i = PROD.waves.index(wave) + 1
        leg = j[f"wave-{i}-{wave.name}"]
        assert leg["strategy"]["max-parallel"] == wave.max_parallel
        assert leg["strategy"]["fail-fast"] is (wave.tolerance == 0)
        assert leg["strategy"]["matrix"]["include"] == [
            {"cluster": m.ref, "stack": m.stack} for m in wave.members
        ]
        assert leg["concurrency"] == {"group": "pulumi-up-${{ matrix.stack }}", "cancel-in-progress": False}
        assert leg["environment"] == "prod"
        assert leg["permissions"] == {"contents": "read", "id-token": "write"}
        run = step_running(leg, "mldiag fleet run")
        assert run["env"]["CLUSTER"] == "${{ matrix.cluster }}"
        assert '.venv/bin/mldiag fleet run fleet/prod.yaml --cluster "$CLUSTER"' in run["run"]
        assert run["run"].rstrip().endswith("exit $code")
        gate = j[f"gate-{i}-{wave.name}"]
        assert gate["if"] == f"${{{{ !cancelled() && needs.wave-{i}-{wave.name}.result != 'skipped' }}}}"
        assert (
            f".venv/bin/mldiag fleet gate fleet/prod.yaml --wave {wave.name} --format markdown"
            in (step_running(gate, "mldiag fleet gate")["run"])
        )
    approve = j["approve-2-main"]
    assert approve["environment"] == "prod-fleet-approval"  # its required reviewers are the approval
    assert "--wave main --approve" in step_running(approve, "mldiag fleet gate")["run"]
    assert "if" not in j["wave-1-canary"]
    assert j["wave-2-main"]["if"] == "${{ !cancelled() && needs.gate-1-canary.result == 'success' }}"
    assert j["wave-3-last"]["if"] == "${{ !cancelled() && needs.approve-2-main.result == 'success' }}"


def test_a_wave_with_a_tolerance_lets_its_other_legs_finish(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "environment: lab\norganization: acme\nwaves:\n"
        "  - {name: canary, targets: [a]}\n"
        "  - {name: rest, targets: [b, c, d], maxParallel: 2, failureTolerance: 34%}\n"
    )
    targets = [EnvTarget("kubernetesClusters", n, "k8s", {}) for n in "abcd"]
    plan = resolve(model.read(path), "dev", targets)
    j = jobs(workflow.rollout_files(plan, "fleet/lab.yaml", "lab")["fleet-lab.yml"])
    assert j["wave-1-canary"]["strategy"]["fail-fast"] is True
    assert (j["wave-2-rest"]["strategy"]["fail-fast"], j["wave-2-rest"]["strategy"]["max-parallel"]) == (
        False,
        2,
    )
    assert [x["stack"] for x in j["wave-2-rest"]["strategy"]["matrix"]["include"]] == [
        "acme/ml-diagnostics/lab.k8s-b",
        "acme/ml-diagnostics/lab.k8s-c",
        "acme/ml-diagnostics/lab.k8s-d",
    ]
    assert j["wave-2-rest"]["needs"] == "gate-1-canary"
    assert "approve-1-canary" not in j


def test_drift_runs_every_day_read_only_for_every_fleet() -> None:
    wf = yaml.safe_load((WORKFLOWS / "fleet-drift.yml").read_text())
    on = wf.get("on", wf.get(True))
    assert on == {"schedule": [{"cron": "17 5 * * *"}], "workflow_dispatch": None}
    job = wf["jobs"]["drift"]
    assert job["strategy"] == {"fail-fast": False, "matrix": {"fleet": ["fleet/prod.yaml"]}}
    step = step_running(job, "mldiag fleet drift")
    assert step["env"]["FLEET"] == "${{ matrix.fleet }}"
    assert step["env"]["ARM_CLIENT_ID"] == "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"
    auth = next(s for s in job["steps"] if s.get("uses", "").startswith("pulumi/auth-actions@"))
    assert auth["with"]["requested-token-type"] == "urn:pulumi:token-type:access_token:team"
    assert "DEPLOY" not in (WORKFLOWS / "fleet-drift.yml").read_text()


def test_actionlint_accepts_the_generated_workflows(tmp_path: Path) -> None:
    exe = actionlint()
    files = [str(WORKFLOWS / "fleet-prod.yml"), str(WORKFLOWS / "fleet-drift.yml")]
    # with shellcheck on PATH actionlint also checks every `run:` script
    res = subprocess.run([exe, "-no-color", *files], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    text = (WORKFLOWS / "fleet-prod.yml").read_text().replace("needs: gate-1-canary", "needs: gate-1-canry")
    broken.write_text(text)
    res = subprocess.run([exe, "-no-color", str(broken)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert (
        'job "wave-2-main" needs job "gate-1-canry" which does not exist in this workflow [job-needs]'
        in res.stdout
    )


def test_shellcheck_is_what_checks_the_run_scripts() -> None:
    need_command("shellcheck", "shellcheck is not installed: actionlint checks no `run:` script without it")
    for text in workflow.generated(ROOT).values():
        for job in jobs(text).values():
            for step in job["steps"]:
                if "run" in step:
                    res = subprocess.run(
                        ["shellcheck", "-s", "bash", "-"], input=step["run"], capture_output=True, text=True
                    )
                    assert res.returncode == 0, (step.get("name"), res.stdout)


def test_workflow_check_says_which_file_is_not_the_generated_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def mldiag(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    assert mldiag("workflow", "--check") == (0, "", "")
    for rel in ("Pulumi.yaml", "stacks/Pulumi.prod.yaml", "fleet/prod.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    code, _, err = mldiag("workflow", "--check", "--project-dir", str(tmp_path))
    assert (code, err) == (
        1,
        "error: not the generated workflow(s): .github/workflows/fleet-prod.yml, .github/workflows/fleet-drift.yml; "
        "run `mldiag fleet workflow --write`\n",
    )
    assert mldiag("workflow", "--write", "--project-dir", str(tmp_path))[0] == 0
    assert mldiag("workflow", "--check", "--project-dir", str(tmp_path)) == (0, "", "")
