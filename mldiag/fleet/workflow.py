"""The GitHub Actions engine of a fleet: a workflow generated from the fleet file, committed beside the others.

    mldiag fleet workflow --write      # .github/workflows/fleet-<name>.yml per fleet/<name>.yaml, fleet-drift.yml
    mldiag fleet workflow --check      # exit 1 when a committed file is not the generated one

GitHub runs the rollout; the jobs call `mldiag fleet`, which keeps progress in the member stacks' tags:
- one matrix job per wave, a leg per cluster (`mldiag fleet run --cluster`: its update, then its gate),
  `max-parallel` = the wave's maxParallel, `fail-fast` only when the wave tolerates no failure;
- each leg in the concurrency group of its stack (`pulumi-up-<stack>`, as deploy-stack.yml names them),
  the whole workflow in one group per environment: two rollouts of it never run at once;
- after each wave its gate job (`mldiag fleet gate`: the tolerance over what the legs recorded, the soak,
  verify once more), then, when the wave asks for approval, a job in the GitHub environment
  `<environment>-fleet-approval` (give it required reviewers) that records the approval;
- waves chained with `needs:`; a later wave runs only when the previous gate (or approval) succeeded.

`mldiag fleet drift` runs on a schedule in fleet-drift.yml (`drift_workflow`), with the read-only identity.
"""

from __future__ import annotations

import re
from pathlib import Path

from mldiag.common import ROOT
from mldiag.fleet import workflow_layout as layout
from mldiag.fleet.model import format_duration
from mldiag.fleet.planner import Plan, Wave
from mldiag.fleet.workflow_layout import LegsJob, WorkflowLimitError

__all__ = ["WorkflowLimitError", "generated", "rollout_files", "stale_generated"]

WORKFLOWS = Path(".github") / "workflows"
DRIFT_WORKFLOW = "fleet-drift.yml"
# The actions and pins of the other workflows (tests/test_workflows.py: one version of each action).
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2"
SETUP_PYTHON = "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065 # v5.6.0"
GCP_AUTH = "google-github-actions/auth@7c6bc770dae815cd3e89ee6cdf493a5fab2cc093 # v3.0.0"
SETUP_GCLOUD = "google-github-actions/setup-gcloud@aa5489c8933f4cc7a4f7d45035b3b1440c9c10db # v3.0.1"
AZURE_LOGIN = "azure/login@a65d910e8af852a8061c627c456678983e180302 # v2.2.0"
PULUMI_AUTH = "pulumi/auth-actions@141415910c3beb54e03b48e9057c204c97b956f2 # v2.1.0"
PULUMI_ACTIONS = "pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d # v7.0.0"


def workflow_name(fleet: Path) -> str:
    return f"fleet-{fleet.stem}.yml"


def _job_id(prefix: str, i: int, wave: str) -> str:
    return f"{prefix}-{i + 1}-{re.sub(r'[^a-z0-9-]', '-', wave)}"


def _setup(identity: str, indent: str = "      ") -> list[str]:
    """The steps every job starts with: checkout, the project, the Pulumi CLI, OIDC credentials."""
    deploy = identity == "deploy"
    gcp_sa = "GCP_DEPLOY_SERVICE_ACCOUNT" if deploy else "GCP_PREVIEW_SERVICE_ACCOUNT"
    azure_id = "AZURE_DEPLOY_CLIENT_ID" if deploy else "AZURE_PREVIEW_CLIENT_ID"
    token = (
        ["          requested-token-type: urn:pulumi:token-type:access_token:organization"]
        if deploy
        else [
            "          requested-token-type: urn:pulumi:token-type:access_token:team",
            "          scope: team:${{ vars.PULUMI_PREVIEW_TEAM }}",
        ]
    )
    lines = [
        f"      - uses: {CHECKOUT}",
        "        with:",
        "          persist-credentials: false",
        "",
        f"      - uses: {SETUP_PYTHON}",
        "        with:",
        '          python-version: "3.11"',
        "          cache: pip",
        "          cache-dependency-path: |",
        "            requirements.txt",
        "            policies/requirements.txt",
        "",
        "      - name: Install the project and the policy pack",
        "        run: |",
        "          python -m venv .venv",
        "          .venv/bin/pip install -q -r requirements.txt -r policies/requirements.txt",
        "",
        "      - name: Pulumi CLI version = the SDK pin in requirements.txt (the one place to bump both)",
        "        id: versions",
        '        run: echo "pulumi=$(sed -n \'s/^pulumi==\\([0-9][0-9.]*\\)$/\\1/p\' requirements.txt)" >> "$GITHUB_OUTPUT"',
        "",
        "      - name: The Pulumi CLI (mldiag fleet drives it through the Automation API)",
        f"        uses: {PULUMI_ACTIONS}",
        "        with:",
        "          pulumi-version: ${{ steps.versions.outputs.pulumi }}",
        "",
        "      - name: Authenticate to Google Cloud (workload identity federation)",
        f"        uses: {GCP_AUTH}",
        "        with:",
        "          workload_identity_provider: ${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}",
        f"          service_account: ${{{{ vars.{gcp_sa} }}}}",
        "",
        "      - name: gcloud with gke-gcloud-auth-plugin (the kubernetes providers' exec credential)",
        f"        uses: {SETUP_GCLOUD}",
        "        with:",
        "          install_components: gke-gcloud-auth-plugin",
        "",
        "      - name: Azure CLI login (OIDC; verify reads the extension and relay with it)",
        f"        uses: {AZURE_LOGIN}",
        "        with:",
        f"          client-id: ${{{{ vars.{azure_id} }}}}",
        "          tenant-id: ${{ vars.AZURE_TENANT_ID }}",
        "          subscription-id: ${{ vars.AZURE_SUBSCRIPTION_ID }}",
        "",
        "      - name: Pulumi Cloud token (OIDC)",
        f"        uses: {PULUMI_AUTH}",
        "        with:",
        "          organization: ${{ vars.PULUMI_ORG }}",
        *token,
        "",
    ]
    return lines


def _env(identity: str, extra: dict[str, str]) -> list[str]:
    azure_id = "AZURE_DEPLOY_CLIENT_ID" if identity == "deploy" else "AZURE_PREVIEW_CLIENT_ID"
    values = {
        **extra,
        "ARM_USE_OIDC": '"true"',
        "ARM_CLIENT_ID": f"${{{{ vars.{azure_id} }}}}",
        "ARM_TENANT_ID": "${{ vars.AZURE_TENANT_ID }}",
        "ARM_SUBSCRIPTION_ID": "${{ vars.AZURE_SUBSCRIPTION_ID }}",
    }
    return ["        env:", *(f"          {k}: {v}" for k, v in values.items())]


def _report_step(name: str, command: str, env: list[str]) -> list[str]:
    """A step that runs an mldiag command, puts its Markdown report in the job summary and keeps its exit code."""
    return [
        f"      - name: {name}",
        *env,
        "        run: |",
        "          set +e",
        f"          {command} --format markdown --output fleet-report.md",
        "          code=$?",
        '          cat fleet-report.md >> "$GITHUB_STEP_SUMMARY" 2>/dev/null || true',
        "          exit $code",
    ]


def _needs(ids: list[str]) -> str:
    return f"    needs: {ids[0]}" if len(ids) == 1 else f"    needs: [{', '.join(ids)}]"


def _succeeded(job: str) -> str:
    return f"${{{{ !cancelled() && needs.{job}.result == 'success' }}}}"


def _stage_condition(wave: Wave, before: list[str]) -> str:
    """A later stage of a wave: after the stage before it succeeded; in a wave that tolerates failures, after
    it ran at all (its gate counts the failures over the whole wave)."""
    test = "== 'success'" if wave.tolerance == 0 else "!= 'skipped'"
    return "${{ !cancelled() && " + " && ".join(f"needs.{j}.result {test}" for j in before) + " }}"


_NEEDS_ROOM = 1_000
"""Bytes a legs job's `needs:` and `if:` take at most (four job ids of up to 60 characters, twice)."""
_Rendered = dict[str, str]
"""A legs job's lines after its `needs:` and `if:`, one text per job id (a run is written more than once while
its files are sized: each job's matrix is written once)."""


def _legs_job(
    job: LegsJob,
    needs: list[str],
    condition: str | None,
    plan: Plan,
    fleet_rel: str,
    cache: _Rendered | None = None,
) -> list[str]:
    """The matrix job's lines; the part after `needs:` and `if:` as one text (from `cache` when written before)."""
    w, i = job.wave, job.wave_number
    of = f" ({job.number}/{job.of})" if job.of > 1 else ""
    out = ["", f"  {job.job_id}:", f'    name: "wave {i} {w.name}{of}: ${{{{ matrix.cluster }}}}"']
    if needs:
        out.append(_needs(needs))
    if condition:
        out.append(f"    if: {condition}")
    body = cache.get(job.job_id) if cache is not None else None
    if body is None:
        body = "\n".join(_legs_body(job, plan, fleet_rel))
        if cache is not None:
            cache[job.job_id] = body
    out.append(body)
    return out


def _legs_body(job: LegsJob, plan: Plan, fleet_rel: str) -> list[str]:
    w = job.wave
    out = [
        "    runs-on: ubuntu-latest",
        f"    timeout-minutes: {layout.leg_minutes(w)}",
        f"    environment: {plan.environment_stack}",
        "    concurrency:",
        "      # One update per stack at a time, whichever workflow runs it; never cancel one that runs.",
        "      group: pulumi-up-${{ matrix.stack }}",
        "      cancel-in-progress: false",
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        "    strategy:",
        f"      max-parallel: {job.max_parallel}",
        f"      fail-fast: {'true' if w.tolerance == 0 else 'false'}"
        + (
            "  # the wave tolerates no failure"
            if w.tolerance == 0
            else f"  # the wave tolerates {w.tolerance}"
        ),
        "      matrix:",
        "        include:",
    ]
    for m in job.members:
        out += [f"          - cluster: {m.ref}", f"            stack: {plan.qualified(m.stack)}"]
    out += ["    steps:", *_setup("deploy")]
    out += _report_step(
        "Update the cluster's stack, then its gate (verify --wait); progress into the stack's tag",
        f'.venv/bin/mldiag fleet run {fleet_rel} --cluster "$CLUSTER"',
        _env("deploy", {"CLUSTER": "${{ matrix.cluster }}"}),
    )
    return out


def _soak_job(w: Wave, i: int, needs: list[str], condition: str, env_stack: str) -> list[str]:
    return [
        "",
        f"  {layout.job_id('soak', i, w.name)}:",
        f'    name: "soak of wave {i} {w.name}: {format_duration(w.soak)}"',
        _needs(needs),
        f"    if: {condition}",
        "    runs-on: ubuntu-latest",
        "    timeout-minutes: 10",
        "    # The soak is this environment's wait timer (longer than a job may run): give it one of "
        f"{w.soak // 60} minutes.",
        f"    environment: {soak_environment(env_stack, w)}",
        "    permissions: {}",
        "    steps:",
        f'      - run: echo "wave {w.name} soaked {format_duration(w.soak)} (the environment\'s wait timer)"',
    ]


def soak_environment(env_stack: str, w: Wave) -> str:
    return f"{env_stack}-fleet-soak-{format_duration(w.soak)}"


def _gate_job(
    w: Wave, i: int, needs: list[str], condition: str, plan: Plan, fleet_rel: str, timer: bool
) -> list[str]:
    out = [
        "",
        f"  {layout.job_id('gate', i, w.name)}:",
        f'    name: "gate of wave {i} {w.name}: {w.describe_gate()}"',
        _needs(needs),
    ]
    if not timer:
        out.append("    # Also after failed legs (the tolerance decides); not when the wave never ran.")
    out += [
        f"    if: {condition}",
        "    runs-on: ubuntu-latest",
        f"    timeout-minutes: {layout.gate_minutes(w)}",
        f"    environment: {plan.environment_stack}",
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        "    steps:",
        *_setup("deploy"),
    ]
    # after a wait timer the soak is over; were the timer missing, the gate says so at once
    limit = f" --max-wait {layout.SOAK_IN_JOB_MINUTES}m" if timer else ""
    out += _report_step(
        "The wave gate (its tolerance, soak, verify once more)",
        f".venv/bin/mldiag fleet gate {fleet_rel} --wave {w.name}{limit}",
        _env("deploy", {}),
    )
    return out


def _approval_job(
    w: Wave, i: int, needs: list[str], condition: str | None, plan: Plan, fleet_rel: str
) -> list[str]:
    out = [
        "",
        f"  {layout.job_id('approve', i, w.name)}:",
        f'    name: "approval of wave {i} {w.name}"',
        _needs(needs),
    ]
    if condition:
        out.append(f"    if: {condition}")
    out += [
        "    runs-on: ubuntu-latest",
        f"    timeout-minutes: {layout.APPROVAL_JOB_MINUTES}",
        "    # Its required reviewers are the approval; the job records it in the stacks' tags.",
        f"    environment: {plan.environment_stack}-fleet-approval",
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        "    steps:",
        *_setup("deploy"),
    ]
    out += _report_step(
        "Record the approval",
        f".venv/bin/mldiag fleet gate {fleet_rel} --wave {w.name} --approve",
        _env("deploy", {}),
    )
    return out


def _next_run_job(needs: list[str], condition: str, next_file: str, number: int, total: int) -> list[str]:
    return [
        "",
        "  next-run:",
        f'    name: "start run {number} of {total}"',
        _needs(needs),
        f"    if: {condition}",
        "    runs-on: ubuntu-latest",
        "    timeout-minutes: 10",
        "    permissions:",
        "      actions: write",
        "    steps:",
        f"      - name: Start {next_file} (it waits in this workflow's concurrency group until this run ends)",
        "        env:",
        "          GH_TOKEN: ${{ github.token }}",
        "          GH_REPO: ${{ github.repository }}",
        "          REF: ${{ github.ref_name }}",
        f'        run: gh workflow run {next_file} --ref "$REF"',
    ]


def _part_call_job(
    job: str,
    part_file: str,
    wave: Wave,
    i: int,
    needs: list[str],
    condition: str | None,
    first: int,
    last: int,
) -> list[str]:
    out = ["", f"  {job}:", f'    name: "wave {i} {wave.name}: legs jobs {first}-{last}"', _needs(needs)]
    if condition:
        out.append(f"    if: {condition}")
    out += [
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        f"    uses: ./{WORKFLOWS.as_posix()}/{part_file}",
    ]
    return out


def _header(plan: Plan, fleet_rel: str, title: str, what: str, trigger: list[str]) -> list[str]:
    return [
        f"# Generated by `mldiag fleet workflow --write` from {fleet_rel}: do not edit (a test",
        f"# regenerates it). {what}",
        f"name: {title}",
        "",
        "on:",
        *trigger,
        "",
        "permissions:",
        "  contents: read",
        "",
    ]


def _plan_job(fleet_rel: str) -> list[str]:
    return [
        "  plan:",
        "    runs-on: ubuntu-latest",
        "    timeout-minutes: 15",
        "    permissions:",
        "      contents: read",
        "    steps:",
        f"      - uses: {CHECKOUT}",
        "        with:",
        "          persist-credentials: false",
        f"      - uses: {SETUP_PYTHON}",
        "        with:",
        '          python-version: "3.11"',
        "          cache: pip",
        "          cache-dependency-path: requirements*.txt",
        "      - name: The rollout plan (offline; exit 2 on an invalid fleet or stack file)",
        "        run: |",
        "          make venv",
        f'          .venv/bin/mldiag fleet plan {fleet_rel} --format markdown >> "$GITHUB_STEP_SUMMARY"',
    ]


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
        cache: _Rendered | None = None,
    ) -> None:
        self.plan, self.fleet_rel, self.stem, self.run, self.total = plan, fleet_rel, stem, run, total
        self.first_part = first_part
        self.cache: _Rendered = {} if cache is None else cache

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
        out = _header(self.plan, self.fleet_rel, title, what, ["  workflow_dispatch:", "  workflow_call:"])
        out += [
            "concurrency:",
            f"  # One rollout of {env} at a time; never cancel one that runs.",
            f"  group: fleet-{env}",
            "  cancel-in-progress: false",
            "",
            "jobs:",
            *_plan_job(self.fleet_rel),
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
                out += _soak_job(w, i, before, self._gate_condition(i, first_of_wave), env)
                before = [layout.job_id("soak", i, w.name)]
            elif step.kind == "gate":
                timer = layout.soak_in_timer(w)
                needs = before if timer else list(dict.fromkeys(first_of_wave.get(i, []) + before))
                condition = _succeeded(before[0]) if timer else self._gate_condition(i, first_of_wave)
                out += _gate_job(w, i, needs, condition, self.plan, self.fleet_rel, timer)
                before = [layout.job_id("gate", i, w.name)]
            else:
                after = None if before == ["plan"] else _succeeded(before[0])
                out += _approval_job(w, i, before, after, self.plan, self.fleet_rel)
                before = [layout.job_id("approve", i, w.name)]
            k += 1
        if r < self.total:
            condition = self._condition_of(self.next_step, before)
            out += _next_run_job(before, condition, self.file_name(r + 1), r + 1, self.total)
        return "\n".join(out) + "\n", files

    @staticmethod
    def _condition_of(step: layout.Step, before: list[str]) -> str:
        if step.kind == "legs" and not step.first_of_wave:
            return _stage_condition(step.wave, before)
        return _succeeded(before[0])

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
                out += _legs_job(job, before, condition, self.plan, self.fleet_rel, self.cache)
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
        room = layout.FILE_BUDGET - len(self._part_text([], 0).encode())
        size = 0
        for step in block:
            # a stage's jobs as the first stage of a part writes them, and room for the needs and if of a later one
            assert step.stage is not None
            jobs = step.stage.jobs
            lines = [ln for j in jobs for ln in _legs_job(j, [], None, self.plan, self.fleet_rel, self.cache)]
            grown = sum(len(ln.encode()) + 1 for ln in lines) + _NEEDS_ROOM * len(jobs)
            if groups[-1] and size + grown > room:
                groups.append([])
                size = 0
            groups[-1].append(step)
            size += grown
        for group in groups:
            number = self.first_part + made + len(files)
            name = f"fleet-{self.stem}-part-{number}.yml"
            files[name] = self._part_text(group, number)
            job = f"{layout.job_id('wave', i, w.name)}-part-{number}"
            called = [j for s in group for j in s.stage.jobs]  # type: ignore[union-attr]
            condition = self._entry_condition(group[0], before)
            out += _part_call_job(job, name, w, i, before, condition, called[0].number, called[-1].number)
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
        out = _header(
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
            condition = _stage_condition(w, before) if before else None
            for job in step.stage.jobs:
                out += _legs_job(job, before, condition, self.plan, self.fleet_rel, self.cache)
            before = [j.job_id for j in step.stage.jobs]
        return "\n".join(out) + "\n"


def rollout_files(plan: Plan, fleet_rel: str, stem: str) -> dict[str, str]:
    """Every workflow file of the fleet's rollout: file name -> text (WorkflowLimitError when it cannot fit)."""
    pending = layout.runs(plan)
    done: list[tuple[layout.Run, bool]] = []
    cache: _Rendered = {}
    files: dict[str, str] = {}
    while pending:
        run = pending.pop(0)
        # a leg takes at least 50 bytes: a run with more legs than that fits is written with parts at once
        modes = (True,) if sum(s.legs for s in run.steps) * 50 > layout.FILE_BUDGET else (False, True)
        for parts in modes:
            writer = _Writer(plan, fleet_rel, stem, run, 1, 1, cache)
            text, made = writer.write(parts)
            if len(text.encode()) <= layout.FILE_BUDGET and len(made) <= layout.MAX_REUSABLE:
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
            if len(text.encode()) > layout.FILE_BUDGET and not parts:
                text, made = writer.write(parts=True)
            part += len(made)
            files[writer.file_name(n)] = text
            files.update(made)
    for name, text in files.items():
        if len(text.encode()) > layout.MAX_FILE_BYTES:  # never, by the budgets above: a last guard
            raise WorkflowLimitError(f"{name} would be {len(text.encode()):,} bytes, over GitHub's 500 KB")
    return files


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
        *_setup("preview"),
    ]
    out += _report_step(
        "Drift of every member stack",
        '.venv/bin/mldiag fleet drift "$FLEET"',
        _env("preview", {"FLEET": "${{ matrix.fleet }}"}),
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
