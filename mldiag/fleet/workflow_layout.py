"""How a fleet's legs fit GitHub Actions: its documented limits, and the jobs, files and runs that stay inside them.

The rollout workflow (mldiag/fleet/workflow.py) writes every leg (one cluster's `mldiag fleet run --cluster`)
into a matrix job. GitHub refuses or stops what passes its limits (docs/fleet.md, "GitHub's limits"), so:

- a wave's legs go into as many matrix jobs as it needs, at most 256 configurations each (balanced);
- the jobs of a wave run in stages: a stage's jobs side by side, their `max-parallel` adding up to the wave's
  `maxParallel` (one job per 256 of it), the next stage after the whole stage: never more legs of one wave at
  once than `maxParallel`;
- a rollout whose jobs (each bounded by its `timeout-minutes`), soaks and approval waits could outlast one run's
  35 days is cut into runs, each a workflow of its own, the last job of one starting the next;
- a run whose file would pass 500 KB moves its matrix jobs into reusable workflows ("parts"), at most 50;
- a soak longer than a job may run waits in a GitHub environment's wait timer instead of in its gate job.

What cannot fit at all (a leg longer than a job may run, a stage longer than a run) is refused, naming the wave
and the limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mldiag.fleet.model import format_duration
from mldiag.fleet.planner import Member, Plan, Wave

# GitHub's documented limits (https://docs.github.com/en/actions/reference/limits, .../usage-limits for the job
# time of hosted runners, .../reusing-workflow-configurations for reusable workflows).
MAX_CONFIGURATIONS = 256
"""A job's strategy may produce at most this many configurations (its matrix legs)."""
MAX_FILE_BYTES = 512_000
"""A workflow file larger than 500 KB starts no run, and says nothing."""
MAX_RUN_MINUTES = 35 * 24 * 60
"""A workflow run is cancelled after 35 days, waiting on approvals included."""
MAX_APPROVAL_MINUTES = 30 * 24 * 60
"""A job waits at most 30 days on its environment's required reviewers."""
MAX_JOB_MINUTES = 6 * 60
"""A job on a GitHub-hosted runner is stopped after 6 hours."""
MAX_WAIT_TIMER_MINUTES = 30 * 24 * 60
"""An environment's wait timer: at most 43,200 minutes."""
MAX_REUSABLE = 50
"""Unique reusable workflows one workflow file may call (nested calls included)."""
MAX_CHECK_RUNS = 50_000
"""Check runs of one check suite: every job of a run, each matrix leg one."""
MAX_RERUNS = 50
"""A run may be re-run (whole, or its failed jobs) at most 50 times."""

FILE_BUDGET = 480_000
"""What the generator fills a file to: the rest of MAX_FILE_BYTES is margin."""
GATE_MINUTES = 60
"""A gate job's time besides its soak (setup, the tolerance, verify once more)."""
APPROVAL_JOB_MINUTES = 30
SOAK_IN_JOB_MINUTES = MAX_JOB_MINUTES - GATE_MINUTES - 30
"""The longest soak a gate job sleeps itself; a longer one waits in an environment's wait timer."""


class WorkflowLimitError(Exception):
    """The fleet cannot be rolled out within GitHub's limits; the message says which and what to change."""


def leg_minutes(wave: Wave) -> int:
    """A leg's `timeout-minutes`: its updates (a manual -> managed switch takes two), then verify's wait."""
    return 30 + (wave.gate.verify_wait // 60) * 2 + 60


def balanced(n: int, size: int) -> list[int]:
    """`n` split into the fewest chunks of at most `size`, as even as they come."""
    count = -(-n // size)
    return [n // count + (1 if i < n % count else 0) for i in range(count)] if n else []


@dataclass(frozen=True)
class LegsJob:
    """One matrix job: some legs of one wave."""

    wave: Wave
    wave_number: int
    job_id: str
    number: int
    """Its place among the wave's jobs (1-based)."""
    of: int
    """How many jobs the wave has."""
    members: tuple[Member, ...]
    max_parallel: int

    @property
    def minutes(self) -> int:
        """The longest it may run: its legs in rounds of max-parallel, each up to its timeout."""
        return -(-len(self.members) // self.max_parallel) * leg_minutes(self.wave)


@dataclass(frozen=True)
class Stage:
    """Matrix jobs of one wave that run side by side; the wave's next stage starts after all of them."""

    jobs: tuple[LegsJob, ...]

    @property
    def minutes(self) -> int:
        return max(j.minutes for j in self.jobs)


@dataclass(frozen=True)
class Step:
    """A link of the rollout's chain: a stage of legs, a wave's soak, its gate, or its approval."""

    kind: str
    """legs | soak | gate | approval"""
    wave: Wave
    wave_number: int
    stage: Stage | None = None
    first_of_wave: bool = False
    """For legs: the wave's first stage."""

    @property
    def minutes(self) -> int:
        if self.kind == "legs":
            assert self.stage is not None
            return self.stage.minutes
        if self.kind == "soak":
            return self.wave.soak // 60 + 10
        if self.kind == "gate":
            return gate_minutes(self.wave)
        return MAX_APPROVAL_MINUTES + APPROVAL_JOB_MINUTES

    @property
    def legs(self) -> int:
        return sum(len(j.members) for j in self.stage.jobs) if self.stage else 0

    @property
    def jobs(self) -> int:
        return self.legs if self.stage else 1


def soak_in_timer(wave: Wave) -> bool:
    """The wave's soak waits in an environment's wait timer (too long for its gate job to sleep)."""
    return wave.soak // 60 > SOAK_IN_JOB_MINUTES


def gate_minutes(wave: Wave) -> int:
    return GATE_MINUTES if soak_in_timer(wave) else 30 + wave.soak // 60 + 30


PLAN_MINUTES = 15


@dataclass
class Run:
    """One workflow run: the steps it takes, in order, in units a run may start with (a stage of legs; an
    approval), the last stage of a wave keeping its soak and gate."""

    number: int
    units: list[list[Step]] = field(default_factory=list)

    @property
    def steps(self) -> list[Step]:
        return [s for u in self.units for s in u]

    @property
    def minutes(self) -> int:
        return PLAN_MINUTES + sum(s.minutes for s in self.steps)

    @property
    def jobs(self) -> int:
        return sum(s.jobs for s in self.steps)


def job_id(prefix: str, wave_number: int, wave: str, number: int = 0) -> str:
    base = f"{prefix}-{wave_number}-{wave}"
    return f"{base}-{number}" if number else base


def stages(wave: Wave, wave_number: int) -> list[Stage]:
    """The wave's matrix jobs in stages (module docstring)."""
    sizes = balanced(len(wave.members), MAX_CONFIGURATIONS)
    lanes = min(len(sizes), -(-wave.max_parallel // MAX_CONFIGURATIONS))
    shares = balanced(wave.max_parallel, -(-wave.max_parallel // lanes)) if lanes else []
    jobs: list[LegsJob] = []
    start = 0
    for i, size in enumerate(sizes):
        members = wave.members[start : start + size]
        start += size
        jobs.append(
            LegsJob(
                wave,
                wave_number,
                job_id("wave", wave_number, wave.name, i + 1 if len(sizes) > 1 else 0),
                i + 1,
                len(sizes),
                members,
                shares[i % lanes],
            )
        )
    return [Stage(tuple(jobs[i : i + lanes])) for i in range(0, len(jobs), lanes)]


def steps(plan: Plan) -> list[Step]:
    """The rollout as a chain of steps; WorkflowLimitError for a wave GitHub cannot run."""
    out: list[Step] = []
    for i, w in enumerate(plan.waves, start=1):
        _check_wave(w, i)
        for j, stage in enumerate(stages(w, i)):
            out.append(Step("legs", w, i, stage, first_of_wave=j == 0))
        if soak_in_timer(w):
            out.append(Step("soak", w, i))
        out.append(Step("gate", w, i))
        if w.gate.approval:
            out.append(Step("approval", w, i))
    return out


def _check_wave(w: Wave, number: int) -> None:
    where = f"waves[{number - 1}] ({w.name})"
    if leg_minutes(w) > MAX_JOB_MINUTES:
        longest = (MAX_JOB_MINUTES - 90) // 2 * 60
        raise WorkflowLimitError(
            f"{where}: gate.verifyWait {format_duration(w.gate.verify_wait)} makes a leg's job up to "
            f"{leg_minutes(w)} minutes, longer than the {MAX_JOB_MINUTES // 60} hours GitHub runs a job on its "
            f"hosted runners; on GitHub Actions verifyWait is at most {format_duration(longest)} "
            "(`mldiag fleet run` has no such limit)"
        )
    if w.soak // 60 > MAX_WAIT_TIMER_MINUTES:
        raise WorkflowLimitError(f"{where}: soak longer than an environment's wait timer (30 days)")


def units(all_steps: list[Step]) -> list[list[Step]]:
    """The steps grouped where a run may begin: before a stage of legs or an approval."""
    out: list[list[Step]] = []
    for step in all_steps:
        if step.kind in ("legs", "approval") or not out:
            out.append([step])
        else:
            out[-1].append(step)
    return out


def runs(plan: Plan) -> list[Run]:
    """The steps cut into runs of at most 35 days (each step at its longest: its jobs' timeouts, an approval's
    30 days) and 49,000 jobs; a unit that alone is longer than a run is refused."""
    out = [Run(1)]
    run_minutes, run_jobs = PLAN_MINUTES, 0  # the last run's, kept as it grows
    for unit in units(steps(plan)):
        minutes = sum(s.minutes for s in unit)
        if PLAN_MINUTES + minutes > MAX_RUN_MINUTES:
            step = max(unit, key=lambda s: s.minutes)
            raise WorkflowLimitError(
                f"waves[{step.wave_number - 1}] ({step.wave.name}): {_what(step)} may take up to "
                f"{_days(PLAN_MINUTES + minutes)}, longer than the 35 days GitHub lets one workflow run last; "
                "raise the wave's maxParallel or lower its gate.verifyWait or soak"
            )
        run = out[-1]
        jobs = sum(s.jobs for s in unit)
        if run.units and (
            run_minutes + minutes > MAX_RUN_MINUTES or run_jobs + jobs > MAX_CHECK_RUNS - 1_000
        ):
            run = Run(run.number + 1)
            out.append(run)
            run_minutes, run_jobs = PLAN_MINUTES, 0
        run.units.append(unit)
        run_minutes, run_jobs = run_minutes + minutes, run_jobs + jobs
    return out


def halves(run: Run) -> tuple[Run, Run]:
    """The run cut in two at its middle unit (a file too large for one run, even with its legs in parts)."""
    if len(run.units) < 2:
        raise WorkflowLimitError(
            f"run {run.number}: one wave's stage does not fit a workflow file of {MAX_FILE_BYTES:,} bytes"
        )
    mid = len(run.units) // 2
    return Run(run.number, run.units[:mid]), Run(run.number + 1, run.units[mid:])


def _what(step: Step) -> str:
    if step.kind == "legs" and step.stage is not None:
        return f"a stage of {step.legs} legs at most {sum(j.max_parallel for j in step.stage.jobs)} at once"
    return f"its {step.kind}"


def _days(minutes: int) -> str:
    return f"{minutes / 1440:.1f} days"
