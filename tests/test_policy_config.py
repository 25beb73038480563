"""A stack's policy pack config: its environment's levels (declared by the policy pack's rules, written to
policies/config/environments/), then its own optional policies/config/<stack>.json over them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mldiag_policy import levels

from dev.gen.policy_levels import render_environment
from mldiag.common import ROOT
from mldiag.stacks import policy_config
from program.config_base import ENVIRONMENTS


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_the_environment_files_are_written_from_the_rules_declarations(env: str) -> None:
    path = ROOT / "policies" / "config" / "environments" / f"{env}.json"
    assert path.read_text() == render_environment(env), "run: python -m dev.gen.policy_levels --write"
    assert policy_config.environment_defaults(env) == json.loads(path.read_text())


def test_the_products_environments_are_the_ones_the_pack_publishes() -> None:
    assert ENVIRONMENTS == levels.ENVIRONMENTS
    published = sorted(p.stem for p in (ROOT / "policies" / "config" / "environments").glob("*.json"))
    assert published == sorted(ENVIRONMENTS)


def test_an_environment_the_pack_has_not_published_is_named(tmp_path: Path) -> None:
    for env in ENVIRONMENTS:
        with pytest.raises(policy_config.PolicyConfigInputError) as e:
            policy_config.effective("nosuch", environment=env, config_dir=tmp_path)
        assert str(e.value) == (
            f"{tmp_path / 'environments' / f'{env}.json'} does not exist: the policy pack publishes it "
            "(python -m dev.gen.policy_levels --write)"
        )
    with pytest.raises(policy_config.PolicyConfigInputError, match="environment 'qa' is unknown"):
        policy_config.environment_defaults("qa")


def test_strictness_follows_the_environment_not_the_stack_name(tmp_path: Path) -> None:
    (tmp_path / "environments").mkdir()
    for env in ENVIRONMENTS:
        (tmp_path / "environments" / f"{env}.json").write_text(render_environment(env))
    stack = tmp_path / "Pulumi.team-a.yaml"
    stack.write_text("config:\n  ml-diagnostics:environment: dev\n")
    config, sources = policy_config.effective("team-a", stack_file=stack, config_dir=tmp_path)
    assert config["all"] == "advisory"
    assert config["mdc-deletion-policy"] == {
        "enforcementLevel": "advisory",
        "allowedDeletionPolicies": ["DELETE", "ABANDON", "PREVENT"],
    }
    assert sources == [tmp_path / "environments" / "dev.json"]
    stack.write_text("config:\n  ml-diagnostics:environment: prod\n")
    config, _ = policy_config.effective("team-a", stack_file=stack, config_dir=tmp_path)
    assert config["all"] == "mandatory" and config["mdc-node-images-pinned"] == "mandatory"


def test_a_stack_file_of_its_own_overrides_level_and_options(tmp_path: Path) -> None:
    (tmp_path / "environments").mkdir()
    (tmp_path / "environments" / "prod.json").write_text(render_environment("prod"))
    (tmp_path / "edge.json").write_text(
        json.dumps(
            {
                "mdc-deletion-policy": {"allowedDeletionPolicies": ["PREVENT"]},
                "aks-authorized-ip-ranges": "mandatory",
                "azureml-allowed-subscriptions": {
                    "allowedSubscriptions": ["00000000-0000-0000-0000-00000000000a"]
                },
            }
        )
    )
    config, sources = policy_config.effective("edge", environment="prod", config_dir=tmp_path)
    assert config["mdc-deletion-policy"] == {
        "enforcementLevel": "mandatory",
        "allowedDeletionPolicies": ["PREVENT"],
    }
    assert config["aks-authorized-ip-ranges"] == "mandatory"
    # a rule the environment does not name takes the environment's level, written out for the CLI
    assert config["azureml-allowed-subscriptions"] == {
        "enforcementLevel": "mandatory",
        "allowedSubscriptions": ["00000000-0000-0000-0000-00000000000a"],
    }
    assert sources == [tmp_path / "environments" / "prod.json", tmp_path / "edge.json"]


def test_the_command_prints_the_effective_config_and_refuses_bad_input(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mldiag.cli", "policy-config", "dev"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0
    printed = json.loads(run.stdout)
    assert printed == policy_config.effective("dev")[0]
    assert printed["azureml-allowed-subscriptions"]["allowedSubscriptions"] == [
        "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f"
    ]
    missing = subprocess.run(
        [sys.executable, "-m", "mldiag.cli", "policy-config", "nosuch"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and missing.stderr == "error: stacks/Pulumi.nosuch.yaml does not exist\n"
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text("config:\n  ml-diagnostics:environment: qa\n")
    with pytest.raises(
        policy_config.PolicyConfigInputError, match="environment 'qa' is unknown; allowed: dev, staging, prod"
    ):
        policy_config.effective("x", stack_file=stack, config_dir=tmp_path)
