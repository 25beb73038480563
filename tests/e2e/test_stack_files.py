"""Stack files with the real CLI: the shipped example stacks' `secure:` values decrypt with the documented
example passphrase to exactly what mldiag/stacks/stack_secrets.py decrypts, and a wrong passphrase is refused; a
stack made offline by `mldiag new-stack`, with a value set by `mldiag secrets set`, is taken as it is by
`pulumi stack init` and the CLI decrypts the value. No plugin is needed: decryption happens before the
program runs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from dev.e2e.harness import REPO, Project
from mldiag.stacks import new_stack, secrets, stack_secrets
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)
STACKS = sorted(
    p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (REPO / "stacks").glob("Pulumi.*.yaml")
)


def at(value: Any, path: str) -> Any:
    for key in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        value = value[int(key[1:-1])] if key.startswith("[") else value[key]
    return value


def test_shipped_stacks_decrypt_with_the_documented_passphrase(e2e_bin: Path, tmp_path: Path) -> None:
    project = Project(tmp_path, e2e_bin)
    for stack in STACKS:
        shutil.copy2(REPO / "stacks" / f"Pulumi.{stack}.yaml", project.stack_file(stack))
    project.env["PULUMI_CONFIG_PASSPHRASE"] = "not-the-passphrase"
    wrong = project.pulumi("stack", "init", "dev", "--secrets-provider", "passphrase", check=False)
    assert wrong.returncode != 0 and "incorrect passphrase" in wrong.output, wrong.output
    project.env["PULUMI_CONFIG_PASSPHRASE"] = stack_secrets.EXAMPLE_PASSPHRASE
    for stack in STACKS:
        text = (REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text()
        # `stack init` takes the file's encryptionsalt as it is (the passphrase must match it).
        project.pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
        assert project.stack_file(stack).read_text() == text
        shown = project.pulumi("config", "--show-secrets", "--json", stack=stack).json()
        expected = stack_secrets.decrypt_stack(text, stack_secrets.EXAMPLE_PASSPHRASE)
        assert expected, f"stack {stack} has no secret"
        for path, plaintext in expected.items():
            top, rest = re.fullmatch(r"([^.\[]+)\.?(.*)", path).groups()
            entry = shown[top]
            assert entry["secret"] is True, path
            value = at(entry["objectValue"], rest) if rest else entry["value"]
            assert value == plaintext, path


def test_a_new_stack_and_its_offline_secret_are_the_clis(
    e2e_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Project(tmp_path, e2e_bin)
    passphrase = "a-team-passphrase-for-e2e"
    project.env["PULUMI_CONFIG_PASSPHRASE"] = passphrase
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", passphrase)
    kubeconfig = "apiVersion: v1\nkind: Config\nusers: [{name: a, user: {token: s3cr3t}}]"
    path = new_stack.create("team-a", "dev", stacks_dir=project.root / "stacks")
    secrets.set_secret(path, "kubernetesClusters[0].kubeconfig", kubeconfig)
    secrets.set_secret(path, 'azureMl[0].inference["sslKeyPem"]', "-----BEGIN PRIVATE KEY-----\nx\n")
    text = path.read_text()
    project.pulumi("stack", "init", "team-a", "--secrets-provider", "passphrase")
    assert path.read_text() == text
    got = project.pulumi(
        "config", "get", "--path", "ml-diagnostics:kubernetesClusters[0].kubeconfig", stack="team-a"
    )
    assert got.stdout.rstrip("\n") == kubeconfig
    shown = project.pulumi("config", "--show-secrets", "--json", stack="team-a").json()
    assert shown["ml-diagnostics:azureMl"]["secret"] is True
    assert shown["ml-diagnostics:azureMl"]["objectValue"] == [
        {"inference": {"sslKeyPem": "-----BEGIN PRIVATE KEY-----\nx\n"}}
    ]
    assert shown["ml-diagnostics:environment"]["value"] == "dev"
