"""README "Quick start" as a new user runs it, offline: `mldiag new-stack`, an example uncommented, a secret set
with `mldiag secrets set`, `mldiag plan`, then `mldiag verify` against a loopback API server, the secret
decrypted with the passphrase as `mldiag secrets` decrypts it. And every example `mldiag new-stack` writes
plans with no finding, uncommented alone, in every environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from dev.fakes.k8s_api import FakeKubeApi
from mldiag.common import PROJECT, ROOT
from mldiag.exit_codes import Exit
from mldiag.plan import cli as plan_cli
from mldiag.stacks import new_stack, policy_config
from program.config_base import ENVIRONMENTS
from program.kinds.table import BY_KEY, KINDS, TargetKind
from tests.fixtures.verify import kubeconfig, run_verify, seed_diagon, seed_manual_install, seed_namespaces

MLDIAG = ROOT / ".venv" / "bin" / "mldiag"
PASS = "a-passphrase-of-our-own"
# The Azure ML example's placeholder subscription, as its stack's own pack config lists it (README "Configuration").
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


def uncomment(text: str, kind: TargetKind) -> str:
    """The stack file `mldiag new-stack` wrote, with `kind`'s example uncommented as a user does it."""
    lines = kind.docs.example.replace("{project}", PROJECT).splitlines()
    commented = "".join(f"  # {line}\n" for line in lines)
    assert commented in text
    return text.replace(commented, "".join(f"  {line}\n" for line in lines))


def stack_pack_config(tmp_path: Path, stack: str, environment: str) -> Path:
    """The pack config `mldiag policy-config` makes of the environment's levels and the stack's own file."""
    config_dir = tmp_path / "policy-config"
    shutil.copytree(policy_config.ENVIRONMENTS_DIR, config_dir / "environments")
    own = {"azureml-allowed-subscriptions": {"allowedSubscriptions": [SUBSCRIPTION]}}
    (config_dir / f"{stack}.json").write_text(json.dumps(own))
    config, _ = policy_config.effective(stack, environment=environment, config_dir=config_dir)
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("environment", ENVIRONMENTS)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.key)
def test_each_example_uncommented_alone_plans_with_no_finding(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: TargetKind,
    environment: str,
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASS)
    path = new_stack.create("team-a", environment, stacks_dir=tmp_path)
    path.write_text(uncomment(path.read_text(), kind))
    pack = stack_pack_config(tmp_path, "team-a", environment)
    code = plan_cli.main(
        ["team-a", "--config-file", str(path), "--policy-config", str(pack), "--format", "json", "-q"]
    )
    out, err = capsys.readouterr()
    assert code == Exit.OK, err
    report = json.loads(out)
    assert report["policyViolations"] == []
    assert any(r["type"] == kind.component for r in report["resources"])


def test_the_examples_pin_diagon_to_the_release_the_vendor_docs_name() -> None:
    from ml_diagnostics import compat

    for key in ("kubernetesClusters", "gkeClusters"):
        example = yaml.safe_load(BY_KEY[key].docs.example.replace("{project}", PROJECT))
        (target,) = example[f"{PROJECT}:{key}"]
        assert target["diagon"] == {"enabled": True, "image": compat.DIAGON_RELEASED_IMAGE}
    assert compat.DIAGON_RELEASED_IMAGE.endswith("/daemon/diagon-daemon:v2.1.0")
    assert compat.DIAGON_DEFAULT_IMAGE.endswith(":latest")  # the library default stays: deployed stacks


def mldiag(*args: str, env: dict[str, str], stdin: Path | None = None) -> subprocess.CompletedProcess[str]:
    with open(stdin or os.devnull) as source:
        return subprocess.run(
            [str(MLDIAG), *args], env=env, stdin=source, capture_output=True, text=True, timeout=300
        )


def test_new_stack_secret_plan_and_verify_offline(kube: FakeKubeApi, tmp_path: Path) -> None:
    kube.token = "lab-token-not-to-be-printed"
    seed_manual_install(kube)
    seed_namespaces(kube, "ai-workloads")
    seed_diagon(kube)
    secret = tmp_path / "kubeconfig.yaml"
    secret.write_text(yaml.safe_dump(kubeconfig(kube.url, token=kube.token)))
    env = {**os.environ, "PULUMI_CONFIG_PASSPHRASE": PASS, "KUBECONFIG": os.devnull}
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    stack = tmp_path / "Pulumi.lab.yaml"
    where = ("--config-file", str(stack))

    made = mldiag("new-stack", "lab", "--environment", "dev", *where, env=env)
    assert (made.returncode, made.stdout) == (0, f"wrote {stack}\nnext: add targets, then `mldiag plan lab "
                                              f"--config-file {stack}`\n"), made.stderr  # fmt: skip
    stack.write_text(uncomment(stack.read_text(), BY_KEY["kubernetesClusters"]))
    key = "kubernetesClusters[0].kubeconfig"
    put = mldiag("secrets", "set", "lab", key, *where, env=env, stdin=secret)
    assert put.stdout == f"{stack}: {PROJECT}:{key}: encrypted\n", put.stderr
    planned = mldiag("plan", "lab", *where, "-q", "--format", "json", env=env)
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["policyViolations"] == []

    verified = mldiag("verify", "lab", *where, "--format", "json", env=env)
    assert verified.returncode == Exit.OK, verified.stdout + verified.stderr
    (target,) = json.loads(verified.stdout)["targets"]
    assert [c["name"] for c in target["checks"] if not c["ok"]] == []
    assert {"diagon.image", "diagon.logs", "namespace.ai-workloads"} <= {c["name"] for c in target["checks"]}
    assert {r.authorization for r in kube.requests} == {f"Bearer {kube.token}"}  # the decrypted kubeconfig's
    assert kube.token not in verified.stdout + verified.stderr + put.stdout + put.stderr

    wrong = mldiag("verify", "lab", *where, env={**env, "PULUMI_CONFIG_PASSPHRASE": "not-the-passphrase"})
    assert (wrong.returncode, wrong.stdout) == (Exit.INVALID, "")
    assert wrong.stderr == (
        f"error: {stack}: incorrect passphrase: PULUMI_CONFIG_PASSPHRASE is not the passphrase its secrets "
        "were encrypted with\n"
    )
    passphrase_file = tmp_path / "passphrase"
    passphrase_file.write_text(PASS + "\n")
    by_file = {k: v for k, v in env.items() if k != "PULUMI_CONFIG_PASSPHRASE"}
    from_file = mldiag(
        "verify", "lab", *where, env={**by_file, "PULUMI_CONFIG_PASSPHRASE_FILE": str(passphrase_file)}
    )
    assert from_file.returncode == Exit.OK, from_file.stdout + from_file.stderr
    without = mldiag("verify", "lab", *where, "--format", "json", env=by_file)
    assert without.returncode == Exit.UNREACHABLE
    assert json.loads(without.stdout)["targets"][0]["unreachable"] == (
        "its kubeconfig is a secret the stack file holds encrypted: set PULUMI_CONFIG_PASSPHRASE (or "
        "PULUMI_CONFIG_PASSPHRASE_FILE) to the stack's passphrase to decrypt it offline, or pass --pulumi-stack "
        "ORG/ml-diagnostics/STACK (the Pulumi CLI decrypts it)"
    )


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (
            "secretsprovider: gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k\n",
            "its secrets provider is gcpkms:// (a cloud KMS key, which mldiag never calls): pass --pulumi-stack "
            "ORG/ml-diagnostics/STACK (the Pulumi CLI decrypts it)",
        ),
        (
            "",
            "its secrets are the Pulumi Cloud secrets provider's: pass --pulumi-stack ORG/ml-diagnostics/STACK "
            "(the Pulumi CLI decrypts it)",
        ),
    ],
    ids=["cloud-kms", "pulumi-cloud"],
)
def test_other_secrets_providers_need_the_pulumi_cli_and_say_so(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    header: str,
    reason: str,
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASS)  # set, and not what these stacks need
    ciphertext = "v1:AAECAwQFBgcICQoL:AAECAwQFBgcICQoLDA0ODw==" if header else "AAECAwQFBgcICQoLDA0ODw=="
    stack = tmp_path / "Pulumi.lab.yaml"
    stack.write_text(
        f"{header}config:\n  {PROJECT}:environment: dev\n  {PROJECT}:kubernetesClusters:\n"
        f"    - name: lab\n      kubeconfig: {{secure: '{ciphertext}'}}\n"
        "      manualInstall: {jaxVersion: '0.8'}\n"
    )
    code, report, _ = run_verify(capsys, stack)
    assert code == Exit.UNREACHABLE
    assert (
        report["targets"][0]["unreachable"]
        == f"its kubeconfig is a secret the stack file holds encrypted: {reason}"
    )
