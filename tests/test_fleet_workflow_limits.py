"""The GitHub workflows of a fleet stay inside GitHub's documented limits at any size (mldiag/fleet/workflow_layout.py):
at 10,000 clusters every leg is written once, no job has more than 256 configurations, no file is over
512,000 bytes, a wave never runs more than its maxParallel legs at once across all of its jobs and files, and
its gate comes after all of them. What cannot fit is cut into runs, or refused with the reason."""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag.fleet import cli, workflow, workflow_layout
from mldiag.fleet.planner import Plan
from tests.fixtures.fleet_shapes import bench_plan


class Graph:
    """Every job of the fleet's files, a reusable workflow's jobs inside the job that calls it."""

    def __init__(self, files: dict[str, str]) -> None:
        self.docs = {name: yaml.safe_load(text) for name, text in files.items()}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.deps: dict[str, set[str]] = {}
        called = {
            job["uses"].rsplit("/", 1)[1]: (name, jid, job)
            for name, doc in self.docs.items()
            for jid, job in doc["jobs"].items()
            if "uses" in job
        }
        for name, doc in self.docs.items():
            caller = called.get(name)
            for jid, job in doc["jobs"].items():
                node = f"{name}:{jid}"
                self.jobs[node] = job
                deps = {f"{name}:{n}" for n in _list(job.get("needs"))}
                if caller is not None and not job.get("needs"):
                    caller_file, _, caller_job = caller
                    deps |= {f"{caller_file}:{n}" for n in _list(caller_job.get("needs"))}
                self.deps[node] = deps
        # a job that needs a caller waits for everything the called workflow runs
        for deps in self.deps.values():
            for d in list(deps):
                job = self.jobs[d]
                if "uses" in job:
                    part = job["uses"].rsplit("/", 1)[1]
                    deps |= {f"{part}:{j}" for j in self.docs[part]["jobs"]}

    def ancestors(self, node: str) -> frozenset[str]:
        @cache
        def up(n: str) -> frozenset[str]:
            out: set[str] = set()
            for d in self.deps[n]:
                out |= {d} | up(d)
            return frozenset(out)

        return up(node)

    def legs_jobs(self) -> dict[str, dict[str, Any]]:
        return {n: j for n, j in self.jobs.items() if "strategy" in j}


def _list(v: Any) -> list[str]:
    return [] if v is None else [v] if isinstance(v, str) else list(v)


def check_limits(plan: Plan, files: dict[str, str]) -> Graph:
    for name, text in files.items():
        assert len(text.encode()) <= workflow_layout.MAX_FILE_BYTES, name
    graph = Graph(files)
    legs = graph.legs_jobs()
    # every leg exactly once
    written = Counter(
        (leg["cluster"], leg["stack"])
        for job in legs.values()
        for leg in job["strategy"]["matrix"]["include"]
    )
    assert written == Counter((m.ref, plan.qualified(m.stack)) for m in plan.members)
    # no job over 256 configurations
    assert max(len(j["strategy"]["matrix"]["include"]) for j in legs.values()) <= 256
    # unique reusable workflows a file calls
    for doc in graph.docs.values():
        assert len({j["uses"] for j in doc["jobs"].values() if "uses" in j}) <= workflow_layout.MAX_REUSABLE
    for i, wave in enumerate(plan.waves, start=1):
        mine = {n for n, j in legs.items() if j["name"].startswith(f"wave {i} {wave.name}")}
        assert sum(len(legs[n]["strategy"]["matrix"]["include"]) for n in mine) == len(wave.members)
        # never more than maxParallel legs of the wave at once: the legs jobs that may run side by side
        # (neither waits for the other) add up to at most maxParallel, whichever of them is looked at
        for n in mine:
            beside = [k for k in mine if n not in graph.ancestors(k) and k not in graph.ancestors(n)]
            assert sum(legs[k]["strategy"]["max-parallel"] for k in beside) <= wave.max_parallel, n
        # its gate comes after every one of them
        (gate,) = [n for n, j in graph.jobs.items() if n.endswith(f":gate-{i}-{wave.name}")]
        assert mine <= graph.ancestors(gate)
    return graph


def test_a_fleet_of_10000_clusters_fits_githubs_limits(tmp_path: Path) -> None:
    plan = bench_plan(tmp_path, 10_000)
    files = workflow.rollout_files(plan, "fleet/bench.yaml", "bench")
    graph = check_limits(plan, files)
    assert len(files) > 2  # the legs did not fit in one file of 500 KB
    assert all(name.startswith("fleet-bench") for name in files)
    jobs = graph.legs_jobs()
    # each wave's jobs run one stage after the other (maxParallel 20 fits in one job's max-parallel)
    assert {j["strategy"]["max-parallel"] for j in jobs.values()} == {20}


def test_a_wave_with_a_maxparallel_over_256_runs_its_jobs_side_by_side_within_it(tmp_path: Path) -> None:
    plan = bench_plan(tmp_path, 10_000, max_parallel=600)
    files = workflow.rollout_files(plan, "fleet/bench.yaml", "bench")
    graph = check_limits(plan, files)
    rest = [j for j in graph.legs_jobs().values() if j["name"].startswith("wave 4 rest")]
    assert sorted({j["strategy"]["max-parallel"] for j in rest}) == [200]  # three at a time: 600


def test_the_1000_cluster_benchmark_shape_fits_in_one_file_its_largest_wave_in_three_jobs(
    tmp_path: Path,
) -> None:
    plan = bench_plan(tmp_path, 1_000)
    files = workflow.rollout_files(plan, "fleet/bench.yaml", "bench")
    assert list(files) == ["fleet-bench.yml"]
    graph = check_limits(plan, files)
    rest = {n: j for n, j in graph.legs_jobs().items() if j["name"].startswith("wave 4 rest")}
    assert [len(j["strategy"]["matrix"]["include"]) for j in rest.values()] == [200, 200, 199]
    assert [j["needs"] for j in rest.values()] == ["gate-3-main", "wave-4-rest-1", "wave-4-rest-2"]
    # a wave that tolerates failures goes on after failed legs; its gate counts them over the whole wave
    assert rest["fleet-bench.yml:wave-4-rest-2"]["if"] == (
        "${{ !cancelled() && needs.wave-4-rest-1.result != 'skipped' }}"
    )


def test_a_wave_that_tolerates_no_failure_stops_at_the_first_failed_job(tmp_path: Path) -> None:
    plan = bench_plan(tmp_path, 1_000, extra=", failureTolerance: 0")
    jobs = yaml.safe_load(workflow.rollout_files(plan, "fleet/bench.yaml", "bench")["fleet-bench.yml"])[
        "jobs"
    ]
    assert jobs["wave-4-rest-2"]["if"] == "${{ !cancelled() && needs.wave-4-rest-1.result == 'success' }}"
    assert jobs["wave-4-rest-2"]["strategy"]["fail-fast"] is True
    assert jobs["gate-4-rest"]["needs"] == ["wave-4-rest-1", "wave-4-rest-3"]
    assert jobs["gate-4-rest"]["if"] == "${{ !cancelled() && needs.wave-4-rest-1.result != 'skipped' }}"


def test_approvals_that_cannot_wait_in_one_run_are_cut_into_runs_each_starting_the_next(
    tmp_path: Path,
) -> None:
    # every wave waits for an approval (up to 30 days each): one run cannot hold two
    plan = bench_plan(tmp_path, 40, extra=", gate: {approval: true}")
    files = workflow.rollout_files(plan, "fleet/bench.yaml", "bench")
    assert list(files) == [
        "fleet-bench.yml",
        "fleet-bench-run-2.yml",
        "fleet-bench-run-3.yml",
        "fleet-bench-run-4.yml",
    ]
    docs = {n: yaml.safe_load(t) for n, t in files.items()}
    first = docs["fleet-bench.yml"]["jobs"]
    assert list(first) == [
        "plan",
        "wave-1-canary",
        "gate-1-canary",
        "approve-1-canary",
        "wave-2-early",
        "gate-2-early",
        "next-run",
    ]
    assert first["next-run"]["needs"] == "gate-2-early"
    assert first["next-run"]["if"] == "${{ !cancelled() && needs.gate-2-early.result == 'success' }}"
    assert first["next-run"]["permissions"] == {"actions": "write"}
    assert 'gh workflow run fleet-bench-run-2.yml --ref "$REF"' in first["next-run"]["steps"][0]["run"]
    second = docs["fleet-bench-run-2.yml"]
    assert second["name"] == "Fleet rollout (bench), run 2 of 4"
    assert second["concurrency"] == {"group": "fleet-bench", "cancel-in-progress": False}
    # the next run begins with the approval its wave waits for, up to 30 days
    assert list(second["jobs"]) == ["plan", "approve-2-early", "wave-3-main", "gate-3-main", "next-run"]
    assert second["jobs"]["approve-2-early"]["needs"] == "plan"
    assert "if" not in second["jobs"]["approve-2-early"]
    assert "next-run" not in docs["fleet-bench-run-4.yml"]["jobs"]
    for name, doc in docs.items():
        run_minutes = sum(
            int(j.get("timeout-minutes", 0))
            * -(-len(j["strategy"]["matrix"]["include"]) // j["strategy"]["max-parallel"])
            if "strategy" in j
            else int(j.get("timeout-minutes", 0))
            for j in doc["jobs"].values()
        )
        approvals = sum(
            1 for j in doc["jobs"].values() if str(j.get("environment", "")).endswith("-fleet-approval")
        )
        assert (
            run_minutes + approvals * workflow_layout.MAX_APPROVAL_MINUTES <= workflow_layout.MAX_RUN_MINUTES
        ), name


def test_a_soak_longer_than_a_job_waits_in_an_environment_wait_timer(tmp_path: Path) -> None:
    plan = bench_plan(tmp_path, 40, extra=", soak: 2d")
    jobs = yaml.safe_load(workflow.rollout_files(plan, "fleet/bench.yaml", "bench")["fleet-bench.yml"])[
        "jobs"
    ]
    soak = jobs["soak-1-canary"]
    assert soak["environment"] == "bench-fleet-soak-2d"
    assert soak["needs"] == "wave-1-canary"
    assert soak["if"] == "${{ !cancelled() && needs.wave-1-canary.result != 'skipped' }}"
    gate = jobs["gate-1-canary"]
    assert (gate["needs"], gate["timeout-minutes"]) == ("soak-1-canary", 60)
    assert "--wave canary --max-wait 270m" in next(
        s["run"] for s in gate["steps"] if "fleet gate" in s.get("run", "")
    )
    short = bench_plan(tmp_path, 40, extra=", soak: 4h")
    jobs = yaml.safe_load(workflow.rollout_files(short, "fleet/bench.yaml", "bench")["fleet-bench.yml"])[
        "jobs"
    ]
    assert "soak-1-canary" not in jobs and jobs["gate-1-canary"]["timeout-minutes"] == 300


@pytest.mark.parametrize(
    ("extra", "max_parallel", "message"),
    [
        (
            ", gate: {verifyWait: 3h}",
            20,
            "waves[0] (canary): gate.verifyWait 3h makes a leg's job up to 450 minutes, longer than the 6 hours GitHub "
            "runs a job on its hosted runners; on GitHub Actions verifyWait is at most 2h15m (`mldiag fleet run` has "
            "no such limit)",
        ),
        (
            ", gate: {verifyWait: 2h}",
            1,
            "waves[3] (rest): a stage of 200 legs at most 1 at once may take up to 45.8 days, longer than the 35 days "
            "GitHub lets one workflow run last; raise the wave's maxParallel or lower its gate.verifyWait or soak",
        ),
    ],
)
def test_a_wave_github_cannot_run_is_refused_with_the_limit_it_passes(
    tmp_path: Path, extra: str, max_parallel: int, message: str
) -> None:
    plan = bench_plan(tmp_path, 1_000, extra=extra, max_parallel=max_parallel)
    with pytest.raises(workflow_layout.WorkflowLimitError) as e:
        workflow.rollout_files(plan, "fleet/bench.yaml", "bench")
    assert str(e.value) == message


def test_check_fails_on_a_file_no_fleet_generates_any_more_and_write_removes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mldiag.common import ROOT

    project = tmp_path / "project"
    for rel in ("Pulumi.yaml", "__main__.py", "requirements.txt", "program", "components", "stacks", "fleet"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).symlink_to(ROOT / rel)
    assert cli.main(["workflow", "--write", "--project-dir", str(project)]) == 0
    folder = project / ".github" / "workflows"
    left = folder / "fleet-prod-part-1.yml"
    left.write_text(workflow.GENERATED_MARK + " from fleet/prod.yaml: a part of a bigger fleet\n")
    (folder / "fleet-other.yml").write_text("# someone's own workflow\n")
    capsys.readouterr()
    assert cli.main(["workflow", "--check", "--project-dir", str(project)]) == 1
    assert capsys.readouterr().err == (
        "error: not the generated workflow(s): .github/workflows/fleet-prod-part-1.yml (no fleet generates it any "
        "more); run `mldiag fleet workflow --write`\n"
    )
    assert cli.main(["workflow", "--write", "--project-dir", str(project)]) == 0
    assert not left.exists() and (folder / "fleet-other.yml").exists()
    assert cli.main(["workflow", "--check", "--project-dir", str(project)]) == 0
