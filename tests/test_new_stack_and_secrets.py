"""A stack of one's own, offline: `mldiag new-stack` (a real passphrase salt, the environment, nothing else
needed to plan), `mldiag secrets set` (the CLI's ciphertexts at a key path, comments kept), and stack files
whose `secure:` values or salt are not ciphertexts refused with the key path."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mldiag.common import ROOT
from mldiag.stacks import new_stack, secrets, stack_secrets
from program.stack_file import StackFileError, read

PASS = "a-passphrase-of-our-own"


@pytest.fixture()
def passphrase(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASS)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    return PASS


def test_new_stack_writes_a_passphrase_salt_and_the_environment(tmp_path: Path, passphrase: str) -> None:
    path = new_stack.create("team-a", "staging", stacks_dir=tmp_path)
    doc = yaml.safe_load(path.read_text())
    assert stack_secrets.key_from_state(passphrase, doc["encryptionsalt"])  # the CLI's passphrase check
    with pytest.raises(stack_secrets.SecretsError, match="incorrect passphrase|wrong passphrase"):
        stack_secrets.key_from_state("another", doc["encryptionsalt"])
    assert doc["config"] == {"ml-diagnostics:environment": "staging"}
    assert "# ml-diagnostics:gkeClusters:" in path.read_text()


@pytest.mark.parametrize(
    ("name", "env", "message"),
    [
        (
            "team a",
            "dev",
            "stack name 'team a': letters, digits, '-', '_' and '.', starting with a letter or digit",
        ),
        ("team-a", "dve", "--environment 'dve' (did you mean 'dev'?); allowed: dev, staging, prod"),
        (
            "team-a",
            "production",
            "--environment 'production' (did you mean 'prod'?); allowed: dev, staging, prod",
        ),
    ],
)
def test_new_stack_refuses_bad_names_and_environments(
    tmp_path: Path, passphrase: str, name: str, env: str, message: str
) -> None:
    with pytest.raises(new_stack.NewStackError) as e:
        new_stack.create(name, env, stacks_dir=tmp_path)
    assert str(e.value) == message
    assert list(tmp_path.iterdir()) == []


def test_new_stack_keeps_existing_files_and_refuses_the_example_passphrase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passphrase: str
) -> None:
    path = new_stack.create("team-a", "dev", stacks_dir=tmp_path)
    before = path.read_text()
    with pytest.raises(new_stack.NewStackError, match="exists already"):
        new_stack.create("team-a", "dev", stacks_dir=tmp_path)
    assert path.read_text() == before
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", stack_secrets.EXAMPLE_PASSPHRASE)
    with pytest.raises(new_stack.NewStackError, match="published passphrase"):
        new_stack.create("team-b", "dev", stacks_dir=tmp_path)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE")
    with pytest.raises(secrets.SecretInputError, match="no passphrase: set PULUMI_CONFIG_PASSPHRASE"):
        new_stack.create("team-b", "dev", stacks_dir=tmp_path)


def test_a_new_stack_plans_at_once(tmp_path: Path, passphrase: str) -> None:
    path = new_stack.create("team-a", "dev", stacks_dir=tmp_path)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mldiag.cli",
            "plan",
            "team-a",
            "--config-file",
            str(path),
            "-q",
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_secrets_set_encrypts_at_the_key_path_and_keeps_the_file(tmp_path: Path, passphrase: str) -> None:
    path = new_stack.create("team-a", "dev", stacks_dir=tmp_path)
    comment = "# ml-diagnostics:azureMl:"
    where = secrets.set_secret(path, "kubernetesClusters[0].kubeconfig", "kubeconfig-text")
    assert where == "ml-diagnostics:kubernetesClusters[0].kubeconfig"
    secrets.set_secret(path, 'ml-diagnostics:azureMl[0].inference["sslCertPem"]', "cert")
    secrets.set_secret(path, "kubernetesClusters[0].kubeconfig", "kubeconfig-text-2")  # replaced, not added
    text = path.read_text()
    assert comment in text and text.startswith("# Stack team-a (dev)")
    assert stack_secrets.decrypt_stack(text, passphrase) == {
        "ml-diagnostics:kubernetesClusters[0].kubeconfig": "kubeconfig-text-2",
        "ml-diagnostics:azureMl[0].inference.sslCertPem": "cert",
    }
    read(path, "ml-diagnostics")  # and the offline reader takes the ciphertexts


@pytest.mark.parametrize(
    ("key_path", "message"),
    [
        (
            "kubernetesClusters[1].kubeconfig",
            "ml-diagnostics:kubernetesClusters[1]: the list has 0 item(s); the next index is 0",
        ),
        ("environment.x", "ml-diagnostics:environment is not a map, so .x cannot be set in it"),
        ("kubernetesClusters[0]..x", "cannot read the key path at '..x'"),
    ],
)
def test_secrets_set_refuses_what_the_cli_would(
    tmp_path: Path, passphrase: str, key_path: str, message: str
) -> None:
    path = new_stack.create("team-a", "dev", stacks_dir=tmp_path)
    before = path.read_text()
    with pytest.raises(secrets.SecretInputError, match=re.escape(message)):
        secrets.set_secret(path, key_path, "v")
    assert path.read_text() == before


def test_secrets_set_with_the_wrong_passphrase_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passphrase: str
) -> None:
    path = new_stack.create("team-a", "dev", stacks_dir=tmp_path)
    before = path.read_text()
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "not-it")
    with pytest.raises(secrets.SecretInputError, match="wrong passphrase|incorrect passphrase"):
        secrets.set_secret(path, "kubernetesClusters[0].kubeconfig", "v")
    assert path.read_text() == before


def _stack(tmp_path: Path, salt_line: str, secure: str) -> Path:
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(
        f"{salt_line}config:\n  ml-diagnostics:environment: dev\n"
        f"  ml-diagnostics:kubernetesClusters:\n    - name: lab\n      kubeconfig:\n        secure: {secure}\n"
    )
    return path


GOOD_SALT = "encryptionsalt: v1:c2FsdHNhbHQ=:v1:bm9uY2Vub25jZTEy:Y2lwaGVydGV4dGNpcGhlcnRleHQ=\n"


@pytest.mark.parametrize(
    ("salt", "secure", "message"),
    [
        (
            GOOD_SALT,
            "hello",
            "ml-diagnostics:kubernetesClusters[0].kubeconfig: the `secure:` value is not a ciphertext of this "
            "stack's secrets provider (v1:<nonce>:<ciphertext>); set it with `mldiag secrets set` or "
            "`pulumi config set --secret`",
        ),
        (
            GOOD_SALT,
            "v1:c2hvcnQ=:Y2lwaGVydGV4dGNpcGhlcnRleHQ=",
            "the `secure:` value has no 12-byte base64 nonce",
        ),
        (GOOD_SALT, "v1:bm9uY2Vub25jZTEy:c2hvcnQ=", "the `secure:` value has no base64 AES-GCM ciphertext"),
        (
            "encryptionsalt: hello\n",
            "v1:bm9uY2Vub25jZTEy:Y2lwaGVydGV4dGNpcGhlcnRleHQ=",
            "encryptionsalt is not v1:",
        ),
        ("", "not base64!", "is not a ciphertext (base64) of the Pulumi Cloud secrets provider"),
    ],
)
def test_malformed_ciphertexts_are_refused_with_the_key_path(
    tmp_path: Path, salt: str, secure: str, message: str
) -> None:
    path = _stack(tmp_path, salt, secure)
    with pytest.raises(StackFileError) as e:
        read(path, "ml-diagnostics")
    assert message in str(e.value)
    run = subprocess.run(
        [sys.executable, "-m", "mldiag.cli", "plan", "s", "--config-file", str(path), "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr


def test_well_formed_ciphertexts_of_each_provider_are_read(tmp_path: Path) -> None:
    read(_stack(tmp_path, GOOD_SALT, "v1:bm9uY2Vub25jZTEy:Y2lwaGVydGV4dGNpcGhlcnRleHQ="), "ml-diagnostics")
    read(_stack(tmp_path, "", "AAECAwQFBgcICQoLDA0ODw=="), "ml-diagnostics")  # Pulumi Cloud: base64
