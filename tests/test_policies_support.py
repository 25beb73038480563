"""Shared harness for the policy tests (no tests here): one policy pack subprocess per test session,
driven over the Analyzer protocol by tools/analyzer.py, and small builders for recorded resources."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tools.analyzer import PolicyPackProcess, Violation
from tools.plan_runtime import ROOT, RecordedResource

ENVS = ("dev", "staging", "prod")
A, M = "advisory", "mandatory"
# policy -> (dev, staging, prod)
EXPECTED = {
    "k8s-images-pinned": (A, M, M),
    "k8s-images-allowed-registries": (A, M, M),
    "k8s-privileged-only-diagon": (A, M, M),
    "k8s-daemonset-memory-limit": (A, M, M),
    "helm-chart-version-pinned": (A, M, M),
    "helm-allowed-repositories": (A, M, M),
    "helm-cert-manager-crds": (M, M, M),
    "helm-connection-operator-jax": (A, M, M),
    "helm-mldiagnostics-requires-cert-manager": (M, M, M),
    "gke-managed-diagnostics-min-version": (M, M, M),
    "gke-managed-diagnostics-explicit": (A, M, M),
    "gke-no-manual-releases-when-managed": (M, M, M),
    "azureml-workloads-enabled": (M, M, M),
    "azureml-inference-https": (A, M, M),
    "azureml-secrets-protected": (M, M, M),
    "azureml-cluster-scope": (A, M, M),
    "azureml-arc-relay": (A, M, M),
    "azureml-allowed-subscriptions": (A, M, M),
    "aks-managed-identity-local-accounts": (A, M, M),
    "mdc-node-pool-references": (M, M, M),
    "mdc-slurm-config-exclusive": (M, M, M),
    "mdc-node-images-pinned": (A, A, M),
    "mdc-deletion-policy": (A, A, M),
}
SECRET_SIG = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
K8S_PROVIDER = "urn:pulumi:test::ml-diagnostics::pulumi:providers:kubernetes::lab"


def secret(value: Any) -> dict[str, Any]:
    """A property value as the engine sends a secret."""
    return {**SECRET_SIG, "value": value}


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:test::ml-diagnostics::{type_}::{name}"


def res(
    type_: str,
    name: str,
    inputs: dict[str, Any],
    *,
    provider: str | None = None,
    parent: str | None = None,
    deps: tuple[str, ...] = (),
    prop_deps: dict[str, list[str]] | None = None,
) -> RecordedResource:
    return RecordedResource(
        urn=urn(type_, name),
        type=type_,
        name=name,
        custom=True,
        parent=parent,
        provider=provider,
        dependencies=list(deps),
        property_dependencies=prop_deps or {},
        inputs=inputs,
        unmasked_inputs=inputs,
    )


def env_config(env: str) -> dict[str, Any]:
    return json.loads((ROOT / "policies" / "config" / f"{env}.json").read_text())


class Pack:
    def __init__(self, proc: PolicyPackProcess):
        self.proc = proc
        self.info = proc.info()
        self._configured: str | None = None

    def configure(self, env: str | dict[str, Any]) -> dict[str, str]:
        cfg = env_config(env) if isinstance(env, str) else env
        key = json.dumps(cfg, sort_keys=True)
        levels = self.proc.configure(self.info, cfg)
        self._configured = key
        return levels

    def run(self, resources: list[RecordedResource], env: str | dict[str, Any] = "prod") -> list[Violation]:
        self.configure(env)
        return self.proc.analyze(resources)

    def findings(
        self, policy: str, resources: list[RecordedResource], env: str | dict[str, Any] = "prod"
    ) -> list[Violation]:
        return [v for v in self.run(resources, env) if v.policy == policy]


@pytest.fixture(scope="session")
def pack():
    with PolicyPackProcess() as proc:
        yield Pack(proc)


def body(v: Violation) -> str:
    """The violation message without the policy description line the SDK puts first."""
    return v.message.split("\n", 1)[1] if "\n" in v.message else v.message


def levels_ok(pack, policy, resources):
    """Each environment reports the policy once, at the level its config file sets."""
    for env in ENVS:
        found = pack.findings(policy, resources, env)
        assert [v.enforcement_level for v in found] == [EXPECTED[policy][ENVS.index(env)]], env


def the(pack, policy, resources, env="prod"):
    """The one finding of `policy`, as its message body."""
    found = pack.findings(policy, resources, env)
    assert len(found) == 1, found
    return body(found[0])
