"""The jobs a fleet's generated GitHub workflows are made of (mldiag/fleet/workflow.py writes the files): the
steps every job starts with (checkout, the project, the Pulumi CLI, OIDC credentials), each kind of job (a wave's
legs, its soak, its gate, its approval, the plan, the job that starts the next run, the call of a part), and the
conditions that chain them. Each returns its lines, indented as a workflow's `jobs:` holds them.
"""

from __future__ import annotations

from mldiag.fleet import workflow_layout as layout
from mldiag.fleet.model import format_duration
from mldiag.fleet.planner import Plan, Wave
from mldiag.fleet.workflow_layout import LegsJob

WORKFLOWS_DIR = ".github/workflows"
# The actions and pins of the other workflows (tests/test_workflows.py: one version of each action).
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2"
SETUP_PYTHON = "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065 # v5.6.0"
GCP_AUTH = "google-github-actions/auth@7c6bc770dae815cd3e89ee6cdf493a5fab2cc093 # v3.0.0"
SETUP_GCLOUD = "google-github-actions/setup-gcloud@aa5489c8933f4cc7a4f7d45035b3b1440c9c10db # v3.0.1"
AZURE_LOGIN = "azure/login@a65d910e8af852a8061c627c456678983e180302 # v2.2.0"
PULUMI_AUTH = "pulumi/auth-actions@141415910c3beb54e03b48e9057c204c97b956f2 # v2.1.0"
PULUMI_ACTIONS = "pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d # v7.0.0"


def setup(identity: str, indent: str = "      ") -> list[str]:
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


def env(identity: str, extra: dict[str, str]) -> list[str]:
    azure_id = "AZURE_DEPLOY_CLIENT_ID" if identity == "deploy" else "AZURE_PREVIEW_CLIENT_ID"
    values = {
        **extra,
        "ARM_USE_OIDC": '"true"',
        "ARM_CLIENT_ID": f"${{{{ vars.{azure_id} }}}}",
        "ARM_TENANT_ID": "${{ vars.AZURE_TENANT_ID }}",
        "ARM_SUBSCRIPTION_ID": "${{ vars.AZURE_SUBSCRIPTION_ID }}",
    }
    return ["        env:", *(f"          {k}: {v}" for k, v in values.items())]


def report_step(name: str, command: str, env: list[str]) -> list[str]:
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


def needs_line(ids: list[str]) -> str:
    return f"    needs: {ids[0]}" if len(ids) == 1 else f"    needs: [{', '.join(ids)}]"


def succeeded(job: str) -> str:
    return f"${{{{ !cancelled() && needs.{job}.result == 'success' }}}}"


def stage_condition(wave: Wave, before: list[str]) -> str:
    """A later stage of a wave: after the stage before it succeeded; in a wave that tolerates failures, after
    it ran at all (its gate counts the failures over the whole wave)."""
    test = "== 'success'" if wave.tolerance == 0 else "!= 'skipped'"
    return "${{ !cancelled() && " + " && ".join(f"needs.{j}.result {test}" for j in before) + " }}"


NEEDS_ROOM = 1_000
"""Bytes a legs job's `needs:` and `if:` take at most (four job ids of up to 60 characters, twice)."""
Rendered = dict[str, str]
"""A legs job's lines after its `needs:` and `if:`, one text per job id (a run is written more than once while
its files are sized: each job's matrix is written once)."""


def job_head(job_id: str, name: str, needs: list[str], condition: str | None, note: str = "") -> list[str]:
    """A job's first lines: its id, name, needs, and the condition it runs on (with `note` saying why)."""
    out = ["", f"  {job_id}:", f'    name: "{name}"']
    if needs:
        out.append(needs_line(needs))
    if note:
        out.append(f"    # {note}")
    if condition:
        out.append(f"    if: {condition}")
    return out


def legs_job(
    job: LegsJob,
    needs: list[str],
    condition: str | None,
    plan: Plan,
    fleet_rel: str,
    cache: Rendered | None = None,
) -> list[str]:
    """The matrix job's lines; the part after `needs:` and `if:` as one text (from `cache` when written before)."""
    w, i = job.wave, job.wave_number
    of = f" ({job.number}/{job.of})" if job.of > 1 else ""
    out = job_head(job.job_id, f"wave {i} {w.name}{of}: ${{{{ matrix.cluster }}}}", needs, condition)
    body = cache.get(job.job_id) if cache is not None else None
    if body is None:
        body = "\n".join(legs_body(job, plan, fleet_rel))
        if cache is not None:
            cache[job.job_id] = body
    out.append(body)
    return out


def legs_body(job: LegsJob, plan: Plan, fleet_rel: str) -> list[str]:
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
    out += ["    steps:", *setup("deploy")]
    out += report_step(
        "Update the cluster's stack, then its gate (verify --wait); progress into the stack's tag",
        f'.venv/bin/mldiag fleet run {fleet_rel} --cluster "$CLUSTER"',
        env("deploy", {"CLUSTER": "${{ matrix.cluster }}"}),
    )
    return out


def soak_job(w: Wave, i: int, needs: list[str], condition: str, env_stack: str) -> list[str]:
    name = f"soak of wave {i} {w.name}: {format_duration(w.soak)}"
    return [
        *job_head(layout.job_id("soak", i, w.name), name, needs, condition),
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


def gate_job(
    w: Wave, i: int, needs: list[str], condition: str, plan: Plan, fleet_rel: str, timer: bool
) -> list[str]:
    note = "" if timer else "Also after failed legs (the tolerance decides); not when the wave never ran."
    out = job_head(
        layout.job_id("gate", i, w.name),
        f"gate of wave {i} {w.name}: {w.describe_gate()}",
        needs,
        condition,
        note,
    )
    out += [
        "    runs-on: ubuntu-latest",
        f"    timeout-minutes: {layout.gate_minutes(w)}",
        f"    environment: {plan.environment_stack}",
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        "    steps:",
        *setup("deploy"),
    ]
    # after a wait timer the soak is over; were the timer missing, the gate says so at once
    limit = f" --max-wait {layout.SOAK_IN_JOB_MINUTES}m" if timer else ""
    out += report_step(
        "The wave gate (its tolerance, soak, verify once more)",
        f".venv/bin/mldiag fleet gate {fleet_rel} --wave {w.name}{limit}",
        env("deploy", {}),
    )
    return out


def approval_job(
    w: Wave, i: int, needs: list[str], condition: str | None, plan: Plan, fleet_rel: str
) -> list[str]:
    out = job_head(layout.job_id("approve", i, w.name), f"approval of wave {i} {w.name}", needs, condition)
    out += [
        "    runs-on: ubuntu-latest",
        f"    timeout-minutes: {layout.APPROVAL_JOB_MINUTES}",
        "    # Its required reviewers are the approval; the job records it in the stacks' tags.",
        f"    environment: {plan.environment_stack}-fleet-approval",
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        "    steps:",
        *setup("deploy"),
    ]
    out += report_step(
        "Record the approval",
        f".venv/bin/mldiag fleet gate {fleet_rel} --wave {w.name} --approve",
        env("deploy", {}),
    )
    return out


def next_run_job(needs: list[str], condition: str, next_file: str, number: int, total: int) -> list[str]:
    return [
        *job_head("next-run", f"start run {number} of {total}", needs, condition),
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


def part_call_job(
    job: str,
    part_file: str,
    wave: Wave,
    i: int,
    needs: list[str],
    condition: str | None,
    first: int,
    last: int,
) -> list[str]:
    out = job_head(job, f"wave {i} {wave.name}: legs jobs {first}-{last}", needs, condition)
    out += [
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        f"    uses: ./{WORKFLOWS_DIR}/{part_file}",
    ]
    return out


def header(plan: Plan, fleet_rel: str, title: str, what: str, trigger: list[str]) -> list[str]:
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


def plan_job(fleet_rel: str) -> list[str]:
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
