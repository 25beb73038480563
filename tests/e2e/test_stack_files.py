"""The shipped example stacks with the real CLI: their `secure:` values decrypt with the documented example
passphrase (README "Accounts and credentials"), to exactly what tools/stack_secrets.py decrypts, and a
wrong passphrase is refused. No plugin is needed: decryption happens before the program runs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON
from tools import stack_secrets
from tools.e2e.harness import REPO, Project

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)
STACKS = ("dev", "staging", "prod")


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
