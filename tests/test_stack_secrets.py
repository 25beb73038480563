"""The shipped stacks carry real passphrase-provider secrets: the CLI's algorithm decrypts them with the
documented example passphrase, and the decrypted values pass the program's own config checks."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mldiag.stacks import stack_secrets
from mldiag.stacks.stack_secrets import EXAMPLE_PASSPHRASE, SecretsError
from program.config import parse
from tests.fixtures.tools import need

# The example stacks (encrypted with the published example passphrase); stacks of one's own have their own.
STACKS = [Path(stack_secrets.STACKS) / f"Pulumi.{name}.yaml" for name in sorted(stack_secrets.EXAMPLES)]


def cli_decrypt(passphrase: str, encryptionsalt: str, value: str) -> str:
    """Written out step by step as pkg/secrets/passphrase and sdk/go/common/resource/config/crypt.go do it."""
    version, salt_b64, check = encryptionsalt.split(":", 2)
    assert version == "v1"
    key = hashlib.pbkdf2_hmac("sha256", passphrase.encode(), base64.b64decode(salt_b64), 1_000_000, 32)
    for ciphertext, expected in ((check, "pulumi"), (value, None)):
        tag, nonce_b64, sealed_b64 = ciphertext.split(":")
        assert tag == "v1"
        nonce = base64.b64decode(nonce_b64)
        assert len(nonce) == 12
        plain = AESGCM(key).decrypt(nonce, base64.b64decode(sealed_b64), None).decode()
        if expected is not None:
            assert plain == expected  # the CLI's passphrase check
    return plain


@pytest.fixture(scope="module")
def decrypted() -> dict[str, dict[str, str]]:
    return {p.name: stack_secrets.decrypt_stack(p.read_text(), EXAMPLE_PASSPHRASE) for p in STACKS}


def test_every_stack_has_a_salt_and_every_secure_value_decrypts(decrypted):
    assert [p.name for p in STACKS] == ["Pulumi.dev.yaml", "Pulumi.prod.yaml", "Pulumi.staging.yaml"]
    assert all(p.exists() for p in STACKS)
    for path in STACKS:
        doc = yaml.safe_load(path.read_text())
        salt = doc["encryptionsalt"]
        assert len(base64.b64decode(salt.split(":")[1])) == 8, path.name
        secure = list(stack_secrets.secure_paths(doc["config"], ""))
        assert secure, path.name
        assert sorted(p for p, _ in secure) == sorted(decrypted[path.name])
        for key_path, ciphertext in secure:
            assert cli_decrypt(EXAMPLE_PASSPHRASE, salt, ciphertext) == decrypted[path.name][key_path]


def substitute(value, at: str, plain: dict[str, str]):
    """The config value with each `secure:` leaf replaced by its plaintext."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return plain[at]
        return {k: substitute(v, f"{at}.{k}" if at else k, plain) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, f"{at}[{i}]", plain) for i, v in enumerate(value)]
    return value


def test_decrypted_values_pass_the_config_checks(decrypted):
    for path in STACKS:
        doc = yaml.safe_load(path.read_text())
        plain = decrypted[path.name]
        config = {k: substitute(v, k, plain) for k, v in doc["config"].items()}
        secret_keys = sorted({p.split("[")[0].split(".")[0] for p in plain})
        raw = {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in config.items()}
        parse(raw, secret_keys)  # PEM shape checks run on the real values here
    prod = decrypted["Pulumi.prod.yaml"]
    assert prod["ml-diagnostics:azureMl[0].inference.sslCertPem"].startswith("-----BEGIN CERTIFICATE-----")
    assert prod["ml-diagnostics:azureMl[0].inference.sslKeyPem"].startswith("-----BEGIN PRIVATE KEY-----")


def test_a_wrong_passphrase_is_refused():
    with pytest.raises(SecretsError, match="cannot decrypt"):
        stack_secrets.decrypt_stack(STACKS[0].read_text(), "not-the-passphrase")


def test_rewrite_keeps_comments_and_layout_and_only_changes_values():
    text = (
        "config:\n"
        "  ml-diagnostics:environment: dev\n"
        "  ml-diagnostics:kubernetesClusters:\n"
        "    # a comment that must stay\n"
        "    - name: lab\n"
        "      kubeconfig:\n"
        "        secure: v1:old:old\n"
    )
    out = stack_secrets.rewrite(text, "dev", "pw", salt=b"12345678")
    first, rest = out.split("\n", 1)
    assert first.startswith("encryptionsalt: v1:MTIzNDU2Nzg=:v1:")
    assert rest.replace(rest.split("secure: ")[1].strip(), "X") == text.replace("v1:old:old", "X")
    again = stack_secrets.rewrite(out, "dev", "pw", salt=b"12345678")
    assert again.count("encryptionsalt:") == 1
    assert stack_secrets.decrypt_stack(again, "pw") == {
        "ml-diagnostics:kubernetesClusters[0].kubeconfig": stack_secrets.EXAMPLES["dev"][
            "ml-diagnostics:kubernetesClusters[0].kubeconfig"
        ]()
    }


def test_a_secure_value_without_an_example_is_an_error():
    text = (
        "config:\n  ml-diagnostics:azureMl:\n    - inference:\n        sslKeyPem:\n          secure: v1:a:b\n"
    )
    with pytest.raises(SecretsError) as e:
        stack_secrets.rewrite(text, "dev", "pw")
    assert str(e.value) == (
        "stack dev: no example plaintext for ml-diagnostics:azureMl[0].inference.sslKeyPem (add it to EXAMPLES)"
    )


def test_check_command_prints_key_paths_and_no_secret(capsys):
    assert stack_secrets.main(["--check", "prod"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "stacks/Pulumi.prod.yaml: ml-diagnostics:azureMl[0].inference.sslCertPem: decrypts",
        "stacks/Pulumi.prod.yaml: ml-diagnostics:azureMl[0].inference.sslKeyPem: decrypts",
        "stacks/Pulumi.prod.yaml: ml-diagnostics:kubernetesClusters[0].kubeconfig: decrypts",
    ]


def _built_cli() -> Path | None:
    """The Pulumi CLI the end-to-end tier builds from Go modules (dev/e2e/toolchain.sh), when present."""
    root = Path(os.environ.get("ML_DIAG_E2E_CACHE", Path.home() / ".cache" / "ml-diagnostics-e2e"))
    found = sorted(root.glob("*/bin/pulumi"))
    return found[-1] if found else None


def test_the_real_cli_decrypts_the_shipped_stacks(tmp_path, decrypted):
    need(
        _built_cli(),
        "no Pulumi CLI of the e2e toolchain on this machine (dev/e2e/toolchain.sh restores it)",
    )
    cli = str(_built_cli())
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    shutil.copy(Path(stack_secrets.ROOT) / "Pulumi.yaml", project)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PULUMI_HOME": str(tmp_path / "pulumi-home"),
        "PULUMI_BACKEND_URL": (tmp_path / "state").as_uri(),
        "PULUMI_SKIP_UPDATE_CHECK": "1",
        "PULUMI_CONFIG_PASSPHRASE": EXAMPLE_PASSPHRASE,
    }
    (tmp_path / "state").mkdir()

    def pulumi(*args: str, passphrase: str = EXAMPLE_PASSPHRASE) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [cli, *args, "--non-interactive"],
            cwd=project,
            env={**env, "PULUMI_CONFIG_PASSPHRASE": passphrase},
            capture_output=True,
            text=True,
            timeout=120,
        )

    for path in STACKS:
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        shutil.copy(path, project / "stacks")
        # `stack init` keeps the file's encryptionsalt when the passphrase matches it.
        init = pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
        assert init.returncode == 0, init.stderr
        assert (project / "stacks" / path.name).read_text() == path.read_text()
        for key_path, plain in decrypted[path.name].items():
            got = pulumi("config", "get", "--path", key_path, "-s", stack)
            assert got.returncode == 0, got.stderr
            assert got.stdout.rstrip("\n") == plain.rstrip("\n"), key_path
    wrong = pulumi("config", "get", "--path", key_path, "-s", stack, passphrase="not-the-passphrase")
    assert wrong.returncode != 0
    assert "passphrase" in (wrong.stdout + wrong.stderr).lower()
