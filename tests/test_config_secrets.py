"""`secure:` values wherever the schema takes free-form data never show, in any output of any outcome.

The offline plan never decrypts: what could leak there is the ciphertext or the placeholder standing in for it.
Under the real engine the decrypted text arrives; the engine-mode test gives the program plain values plus the
stack file that says where the `secure:` leaves are, and checks the resource inputs carry them as secrets.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from mldiag.common import ROOT
from mldiag.engine.runtime import run_config
from mldiag.plan import cli as plan
from program.config_base import PLACEHOLDER_SECRET

MARK = "LEAKCHECK"
FORBIDDEN = (MARK, PLACEHOLDER_SECRET)


def _secret(n: int) -> dict[str, str]:
    # a well-formed v1:<12-byte nonce>:<ciphertext> whose base64 text carries the mark
    return {"secure": f"v1:bm9uY2Vub25jZTEy:{MARK}{n:03d}AAAAAAAAAAAAAAAAAAAAAAAAAA=="}


def stack_with_secrets(extra: dict | None = None) -> dict:
    """The dev stack with a `secure:` value in every free-form place (chart values of every chart, nested maps
    and lists) and in every secret key."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    cfg = doc["config"]
    n = iter(range(1000))
    for kind in ("ml-diagnostics:kubernetesClusters", "ml-diagnostics:gkeClusters"):
        for t in cfg[kind]:
            t["certManager"] = {
                "values": {"webhook": {"token": _secret(next(n))}, "extraArgs": [_secret(next(n))]}
            }
            manual = t.setdefault("manualInstall", {})
            manual["injectionWebhook"] = {"values": {"auth": {"token": _secret(next(n))}}}
            manual["connectionOperator"] = {"values": {"list": [{"k": _secret(next(n))}]}}
    cfg["ml-diagnostics:kubernetesClusters"][0]["kubeconfig"] = _secret(next(n))
    for t in cfg["ml-diagnostics:modelDevelopmentClusters"]:
        t["orchestratorSpec"]["slurmSpec"].setdefault("scheduling", {})["token"] = _secret(next(n))
    cfg.update(extra or {})
    return doc


def write(tmp_path: Path, doc: dict) -> Path:
    f = tmp_path / "Pulumi.leak.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return f


def assert_clean(text: str, where: str) -> None:
    for bad in FORBIDDEN:
        assert bad not in text, f"{bad} shows in {where}"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = plan.main(["dev", "-q", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", ["json", "table", "markdown"])
def test_plan_success_every_format_and_out_files(tmp_path, capsys, fmt):
    f = write(tmp_path, stack_with_secrets())
    code, out, err = run(capsys, "--config-file", str(f), "--format", fmt, "--out", str(tmp_path / "out"))
    assert code in (0, 1), err
    assert_clean(out, f"{fmt} output")
    assert_clean(err, "stderr")
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert_clean(p.read_text(), str(p))
    if fmt == "json":
        assert out.count('"[secret]"') >= 10


def test_policy_failure_keeps_secrets(tmp_path, capsys):
    doc = stack_with_secrets()
    doc["config"]["ml-diagnostics:kubernetesClusters"][0]["diagon"]["image"] = (
        "docker.io/someone/diagon:latest"
    )
    f = write(tmp_path, doc)
    prod_levels = ROOT / "policies" / "config" / "environments" / "prod.json"
    for fmt in ("json", "table", "markdown"):
        code, out, err = run(
            capsys, "--config-file", str(f), "--format", fmt, "--policy-config", str(prod_levels)
        )
        assert code == 1, err
        assert "k8s-images-pinned" in out
        assert_clean(out, f"{fmt} stdout")
        assert_clean(err, f"{fmt} stderr")


def test_config_failure_keeps_secrets(tmp_path, capsys):
    doc = stack_with_secrets({"ml-diagnostics:azureMl": [{"name": "Bad Name", "cluster": _secret(999)}]})
    doc["config"]["ml-diagnostics:gkeClusters"][0]["project"] = _secret(998)
    f = write(tmp_path, doc)
    code, out, err = run(capsys, "--config-file", str(f), "--format", "json")
    assert code == 2
    assert "gkeClusters[0].project: a `secure:` value is not allowed here" in err
    assert_clean(out + err, "config error")


def test_diff_base_output_keeps_secrets(tmp_path, capsys):
    f = write(tmp_path, stack_with_secrets())
    code, out, err = run(capsys, "--config-file", str(f), "--format", "markdown", "--diff-base", "HEAD")
    assert_clean(out, "diff output")
    assert_clean(err, "stderr")


def test_engine_mode_marks_free_form_secrets_from_the_stack_file(tmp_path, monkeypatch):
    """Real engine: decrypted values arrive, the stack file says where `secure:` was."""
    doc = stack_with_secrets()
    (tmp_path / "stacks").mkdir()
    (tmp_path / "Pulumi.yaml").write_text("name: ml-diagnostics\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "stacks" / "Pulumi.dev.yaml").write_text(yaml.safe_dump(doc))

    secret_keys = []

    def decrypt(value):
        if isinstance(value, dict) and set(value) == {"secure"}:
            return value["secure"].replace("v1:bm9uY2Vub25jZTEy:", "PLAINTEXT:")
        if isinstance(value, dict):
            return {k: decrypt(v) for k, v in value.items()}
        if isinstance(value, list):
            return [decrypt(v) for v in value]
        return value

    config = {}
    for key, value in doc["config"].items():
        config[key] = decrypt(value)
        if config[key] != value:
            secret_keys.append(key)
    monkeypatch.chdir(tmp_path)
    result = run_config(config, secret_keys, stack="dev", program=ROOT / "__main__.py")
    masked = repr([r.inputs for r in result.resources]) + repr(result.outputs)
    unmasked = repr([r.unmasked_inputs for r in result.resources])
    assert "PLAINTEXT" not in masked
    assert unmasked.count("PLAINTEXT") >= 10
    assert os.getcwd() == str(tmp_path)
