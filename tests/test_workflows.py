"""The GitHub Actions workflows: triggers, permissions, stack coverage and commands, checked as data.

`workflow_problems(stacks)` lists every mismatch between the workflows and a set of stack names; the
repository's own stacks must give none, and a stack added to stacks/ without its entries gives one
problem per workflow that misses it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.tools import need_command

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
PULUMI_ACTION = "pulumi/actions@"
DEPLOY_STACK = "./.github/workflows/deploy-stack.yml"


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def triggers(wf: dict[str, Any]) -> dict[str, Any]:
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as True
    return on if isinstance(on, dict) else {t: None for t in ([on] if isinstance(on, str) else on)}


def repo_stacks() -> list[str]:
    return sorted(
        p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml")
    )


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job.get("steps", [])


def step_using(job: dict[str, Any], action: str) -> dict[str, Any]:
    found = [s for s in steps(job) if s.get("uses", "").startswith(action)]
    assert len(found) == 1, f"expected one step using {action}, found {len(found)}"
    return found[0]


def deploy_chain(wf: dict[str, Any]) -> list[str]:
    """The stacks deploy.yml rolls out, following `needs` from the first deploy job."""
    jobs = {k: j for k, j in wf["jobs"].items() if j.get("uses") == DEPLOY_STACK}
    by_need = {}
    for name, job in jobs.items():
        needs = job.get("needs")
        needs = [needs] if isinstance(needs, str) else needs or []
        assert len(needs) == 1, f"deploy job {name} must need exactly the previous step, has {needs}"
        by_need[needs[0]] = name
    chain, cur = [], "test"
    while cur in by_need:
        cur = by_need[cur]
        chain.append(jobs[cur]["with"]["stack"])
    assert len(chain) == len(jobs), f"deploy jobs do not form one chain after `test`: {sorted(jobs)}"
    return chain


def workflow_problems(stacks: list[str]) -> list[str]:
    """What keeps the workflows from covering `stacks`: preview and the offline plan take every stack file
    on their own; deploy.yml rolls out a chosen chain, and each stack in it must exist."""
    problems = []
    wf = load("preview.yml")
    if wf["jobs"]["preview"]["strategy"]["matrix"]["stack"] != "${{ fromJSON(needs.stacks.outputs.stacks) }}":
        problems.append("preview.yml: the matrix is not the stacks job's list")
    offline = next(
        s for s in steps(load("offline-plan.yml")["jobs"]["offline-plan"]) if s.get("id") == "diff"
    )
    if "mldiag diff --base" not in offline["run"]:
        problems.append("offline-plan.yml: the diff names stacks instead of taking every stack")
    deploy = load("deploy.yml")
    plan = next(s for s in steps(deploy["jobs"]["test"]) if "mldiag plan" in s.get("run", ""))
    if "stacks/Pulumi.*.yaml" not in plan["run"]:
        problems.append("deploy.yml: the test job plans named stacks instead of every stack")
    missing = [s for s in deploy_chain(deploy) if s not in stacks]
    if missing:
        problems.append(f"deploy.yml rolls out {missing}, which have no stack file")
    return problems


def test_every_stack_is_previewed_and_planned_and_the_deploy_chain_exists() -> None:
    assert repo_stacks(), "no stacks under stacks/"
    assert workflow_problems(repo_stacks()) == []
    assert deploy_chain(load("deploy.yml")) == ["dev", "staging", "prod"]


def test_a_new_stack_needs_no_workflow_change_and_a_removed_one_is_caught() -> None:
    assert workflow_problems([*repo_stacks(), "team-a"]) == []
    assert workflow_problems([s for s in repo_stacks() if s != "prod"]) == [
        "deploy.yml rolls out ['prod'], which have no stack file"
    ]


def test_the_stacks_job_lists_every_stack_file(tmp_path: Path) -> None:
    need_command("jq")
    (tmp_path / "stacks").mkdir()
    for name in ("dev", "team-a", "prod"):
        (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text("config: {}\n")
    (tmp_path / "stacks" / "README.md").write_text("not a stack\n")
    job = load("preview.yml")["jobs"]["stacks"]
    run = next(s for s in steps(job) if s.get("id") == "list")["run"]
    out = tmp_path / "out"
    subprocess.run(
        ["bash", "-c", run], cwd=tmp_path, env={**os.environ, "GITHUB_OUTPUT": str(out)}, check=True
    )
    assert out.read_text() == 'stacks=["dev","prod","team-a"]\n'


def test_preview_on_pull_requests_with_policy_pack_and_pr_comment() -> None:
    wf = load("preview.yml")
    assert set(triggers(wf)) == {"pull_request"}
    assert wf["permissions"] == {"contents": "read"}
    job = wf["jobs"]["preview"]
    assert job["permissions"] == {"contents": "read", "id-token": "write", "pull-requests": "write"}
    # Fork PRs have no OIDC token and no write token: they get the offline plan instead.
    assert job["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    pulumi = step_using(job, PULUMI_ACTION)["with"]
    assert pulumi["command"] == "preview"
    assert pulumi["diff"] is True
    assert pulumi["comment-on-pr"] is True and pulumi["edit-pr-comment"] is True
    assert pulumi["policyPacks"] == "policies"
    assert pulumi["policyPackConfigs"] == "policy-config.json"
    made = next(s for s in job["steps"] if "mldiag policy-config" in s.get("run", ""))
    assert made["run"] == '.venv/bin/mldiag policy-config "$STACK" --output policy-config.json'
    assert made["env"] == {"STACK": "${{ matrix.stack }}"}
    assert pulumi["stack-name"].endswith("/ml-diagnostics/${{ matrix.stack }}")
    assert job["strategy"]["fail-fast"] is False


@pytest.mark.parametrize(("name", "job"), [("preview.yml", "preview"), ("deploy-stack.yml", "up")])
def test_cloud_credentials_are_oidc_only(name: str, job: str) -> None:
    j = load(name)["jobs"][job]
    assert j["permissions"]["id-token"] == "write"
    gcp = step_using(j, "google-github-actions/auth@")["with"]
    assert set(gcp) == {"workload_identity_provider", "service_account"}  # no credentials_json key file
    step_using(j, "pulumi/auth-actions@")
    env = step_using(j, PULUMI_ACTION)["env"]
    assert env["ARM_USE_OIDC"] == "true"
    assert not any(
        k in env for k in ("ARM_CLIENT_SECRET", "ARM_CLIENT_CERTIFICATE_PATH", "PULUMI_ACCESS_TOKEN")
    )
    step_using(j, "google-github-actions/setup-gcloud@")  # gke-gcloud-auth-plugin for the k8s providers


def identity(job: dict[str, Any]) -> dict[str, str]:
    """The identity a job acts as: GCP service account, Azure client, Pulumi token type and scope."""
    pulumi_auth = step_using(job, "pulumi/auth-actions@")["with"]
    return {
        "gcp": step_using(job, "google-github-actions/auth@")["with"]["service_account"],
        "azure": step_using(job, PULUMI_ACTION)["env"]["ARM_CLIENT_ID"],
        "pulumi": pulumi_auth["requested-token-type"],
        "pulumi-scope": pulumi_auth.get("scope", ""),
    }


def test_previews_use_their_own_read_only_identity_and_a_team_scoped_token() -> None:
    preview = identity(load("preview.yml")["jobs"]["preview"])
    deploy = identity(load("deploy-stack.yml")["jobs"]["up"])
    assert preview == {
        "gcp": "${{ vars.GCP_PREVIEW_SERVICE_ACCOUNT }}",
        "azure": "${{ vars.AZURE_PREVIEW_CLIENT_ID }}",
        "pulumi": "urn:pulumi:token-type:access_token:team",
        "pulumi-scope": "team:${{ vars.PULUMI_PREVIEW_TEAM }}",
    }
    assert deploy == {
        "gcp": "${{ vars.GCP_DEPLOY_SERVICE_ACCOUNT }}",
        "azure": "${{ vars.AZURE_DEPLOY_CLIENT_ID }}",
        "pulumi": "urn:pulumi:token-type:access_token:organization",
        "pulumi-scope": "",
    }
    azure_login = step_using(load("deploy-stack.yml")["jobs"]["up"], "azure/login@")["with"]
    assert azure_login["client-id"] == deploy["azure"] and "creds" not in azure_login
    # Nothing in the preview workflow names a deploy identity.
    text = (WORKFLOWS / "preview.yml").read_text()
    assert "DEPLOY" not in text and "access_token:organization" not in text


def test_no_workflow_uses_stored_secrets_or_pull_request_target() -> None:
    for path in WORKFLOWS.glob("*.yml"):
        text = path.read_text()
        secrets = set(re.findall(r"secrets\.([A-Za-z_]+)", text))
        assert secrets <= {"GITHUB_TOKEN"}, f"{path.name} uses stored secrets {secrets}"
        assert "pull_request_target" not in triggers(yaml.safe_load(text)), path.name


def test_no_untrusted_expression_is_interpolated_into_a_shell() -> None:
    for path in WORKFLOWS.glob("*.yml"):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in steps(job):
                run = step.get("run", "")
                assert "${{ github.event" not in run and "github.head_ref" not in run, (path.name, run)


def test_offline_plan_runs_fork_code_read_only_and_diffs_every_stack() -> None:
    wf = load("offline-plan.yml")
    assert set(triggers(wf)) == {"pull_request"}
    assert triggers(wf)["pull_request"] is None  # every PR: any branch, forks included
    job = wf["jobs"]["offline-plan"]
    assert wf["permissions"] == {"contents": "read"} and job["permissions"] == {"contents": "read"}
    checkout = step_using(job, "actions/checkout@")["with"]
    assert checkout["fetch-depth"] == 0 and checkout["persist-credentials"] is False
    runs = [s.get("run", "") for s in steps(job)]
    assert "make test" in runs
    diff = next(s for s in steps(job) if s.get("id") == "diff")
    assert diff["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert (
        '.venv/bin/mldiag diff --base "$BASE_SHA" --format markdown --output offline-plan/comment.md'
        in diff["run"]
    )
    upload = step_using(job, "actions/upload-artifact@")["with"]
    assert upload["name"] == "offline-plan" and upload["path"] == "offline-plan/"


def test_offline_plan_comment_runs_no_pr_code() -> None:
    wf = load("offline-plan-comment.yml")
    trig = triggers(wf)
    assert set(trig) == {"workflow_run"}
    assert trig["workflow_run"] == {"workflows": [load("offline-plan.yml")["name"]], "types": ["completed"]}
    job = wf["jobs"]["comment"]
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert all("run" not in s for s in steps(job))
    assert not any(s.get("uses", "").startswith("actions/checkout@") for s in steps(job))
    script = step_using(job, "actions/github-script@")["with"]["script"]
    assert "<!-- ml-diagnostics:offline-plan -->" in script
    assert "pull.head.sha !== context.payload.workflow_run.head_sha" in script
    assert "updateComment" in script and "createComment" in script


def test_offline_plan_comment_marker_matches_the_diff_tool() -> None:
    from mldiag.diff.cli import COMMENT_MARKER

    job = load("offline-plan-comment.yml")["jobs"]["comment"]
    assert COMMENT_MARKER in step_using(job, "actions/github-script@")["with"]["script"]


def test_deploy_on_push_to_main_in_order_with_environments() -> None:
    wf = load("deploy.yml")
    trig = triggers(wf)
    assert trig["push"] == {"branches": ["main"]}
    assert set(trig) <= {"push", "workflow_dispatch"}
    assert wf["jobs"]["test"]["if"] == "github.ref == 'refs/heads/main'"
    assert "make test" in [s.get("run") for s in steps(wf["jobs"]["test"])]
    chain = deploy_chain(wf)
    assert chain[0] == "dev" and chain[-1] == "prod"
    assert chain == ["dev", "staging", "prod"]
    for name in chain:
        assert wf["jobs"][name]["permissions"] == {"contents": "read", "id-token": "write"}


def test_deploy_stack_runs_pulumi_up_with_the_policy_pack() -> None:
    wf = load("deploy-stack.yml")
    assert triggers(wf)["workflow_call"]["inputs"]["stack"]["required"] is True
    job = wf["jobs"]["up"]
    assert job["environment"] == "${{ inputs.stack }}"  # prod's environment carries required reviewers
    assert job["concurrency"] == {"group": "pulumi-up-${{ inputs.stack }}", "cancel-in-progress": False}
    pulumi = step_using(job, PULUMI_ACTION)["with"]
    assert pulumi["command"] == "up"
    assert pulumi["policyPacks"] == "policies"
    assert pulumi["policyPackConfigs"] == "policy-config.json"
    assert pulumi["stack-name"].endswith("/ml-diagnostics/${{ inputs.stack }}")


USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<comment>.*)$")
PINNED = re.compile(r"(?P<action>[\w.-]+/[\w.-]+)@(?P<sha>[0-9a-f]{40})")
VERSION_COMMENT = re.compile(r"\s+# (?P<version>v\d+\.\d+\.\d+)")


def action_refs() -> list[tuple[str, int, str, str]]:
    """(file, line, ref, comment) of every `uses:` line of every workflow."""
    out = []
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if m := USES.match(line):
                out.append((path.name, n, m["ref"], m["comment"]))
    return out


def test_third_party_actions_are_pinned_to_a_commit_sha_with_the_version_in_a_comment() -> None:
    seen: dict[str, tuple[str, str]] = {}
    refs = [r for r in action_refs() if not r[2].startswith("./")]
    assert len(refs) >= 10
    for name, line, ref, comment in refs:
        m = PINNED.fullmatch(ref)
        assert m, f"{name}:{line}: {ref} is not pinned to a full commit SHA"
        v = VERSION_COMMENT.fullmatch(comment)
        assert v, f"{name}:{line}: {ref} needs its release in a comment, like '# v4.2.2'"
        pin = (m["sha"], v["version"])
        # One version of each action across all workflows: a bump is one search-and-replace.
        assert seen.setdefault(m["action"], pin) == pin, f"{name}:{line}: {m['action']} pinned twice"


def test_the_pin_check_rejects_tags_branches_and_missing_comments() -> None:
    for ref in ("actions/checkout@v4", "actions/checkout@main", "actions/checkout@11bd719"):
        assert PINNED.fullmatch(ref) is None
    assert VERSION_COMMENT.fullmatch("") is None and VERSION_COMMENT.fullmatch(" # v4") is None


def pulumi_pin() -> str:
    pins = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if ln.startswith("pulumi==")]
    assert len(pins) == 1
    return pins[0].removeprefix("pulumi==")


@pytest.mark.parametrize(("name", "job"), [("preview.yml", "preview"), ("deploy-stack.yml", "up")])
def test_pulumi_cli_version_is_read_from_the_sdk_pin(name: str, job: str, tmp_path: Path) -> None:
    j = load(name)["jobs"][job]
    versions = next(s for s in steps(j) if s.get("id") == "versions")
    assert step_using(j, PULUMI_ACTION)["with"]["pulumi-version"] == "${{ steps.versions.outputs.pulumi }}"
    # Run the step's own script against this repository's requirements.txt, as the runner would.
    out = tmp_path / "github_output"
    subprocess.run(
        ["bash", "-eo", "pipefail", "-c", versions["run"]],
        cwd=ROOT,
        env={"GITHUB_OUTPUT": str(out), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert out.read_text() == f"pulumi={pulumi_pin()}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+", pulumi_pin())


def test_verify_runs_after_each_deploy_and_its_exit_code_fails_the_job() -> None:
    job = load("deploy-stack.yml")["jobs"]["up"]
    names = [s.get("uses", "").split("@")[0] or s.get("id") or s.get("name", "") for s in steps(job)]
    verify = steps(job)[-1]
    assert names.index("pulumi/actions") == len(names) - 3
    # Between them: a second `pulumi up` only when the first left steps (manual -> managed; README).
    again = steps(job)[-2]
    assert "pulumi stack output pendingSteps --json" in again["run"]
    assert "jq -e 'length > 0'" in again["run"] and "--policy-pack policies" in again["run"]
    assert verify["env"] == {
        "STACK": "${{ inputs.stack }}",
        "PULUMI_STACK": "${{ vars.PULUMI_ORG }}/ml-diagnostics/${{ inputs.stack }}",
    }
    assert '.venv/bin/mldiag verify "$STACK" --pulumi-stack "$PULUMI_STACK"' in verify["run"]
    assert verify["run"].rstrip().endswith("exit $code")


def check_jsonschema() -> str:
    exe = Path(sys.executable).parent / "check-jsonschema"
    assert exe.exists(), "check-jsonschema is pinned in requirements-dev.txt"
    return str(exe)


def test_workflows_validate_against_the_published_github_workflow_schema() -> None:
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    run = subprocess.run(
        [check_jsonschema(), "--builtin-schema", "vendor.github-workflows", *files],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_schema_check_catches_a_broken_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    wf = load("deploy.yml")
    wf["jobs"]["test"]["runs-on"] = {"labels": 3}
    wf["jobs"]["test"]["timeout-minute"] = 5
    bad.write_text(yaml.safe_dump(wf))
    run = subprocess.run(
        [check_jsonschema(), "--builtin-schema", "vendor.github-workflows", str(bad)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert "bad.yml" in run.stdout


def test_the_projects_shell_scripts_pass_shellcheck() -> None:
    shellcheck = need_command("shellcheck")
    tracked = subprocess.run(
        ["git", "ls-files", "*.sh"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    scripts = [ROOT / ".ci" / "run", *(ROOT / f for f in tracked.stdout.split())]
    res = subprocess.run([shellcheck, *map(str, scripts)], capture_output=True, text=True, timeout=120)
    assert (res.returncode, res.stdout) == (0, "")
