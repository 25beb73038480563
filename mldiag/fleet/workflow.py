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
from mldiag.fleet.planner import Plan

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


def rollout_workflow(plan: Plan, fleet_rel: str) -> str:
    env_stack = plan.environment_stack
    out = [
        f"# Generated by `mldiag fleet workflow --write` from {fleet_rel}: do not edit (a test",
        "# regenerates it). The rollout of the fleet's waves on GitHub Actions, one matrix job per wave, each",
        "# followed by its gate (docs/fleet.md). Progress lives in the member stacks' tags, so a rerun of this",
        "# workflow resumes at the first unfinished wave. Credentials are OIDC only, as in deploy-stack.yml.",
        f"name: Fleet rollout ({env_stack})",
        "",
        "on:",
        "  workflow_dispatch:",
        "  workflow_call:",
        "",
        "permissions:",
        "  contents: read",
        "",
        "concurrency:",
        f"  # One rollout of {env_stack} at a time; never cancel one that runs.",
        f"  group: fleet-{env_stack}",
        "  cancel-in-progress: false",
        "",
        "jobs:",
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
    previous = "plan"
    for i, w in enumerate(plan.waves):
        wave_job, gate_job = _job_id("wave", i, w.name), _job_id("gate", i, w.name)
        timeout = 30 + (w.gate.verify_wait // 60) * 2 + 60
        out += [
            "",
            f"  {wave_job}:",
            f'    name: "wave {i + 1} {w.name}: ${{{{ matrix.cluster }}}}"',
            f"    needs: {previous}",
        ]
        if previous != "plan":
            out.append(f"    if: ${{{{ !cancelled() && needs.{previous}.result == 'success' }}}}")
        out += [
            "    runs-on: ubuntu-latest",
            f"    timeout-minutes: {timeout}",
            f"    environment: {env_stack}",
            "    concurrency:",
            "      # One update per stack at a time, whichever workflow runs it; never cancel one that runs.",
            "      group: pulumi-up-${{ matrix.stack }}",
            "      cancel-in-progress: false",
            "    permissions:",
            "      contents: read",
            "      id-token: write",
            "    strategy:",
            f"      max-parallel: {w.max_parallel}",
            f"      fail-fast: {'true' if w.tolerance == 0 else 'false'}"
            + (
                "  # the wave tolerates no failure"
                if w.tolerance == 0
                else f"  # the wave tolerates {w.tolerance}"
            ),
            "      matrix:",
            "        include:",
        ]
        for m in w.members:
            out += [f"          - cluster: {m.ref}", f"            stack: {plan.qualified(m.stack)}"]
        out += ["    steps:", *_setup("deploy")]
        out += _report_step(
            "Update the cluster's stack, then its gate (verify --wait); progress into the stack's tag",
            f'.venv/bin/mldiag fleet run {fleet_rel} --cluster "$CLUSTER"',
            _env("deploy", {"CLUSTER": "${{ matrix.cluster }}"}),
        )
        out += [
            "",
            f"  {gate_job}:",
            f'    name: "gate of wave {i + 1} {w.name}: {w.describe_gate()}"',
            f"    needs: {wave_job}",
            "    # Also after failed legs (the tolerance decides); not when the wave never ran.",
            f"    if: ${{{{ !cancelled() && needs.{wave_job}.result != 'skipped' }}}}",
            "    runs-on: ubuntu-latest",
            f"    timeout-minutes: {30 + w.soak // 60 + 30}",
            f"    environment: {env_stack}",
            "    permissions:",
            "      contents: read",
            "      id-token: write",
            "    steps:",
            *_setup("deploy"),
        ]
        out += _report_step(
            "The wave gate (its tolerance, soak, verify once more)",
            f".venv/bin/mldiag fleet gate {fleet_rel} --wave {w.name}",
            _env("deploy", {}),
        )
        previous = gate_job
        if w.gate.approval:
            approve_job = _job_id("approve", i, w.name)
            out += [
                "",
                f"  {approve_job}:",
                f'    name: "approval of wave {i + 1} {w.name}"',
                f"    needs: {gate_job}",
                f"    if: ${{{{ !cancelled() && needs.{gate_job}.result == 'success' }}}}",
                "    runs-on: ubuntu-latest",
                "    timeout-minutes: 30",
                "    # Its required reviewers are the approval; the job records it in the stacks' tags.",
                f"    environment: {env_stack}-fleet-approval",
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
            previous = approve_job
    return "\n".join(out) + "\n"


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
        out[WORKFLOWS / workflow_name(f)] = rollout_workflow(plan, rel)
    if fleets:
        out[WORKFLOWS / DRIFT_WORKFLOW] = drift_workflow(fleets)
    return out
