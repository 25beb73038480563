"""Stacks against the pack, through the offline plan (`python -m mldiag.plan.cli`, run in-process via its main()).

- every stack in stacks/ passes its own environment's policy config (no mandatory finding);
- every file in tests/bad_stacks/ (named after its rule) exits 1 with mandatory findings of that rule only.
Rules a stack file cannot express (the config loader or the components already refuse the input, or no
component declares the resource) are listed with the reason, so the corpus covers every rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mldiag.engine.runtime import ROOT, run_config
from mldiag.plan import cli as plan
from tests.fixtures import policy_corpus
from tests.fixtures.policies import EXPECTED, res
from tests.fixtures.policy_corpus import NOT_EXPRESSIBLE, not_expressible
from tests.fixtures.stacks import STACK_NAMES
from tests.test_policies_kubernetes import webhook

BAD = ROOT / "tests" / "bad_stacks"
for _rule, _reason in {
    "k8s-daemonset-memory-limit": "the Diagon component fixes the seed's 256Mi limit; no config changes it",
    "helm-chart-version-pinned": "the config loader refuses chart versions that are not exact semver",
    "helm-mldiagnostics-requires-cert-manager": "the components always depend on cert-manager or mark it "
    "pre-installed",
    "gke-managed-diagnostics-explicit": "GkeCluster always sets the managed block",
    "gke-no-manual-releases-when-managed": "ClusterMlDiagnostics creates no manual release on the managed path",
    "azureml-workloads-enabled": "the config loader refuses a target with neither training nor inference",
    "azureml-secrets-protected": "AzureMlExtension sends PEMs and connection strings only as protected secrets",
    "azureml-cluster-scope": "AzureMlExtension always uses cluster scope and namespace azureml",
    "azureml-arc-relay": "AzureMlExtension always creates the relay for kind arc",
    "aks-managed-identity-local-accounts": "no component declares AKS clusters (they are attached, not created)",
    "mdc-node-pool-references": "the config loader refuses undefined node pool and partition ids",
    "mdc-slurm-config-exclusive": "the config loader refuses config together with scheduling/accounting",
    "k8s-diagon-no-cpu-limit": "the Diagon component sets no CPU limit; no config adds one",
    "k8s-host-network-dns-policy": "the Diagon component sets dnsPolicy ClusterFirstWithHostNet with hostNetwork",
    "k8s-opt-in-label-value": "WorkloadOptIn always writes the label value 'true'",
    "helm-cert-manager-installcrds-deprecated": "advisory in every environment: a stack with it still exits 0 "
    "(test_policies_kubernetes covers the finding)",
    "azureml-setting-keys-case": "AzureMlExtension writes setting keys from typed config",
    "azureml-internal-lb-aks-only": "the config loader allows internalLoadBalancerProvider only for kind aks",
    "azureml-inference-router-ha": "no component declares AKS clusters (they are attached, not created)",
    "aks-no-pod-identity": "no component declares AKS clusters (they are attached, not created)",
    "aks-node-size-minimum": "no component declares AKS clusters (they are attached, not created)",
    "aks-authorized-ip-ranges": "no component declares AKS clusters (they are attached, not created)",
}.items():
    not_expressible(_rule, _reason)
policy_corpus.load()  # the reasons of rules whose own test files give them


def run_plan(capsys, stack: str, config_file: Path | None = None) -> tuple[int, dict]:
    argv = [stack, "--format", "json", "-q"]
    if config_file is not None:
        argv += ["--config-file", str(config_file)]
    code = plan.main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_corpus_covers_every_rule():
    corpus = {p.stem for p in BAD.glob("*.yaml")}
    assert not corpus & set(NOT_EXPRESSIBLE)
    assert corpus | set(NOT_EXPRESSIBLE) == set(EXPECTED)


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_every_stack_passes_its_own_environment(capsys, stack):
    code, report = run_plan(capsys, stack)
    mandatory = [v for v in report["policyViolations"] if v["enforcementLevel"] == "mandatory"]
    assert mandatory == []
    assert code == 0


@pytest.mark.parametrize("path", sorted(BAD.glob("*.yaml")), ids=lambda p: p.stem)
def test_bad_stack_exits_1_and_names_its_rule(capsys, path):
    env = "prod"
    assert f"ml-diagnostics:environment: {env}" in path.read_text()
    code, report = run_plan(capsys, env, path)
    assert code == 1
    mandatory = {v["policy"] for v in report["policyViolations"] if v["enforcementLevel"] == "mandatory"}
    assert mandatory == {path.stem}
    assert all("Remediation:" in v["message"] for v in report["policyViolations"] if v["policy"] == path.stem)


def recorded(stack: str):
    config, secret_keys = plan.read_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    return run_config(config, secret_keys, stack=stack).resources


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_manual_release_on_a_real_managed_gke_cluster_is_caught(pack, stack):
    """The provider-to-cluster link works on what the GKE component really registers (created and adopted)."""
    resources = recorded(stack)
    managed_parents = {
        r.parent
        for r in resources
        if (
            r.type == "gcp:container/cluster:Cluster"
            and r.inputs["managedMachineLearningDiagnosticsConfig"]["enabled"]
        )
        or (r.type == "pulumi-python:dynamic/gke:ManagedMlDiagnostics" and r.inputs["enabled"])
    }
    providers = [
        r for r in resources if r.type == "pulumi:providers:kubernetes" and r.parent in managed_parents
    ]
    assert providers
    rogue = [
        res("kubernetes:helm.sh/v3:Release", f"rogue-{i}", webhook(), provider=p.urn)
        for i, p in enumerate(providers)
    ]
    found = pack.findings("gke-no-manual-releases-when-managed", resources + rogue, stack)
    assert sorted(v.urn for v in found) == sorted(r.urn for r in rogue)


def test_real_webhook_without_its_cert_manager_dependency_is_caught(pack):
    resources = recorded("dev")
    releases = [r for r in resources if r.type == "kubernetes:helm.sh/v3:Release"]
    # Pair them by cluster (their Kubernetes provider), never by registration order.
    webhook_release = min(
        (r for r in releases if r.inputs.get("name") == "mldiagnostics-injection-webhook"),
        key=lambda r: r.urn,
    )
    (cert_manager,) = [
        r
        for r in releases
        if r.inputs.get("chart") == "cert-manager" and r.provider == webhook_release.provider
    ]
    assert cert_manager.urn in webhook_release.dependencies
    assert pack.findings("helm-mldiagnostics-requires-cert-manager", resources, "dev") == []
    webhook_release.dependencies.remove(cert_manager.urn)
    (v,) = pack.findings("helm-mldiagnostics-requires-cert-manager", resources, "dev")
    assert v.urn == webhook_release.urn and v.enforcement_level == "mandatory"
