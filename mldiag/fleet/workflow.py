"""The GitHub Actions engine of a fleet: workflows generated from the fleet file, committed beside the others.

    mldiag fleet workflow --write      # .github/workflows/fleet-<name>.yml per fleet/<name>.yaml (and, for a large
                                       # fleet, its other runs and parts), fleet-drift.yml
    mldiag fleet workflow --check      # exit 1 when a committed file is not the generated one, or is left over

GitHub runs the rollout; the jobs call `mldiag fleet`, which keeps progress in the member stacks' tags:
- each wave's legs (`mldiag fleet run --cluster`: a cluster's update, then its gate) in matrix jobs that stay
  inside GitHub's limits (mldiag/fleet/workflow_layout.py: 256 legs a job, stages holding maxParallel);
- each leg in the concurrency group of its stack (`pulumi-up-<stack>`, as deploy-stack.yml names them),
  the whole workflow in one group per environment: two rollouts of it never run at once;
- after each wave its gate job (`mldiag fleet gate`: the tolerance over what the legs recorded, the soak,
  verify once more), then, when the wave asks for approval, a job in the GitHub environment
  `<environment>-fleet-approval` (give it required reviewers) that records the approval;
- waves chained with `needs:`; a later wave runs only when the previous gate (or approval) succeeded;
- a run's file, its parts (reusable workflows holding its legs jobs, when they pass 500 KB) and its next run
  (when the rollout could outlast a run's 35 days) are written here; the jobs' text is mldiag/fleet/workflow_jobs.py.

`mldiag fleet drift` runs on a schedule in fleet-drift.yml (`drift_workflow`), with the read-only identity.
"""

from __future__ import annotations

from pathlib import Path

from mldiag.common import ROOT
from mldiag.fleet import workflow_jobs as job_text
from mldiag.fleet import workflow_layout as layout
from mldiag.fleet.planner import Plan
from mldiag.fleet.workflow_jobs import soak_environment
from mldiag.fleet.workflow_layout import WorkflowLimitError

__all__ = ["WorkflowLimitError", "generated", "rollout_files", "soak_environment", "stale_generated"]

WORKFLOWS = Path(".github") / "workflows"
DRIFT_WORKFLOW = "fleet-drift.yml"


def workflow_name(fleet: Path) -> str:
    return f"fleet-{fleet.stem}.yml"


class _Writer:
    """One run's workflow file (and, when its legs do not fit in it, its part files)."""

    next_step: layout.Step
    """The first step of the next run (when there is one)."""

    def __init__(
        self,
        plan: Plan,
        fleet_rel: str,
        stem: str,
        run: layout.Run,
        total: int,
        first_part: int,
        cache: job_text.Rendered | None = None,
    ) -> None:
        self.plan, self.fleet_rel, self.stem, self.run, self.total = plan, fleet_rel, stem, run, total
        self.first_part = first_part
        self.cache: job_text.Rendered = {} if cache is None else cache

    def file_name(self, number: int) -> str:
        return f"fleet-{self.stem}.yml" if number == 1 else f"fleet-{self.stem}-run-{number}.yml"

    def write(self, parts: bool) -> tuple[str, dict[str, str]]:
        env = self.plan.environment_stack
        r = self.run.number
        title = f"Fleet rollout ({env})" + (f", run {r} of {self.total}" if self.total > 1 else "")
        what = (
            "The rollout of the fleet's waves on GitHub Actions: each wave's legs in\n"
            "# matrix jobs of at most 256, then its gate (docs/fleet.md). Progress lives in the member stacks' tags, so a\n"
            "# rerun resumes at the first unfinished wave. Credentials are OIDC only, as in deploy-stack.yml."
        )
        if self.total > 1:
            what += (
                f"\n# Run {r} of {self.total}: GitHub stops a run after 35 days, so the rollout is cut into runs"
                + (f"; the last job starts {self.file_name(r + 1)}." if r < self.total else ".")
            )
        out = job_text.header(
            self.plan, self.fleet_rel, title, what, ["  workflow_dispatch:", "  workflow_call:"]
        )
        out += [
            "concurrency:",
            f"  # One rollout of {env} at a time; never cancel one that runs.",
            f"  group: fleet-{env}",
            "  cancel-in-progress: false",
            "",
            "jobs:",
            *job_text.plan_job(self.fleet_rel),
        ]
        files: dict[str, str] = {}
        before = ["plan"]
        first_of_wave: dict[int, list[str]] = {}
        steps = self.run.steps
        k = 0
        while k < len(steps):
            step = steps[k]
            w, i = step.wave, step.wave_number
            if step.kind == "legs":
                block = [step]
                while k + 1 < len(steps) and steps[k + 1].kind == "legs" and steps[k + 1].wave_number == i:
                    k += 1
                    block.append(steps[k])
                if parts:
                    lines, before, files_made = self._parts(block, before, first_of_wave, len(files))
                    files.update(files_made)
                else:
                    lines, before = self._inline(block, before, first_of_wave)
                out += lines
            elif step.kind == "soak":
                out += job_text.soak_job(w, i, before, self._gate_condition(i, first_of_wave), env)
                before = [layout.job_id("soak", i, w.name)]
            elif step.kind == "gate":
                timer = layout.soak_in_timer(w)
                needs = before if timer else list(dict.fromkeys(first_of_wave.get(i, []) + before))
                condition = job_text.succeeded(before[0]) if timer else self._gate_condition(i, first_of_wave)
                out += job_text.gate_job(w, i, needs, condition, self.plan, self.fleet_rel, timer)
                before = [layout.job_id("gate", i, w.name)]
            else:
                after = None if before == ["plan"] else job_text.succeeded(before[0])
                out += job_text.approval_job(w, i, before, after, self.plan, self.fleet_rel)
                before = [layout.job_id("approve", i, w.name)]
            k += 1
        if r < self.total:
            condition = self._condition_of(self.next_step, before)
            out += job_text.next_run_job(before, condition, self.file_name(r + 1), r + 1, self.total)
        return "\n".join(out) + "\n", files

    @staticmethod
    def _condition_of(step: layout.Step, before: list[str]) -> str:
        if step.kind == "legs" and not step.first_of_wave:
            return job_text.stage_condition(step.wave, before)
        return job_text.succeeded(before[0])

    @staticmethod
    def _gate_condition(i: int, first_of_wave: dict[int, list[str]]) -> str:
        first = first_of_wave.get(i)
        if not first:
            return "${{ !cancelled() }}"  # the wave began in the run before this one
        return f"${{{{ !cancelled() && needs.{first[0]}.result != 'skipped' }}}}"

    def _entry_condition(self, step: layout.Step, before: list[str]) -> str | None:
        if before == ["plan"]:
            return None  # the first step of a run: the run before started this one only when it passed
        return self._condition_of(step, before)

    def _inline(
        self, block: list[layout.Step], before: list[str], first_of_wave: dict[int, list[str]]
    ) -> tuple[list[str], list[str]]:
        out: list[str] = []
        for step in block:
            assert step.stage is not None
            condition = self._entry_condition(step, before)
            for job in step.stage.jobs:
                out += job_text.legs_job(job, before, condition, self.plan, self.fleet_rel, self.cache)
            before = [j.job_id for j in step.stage.jobs]
            if step.first_of_wave:
                first_of_wave[step.wave_number] = before
        return out, before

    def _parts(
        self, block: list[layout.Step], before: list[str], first_of_wave: dict[int, list[str]], made: int
    ) -> tuple[list[str], list[str], dict[str, str]]:
        """The block's stages packed into part files, each called by one job of this run's file."""
        out: list[str] = []
        files: dict[str, str] = {}
        w, i = block[0].wave, block[0].wave_number
        groups: list[list[layout.Step]] = [[]]
        room = layout.FILE_BUDGET - size(self._part_text([], 0))
        filled = 0
        for step in block:
            # a stage's jobs as the first stage of a part writes them, and room for the needs and if of a later one
            assert step.stage is not None
            jobs = step.stage.jobs
            lines = [
                ln
                for j in jobs
                for ln in job_text.legs_job(j, [], None, self.plan, self.fleet_rel, self.cache)
            ]
            grown = sum(size(ln) + 1 for ln in lines) + job_text.NEEDS_ROOM * len(jobs)
            if groups[-1] and filled + grown > room:
                groups.append([])
                filled = 0
            groups[-1].append(step)
            filled += grown
        for group in groups:
            number = self.first_part + made + len(files)
            name = f"fleet-{self.stem}-part-{number}.yml"
            files[name] = self._part_text(group, number)
            job = f"{layout.job_id('wave', i, w.name)}-part-{number}"
            called = [j for s in group for j in s.stage.jobs]  # type: ignore[union-attr]
            condition = self._entry_condition(group[0], before)
            out += job_text.part_call_job(
                job, name, w, i, before, condition, called[0].number, called[-1].number
            )
            before = [job]
            if group[0].first_of_wave:
                first_of_wave[i] = before
        return out, before, files

    def _part_text(self, group: list[layout.Step], number: int) -> str:
        """A part file of these stages (`[]`: its header alone, as long as any part's)."""
        jobs = [j for s in group for j in s.stage.jobs]  # type: ignore[union-attr]
        w, i = (group[0].wave, group[0].wave_number) if group else (self.plan.waves[0], 999)
        first, last = (jobs[0].number, jobs[-1].number) if jobs else (9999, 9999)
        what = (
            f"Legs jobs {first}-{last} of\n# wave {i} {w.name}, called by the rollout "
            f"workflow (a file of its own: GitHub starts no run of a workflow file over 500 KB)."
        )
        out = job_text.header(
            self.plan,
            self.fleet_rel,
            f"Fleet rollout ({self.plan.environment_stack}), part {number}",
            what,
            ["  workflow_call:"],
        )
        out.append("jobs:")
        before: list[str] = []
        for step in group:
            assert step.stage is not None
            condition = job_text.stage_condition(w, before) if before else None
            for job in step.stage.jobs:
                out += job_text.legs_job(job, before, condition, self.plan, self.fleet_rel, self.cache)
            before = [j.job_id for j in step.stage.jobs]
        return "\n".join(out) + "\n"


def rollout_files(plan: Plan, fleet_rel: str, stem: str) -> dict[str, str]:
    """Every workflow file of the fleet's rollout: file name -> text (WorkflowLimitError when it cannot fit)."""
    pending = layout.runs(plan)
    done: list[tuple[layout.Run, bool]] = []
    cache: job_text.Rendered = {}
    files: dict[str, str] = {}
    while pending:
        run = pending.pop(0)
        # a leg takes at least 50 bytes: a run with more legs than that fits is written with parts at once
        modes = (True,) if sum(s.legs for s in run.steps) * 50 > layout.FILE_BUDGET else (False, True)
        for parts in modes:
            writer = _Writer(plan, fleet_rel, stem, run, 1, 1, cache)
            text, made = writer.write(parts)
            if size(text) <= layout.FILE_BUDGET and len(made) <= layout.MAX_REUSABLE:
                done.append((run, parts))
                files = {writer.file_name(1): text, **made}
                break
        else:
            pending[:0] = list(layout.halves(run))
    if len(done) > 1:  # written again: each run's title, number and the job that starts the next
        files = {}
        part = 1
        for n, (run, parts) in enumerate(done, start=1):
            run.number = n
            writer = _Writer(plan, fleet_rel, stem, run, len(done), part, cache)
            if n < len(done):
                writer.next_step = done[n][0].steps[0]
            text, made = writer.write(parts)
            if size(text) > layout.FILE_BUDGET and not parts:
                text, made = writer.write(parts=True)
            part += len(made)
            files[writer.file_name(n)] = text
            files.update(made)
    for name, text in files.items():
        if size(text) > layout.MAX_FILE_BYTES:  # never, by the budgets above: a last guard
            raise WorkflowLimitError(f"{name} would be {size(text):,} bytes, over GitHub's 500 KB")
    return files


def size(text: str) -> int:
    """The text's bytes in UTF-8 (an ASCII text, as a workflow nearly always is, is not encoded to count them)."""
    return len(text) if text.isascii() else len(text.encode())


def drift_workflow(fleets: list[tuple[str, Plan]]) -> str:
    out = [
        "# Generated by `mldiag fleet workflow --write`: do not edit (a test regenerates it).",
        "# Fleet drift, every day: `pulumi refresh --preview-only` of every member stack of each fleet",
        "# (`mldiag fleet drift`), read-only, with the preview identity. The job fails on drift (exit 1) or",
        "# on a stack that could not be read (exit 3); the report is in the job summary.",
        "name: Fleet drift",
        "",
        "on:",
        "  schedule:",
        '    - cron: "17 5 * * *"',
        "  workflow_dispatch:",
        "",
        "permissions:",
        "  contents: read",
        "",
        "concurrency:",
        "  group: fleet-drift",
        "  cancel-in-progress: false",
        "",
        "jobs:",
        "  drift:",
        '    name: "drift of ${{ matrix.fleet }}"',
        "    runs-on: ubuntu-latest",
        "    timeout-minutes: 60",
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        "    strategy:",
        "      fail-fast: false",
        "      matrix:",
        "        fleet:",
        *(f"          - {rel}" for rel, _ in fleets),
        "    steps:",
        *job_text.setup("preview"),
    ]
    out += job_text.report_step(
        "Drift of every member stack",
        '.venv/bin/mldiag fleet drift "$FLEET"',
        job_text.env("preview", {"FLEET": "${{ matrix.fleet }}"}),
    )
    return "\n".join(out) + "\n"


GENERATED_MARK = "# Generated by `mldiag fleet workflow --write`"


def stale_generated(project_dir: Path, files: dict[Path, str]) -> list[Path]:
    """Workflow files this generator wrote once that it no longer makes (a fleet grown smaller, one removed)."""
    folder = project_dir / WORKFLOWS
    found = sorted(folder.glob("fleet-*.yml")) if folder.is_dir() else []
    return [
        WORKFLOWS / p.name
        for p in found
        if WORKFLOWS / p.name not in files and p.read_text(errors="replace").startswith(GENERATED_MARK)
    ]


def generated(project_dir: Path = ROOT) -> dict[Path, str]:
    """Every workflow the fleet files of `project_dir/fleet/` generate: path (relative) -> text."""
    from mldiag.fleet.picture import FLEET_DIR
    from mldiag.fleet.planner import load

    fleets = []
    out: dict[Path, str] = {}
    for f in sorted((project_dir / FLEET_DIR).glob("*.yaml")):
        rel = str(f.relative_to(project_dir))
        plan = load(f, project_dir)
        fleets.append((rel, plan))
        for name, text in rollout_files(plan, rel, f.stem).items():
            out[WORKFLOWS / name] = text
    if fleets:
        out[WORKFLOWS / DRIFT_WORKFLOW] = drift_workflow(fleets)
    return out
