"""Two rollouts creating the coordination stack at once (mldiag/fleet/executor.py `_select`): the one whose
create is refused because the other created the stack and already updates it (a local backend says "the stack
is currently locked", not "already exists") selects it, so it goes on to wait for the lease or name its
holder. With the real Pulumi CLI of the e2e toolchain, the other update's lock written as the backend writes it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pulumi import automation as auto

from mldiag.fleet.executor import _create_or_select
from tests.fixtures.tools import need
from tests.test_stack_secrets import _built_cli


@pytest.fixture
def locked_stack(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    cli = _built_cli()
    need(cli, "no Pulumi CLI of the e2e toolchain on this machine (dev/e2e/toolchain.sh restores it)")
    assert cli is not None
    (tmp_path / "state").mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: lease-race\nruntime: python\n")
    env = {
        "HOME": str(tmp_path),
        "PULUMI_HOME": str(tmp_path / "pulumi-home"),
        "PULUMI_BACKEND_URL": (tmp_path / "state").as_uri(),
        "PULUMI_SKIP_UPDATE_CHECK": "1",
        "PULUMI_CONFIG_PASSPHRASE": "lease-race",
    }
    subprocess.run(
        [str(cli), "stack", "init", "env.fleet", "--non-interactive"],
        cwd=project, env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    lock = (
        tmp_path / "state" / ".pulumi" / "locks" / "organization" / "lease-race" / "env.fleet" / "other.json"
    )
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(
        json.dumps({"pid": 1, "username": "ci", "hostname": "runner", "timestamp": "2027-01-15T08:00:00Z"})
    )
    return project, env, cli


def test_a_create_refused_because_the_other_rollout_holds_the_new_stack_selects_it(locked_stack) -> None:
    project, env, cli = locked_stack
    opts = auto.LocalWorkspaceOptions(
        env_vars=env, pulumi_command=auto.PulumiCommand(root=str(cli.parent.parent), skip_version_check=True)
    )
    with pytest.raises(auto.CommandError, match="the stack is currently locked"):
        auto.create_stack(stack_name="env.fleet", work_dir=str(project), opts=opts)
    stack = _create_or_select("env.fleet", work_dir=str(project), opts=opts)
    assert stack.name == "env.fleet"


def test_a_create_refused_for_another_reason_is_that_reason(locked_stack) -> None:
    project, env, cli = locked_stack
    opts = auto.LocalWorkspaceOptions(
        env_vars=env, pulumi_command=auto.PulumiCommand(root=str(cli.parent.parent), skip_version_check=True)
    )
    with pytest.raises(auto.CommandError, match="a stack name may only contain alphanumeric"):
        _create_or_select("bad name!", work_dir=str(project), opts=opts)
