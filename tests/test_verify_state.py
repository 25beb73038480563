"""`mldiag verify --stack ORG/PROJECT/STACK`: verify from a stack's state, whatever program registered the
components. The state is what the program's registrations leave (an offline plan exported as `pulumi stack
export --show-secrets` prints it: dev/fakes/state.py), read through a `pulumi` on PATH; the clusters and APIs
are the loopback fakes the config route's tests use."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.fakes import state as fake_state
from dev.fakes.arm_api import FakeArm
from dev.fakes.gke_api import FakeGkeApi
from dev.fakes.k8s_api import FakeKubeApi
from dev.fakes.vertex_api import FakeVertexApi
from ml_diagnostics import verify_record
from ml_diagnostics.rules.base import alias_of
from mldiag.engine.runtime import run_config
from mldiag.plan.cli import read_stack_file
from mldiag.verify import cli
from program import verify_stack as state
from program.kinds.table import BY_KEY, KINDS
from tests.fixtures.verify import IMAGE, aml_target, lab_target, stack_file
from tests.test_verify_cloud import (  # noqa: F401 (fixtures)
    MDC_NAME,
    ext_id,
    gke_plugin,
    gke_target,
    gke_world,
    mdc_target,
)

STACK = "organization/ml-diagnostics/test"


@pytest.fixture
def world(
    healthy_lab: FakeKubeApi,
    gke_world: tuple[FakeGkeApi, FakeKubeApi, dict[str, Any]],  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> Iterator[dict[str, Any]]:
    """One stack of every kind, each healthy: a self-managed cluster, a managed GKE cluster, a Model
    Development Cluster and an Azure ML extension (ARM only)."""
    gke, gke_kube, _ = gke_world
    with FakeVertexApi() as vertex, FakeArm() as arm:
        vertex.put_cluster(
            MDC_NAME, {"displayName": "dev CPU cluster", "clusterStatus": {"state": "RUNNING"}}
        )
        arm.put(ext_id("aks"), {"properties": {"provisioningState": "Succeeded", "currentVersion": "1.1.62"}})
        config = {
            "environment": "dev",
            "kubernetesClusters": [lab_target()],
            "gkeClusters": [gke_target()],
            "modelDevelopmentClusters": [mdc_target()],
            "azureMl": [aml_target("aks")],
            "googleApi": {
                "emulator": True,
                "endpoints": {"container": gke.url, "aiplatform": vertex.endpoint},
            },
        }
        yield {"config": stack_file(tmp_path, config), "kube": healthy_lab, "gke_kube": gke_kube, "arm": arm}


def deployed(config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **export: Any) -> None:
    """The stack of this stack file as `pulumi up` leaves it, readable through `pulumi stack export`."""
    raw, secret_keys = read_stack_file(config_file)
    plan = run_config(raw, secret_keys, stack="test")
    fake_state.fake_pulumi(tmp_path / "pulumi-bin", {STACK: fake_state.export_of(plan, **export)})
    monkeypatch.setenv("PATH", f"{tmp_path / 'pulumi-bin'}:{__import__('os').environ['PATH']}")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = cli.main([*args, "--format", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def same_target(target: str) -> str:
    """A target of the config route (`<key>/<name>`) as the state route names it: its kind's component and
    `<prefix>-<name>` (program/kinds/table.py)."""
    key, name = target.split("/", 1)
    kind = BY_KEY[key]
    return f"{kind.component.removeprefix(state.TOKEN)}/{kind.prefix}-{name}"


# The world's targets, one of each kind it runs.
SAME_TARGET = {
    t: same_target(t)
    for t in (
        "kubernetesClusters/lab",
        "gkeClusters/shared-train",
        "modelDevelopmentClusters/cpu",
        "azureMl/ml",
    )
}


def by_target(report: dict[str, Any]) -> dict[str, Any]:
    return {f"{t['kind']}/{t['name']}": (t["unreachable"], t["checks"]) for t in report["targets"]}


def test_a_stack_of_this_program_verifies_the_same_from_its_config_and_from_its_state(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    arm = world["arm"]
    from_config = run(capsys, "test", "--config-file", str(world["config"]), "--arm-endpoint", arm.url)
    deployed(world["config"], tmp_path, monkeypatch)
    from_state = run(capsys, "--stack", STACK, "--arm-endpoint", arm.url)
    assert from_config[0] == from_state[0] == 0, (from_config[1], from_state[1])
    config_targets, state_targets = by_target(from_config[1]), by_target(from_state[1])
    assert sorted(state_targets) == sorted(same_target(t) for t in config_targets)
    for target, component in SAME_TARGET.items():
        assert state_targets[component] == config_targets[target], target
    assert len([c for _, checks in config_targets.values() for c in checks]) >= 25
    assert from_state[1]["stack"] == STACK


def test_a_break_in_the_cluster_fails_its_check_from_the_state_too(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(world["config"], tmp_path, monkeypatch)
    kube: FakeKubeApi = world["kube"]
    ns = kube.objects[("/api/v1", "namespaces", "", "ai-workloads")]
    del ns["metadata"]["labels"]["managed-mldiagnostics-gke"]
    code, report, _ = run(capsys, "--stack", STACK, "--arm-endpoint", world["arm"].url)
    assert code == 1
    failed = {
        f"{t['kind']}/{t['name']}": [(c["name"], c["detail"]) for c in t["checks"] if not c["ok"]]
        for t in report["targets"]
    }
    assert failed == {
        "KubernetesCluster/k8s-lab": [("namespace.ai-workloads", "no managed-mldiagnostics-gke label")],
        "GkeCluster/gke-shared-train": [],
        "ModelDevelopmentCluster/mdc-cpu": [],
        "AzureMlExtension/azureml-ml": [],
    }


def test_the_cluster_is_reached_through_the_kubeconfig_the_stack_provider_holds(
    kube: FakeKubeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A secret kubeconfig in the provider's inputs (decrypted by the export), not the ambient one."""
    from tests.fixtures.verify import kubeconfig, seed_diagon, seed_manual_install, seed_namespaces

    seed_manual_install(kube)
    seed_namespaces(kube, "ai-workloads")
    seed_diagon(kube)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    target = lab_target(kubeconfig=yaml.safe_dump(kubeconfig(kube.url)))
    del target["context"]
    raw = {"ml-diagnostics:environment": "dev", "ml-diagnostics:kubernetesClusters": json.dumps([target])}
    plan = run_config(raw, ["ml-diagnostics:kubernetesClusters"], stack="test")
    export = fake_state.export_of(plan)
    provider = next(
        r for r in export["deployment"]["resources"] if r["type"] == "pulumi:providers:kubernetes"
    )
    assert set(provider["inputs"]["kubeconfig"]) == {fake_state.SECRET_SIG, "plaintext"}
    fake_state.fake_pulumi(tmp_path / "bin", {STACK: export})
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    code, report, _ = run(capsys, "--stack", STACK)
    assert code == 0, report
    assert kube.requests and kube.writes() == []


def test_a_state_from_before_the_record_is_checked_from_its_resources_where_they_are_exact(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    arm = world["arm"]
    from_config = by_target(
        run(capsys, "test", "--config-file", str(world["config"]), "--arm-endpoint", arm.url)[1]
    )
    deployed(world["config"], tmp_path, monkeypatch, drop_records=True)
    code, report, _ = run(capsys, "--stack", STACK, "--arm-endpoint", arm.url)
    got = by_target(report)
    for target in ("kubernetesClusters/lab", "gkeClusters/shared-train", "modelDevelopmentClusters/cpu"):
        assert got[SAME_TARGET[target]] == from_config[target], target
    unreachable, (check,) = got["AzureMlExtension/azureml-ml"]
    assert (unreachable, check["name"], check["ok"]) == (None, "verify.record", False)
    assert check["detail"] == (
        "not checked: deployed before ml-diagnostics recorded what verify needs (verifyRecord), and its "
        "resources do not say it exactly"
    )
    assert check["fix"].startswith("run `pulumi up` for this stack with ml-diagnostics 0.2.0 or later")
    assert code == 1


def test_an_api_server_that_is_gone_is_unreachable(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(world["config"], tmp_path, monkeypatch)
    world["kube"].stop()
    code, report, _ = run(capsys, "--stack", STACK, "--arm-endpoint", world["arm"].url)
    assert code == 3
    lab = next(t for t in report["targets"] if t["name"] == "k8s-lab")
    assert lab["unreachable"].startswith("Kubernetes API not reachable: ") and lab["checks"] == []


@pytest.mark.parametrize(
    ("exports", "message"),
    [
        (
            {},
            f"error: `pulumi stack export --show-secrets --stack {STACK}` failed: error: no stack named '{STACK}' found",
        ),
        (
            {
                STACK: {
                    "version": 3,
                    "deployment": {
                        "resources": [
                            {
                                "urn": "urn:pulumi:test::p::pulumi:pulumi:Stack::p-test",
                                "type": "pulumi:pulumi:Stack",
                            }
                        ]
                    },
                }
            },
            f"error: stack {STACK} holds no ml-diagnostics component (mldiag:index:*)",
        ),
        (
            {
                STACK: {
                    "version": 3,
                    "deployment": {
                        "resources": [
                            {
                                "urn": "u",
                                "type": "mldiag:index:Diagon",
                                "outputs": {
                                    "x": {fake_state.SECRET_SIG: fake_state.SECRET_VALUE, "ciphertext": "AAA"}
                                },
                            }
                        ]
                    },
                }
            },
            "error: the export holds encrypted secrets: it must be made with --show-secrets",
        ),
    ],
)
def test_a_state_that_cannot_be_read_is_exit_2_with_the_reason(
    exports: dict[str, Any],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_state.fake_pulumi(tmp_path / "bin", exports)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    code, report, err = run(capsys, "--stack", STACK)
    assert (code, report, err.strip()) == (2, {}, message)


def test_a_record_of_another_shape_or_a_newer_version_is_not_a_pass() -> None:
    base = {"urn": "urn:pulumi:s::p::mldiag:index:Diagon::d", "type": "mldiag:index:Diagon", "custom": False}
    found = state.targets(
        state.resources(
            {
                "resources": [
                    {**base, "outputs": {"verifyRecord": {"version": 9, "inCluster": {}}}},
                    {**base, "urn": base["urn"] + "2", "outputs": {"verifyRecord": {"version": 1}}},
                ]
            }
        )
    )
    sections = ", ".join(alias_of(s) for s in verify_record.SECTIONS)
    assert [t.problem for t in found] == [
        "its verifyRecord cannot be read: Value error, recorded by a newer ml-diagnostics (record version 9; this "
        "one reads up to 1): upgrade mldiag",
        f"its verifyRecord cannot be read: Value error, must hold exactly one of {sections}",
    ]
    assert sections.startswith("inCluster, gke, azureMl, modelDevelopment")
    (result, _) = state.run_once(found, cli.default_options())
    assert (result.checks[0].name, result.checks[0].ok) == ("verify.record", False)


def test_nested_components_are_checked_once_by_the_outermost(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw, secret_keys = read_stack_file(world["config"])
    plan = run_config(raw, secret_keys, stack="test")
    found = state.targets(state.resources(fake_state.export_of(plan)["deployment"]))
    assert sorted((t.kind, t.component.name, t.record.section if t.record else None) for t in found) == [
        ("AzureMlExtension", "azureml-ml", "azure_ml"),
        ("GkeCluster", "gke-shared-train", "gke"),
        ("KubernetesCluster", "k8s-lab", "in_cluster"),
        ("ModelDevelopmentCluster", "mdc-cpu", "model_development"),
    ]
    lab = next(t for t in found if t.kind == "KubernetesCluster").record
    assert lab is not None and lab.in_cluster is not None
    assert lab.in_cluster.diagon is not None and lab.in_cluster.diagon.image == IMAGE
    assert [r.release for r in lab.in_cluster.releases] == [
        "cert-manager",
        "mldiagnostics-injection-webhook",
        "mldiagnostics-connection-operator",
    ]


def test_the_cli_takes_a_stack_name_or_a_state_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["dev", "--stack", STACK], ["--stack", STACK, "--config-file", "x.yaml"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 2
    err = capsys.readouterr().err
    assert "give a stack name (its stack file) or --stack ORG/PROJECT/STACK (its state), one of them" in err
    assert (
        "--stack reads the stack's state: --config-file and --pulumi-stack read a stack file's config" in err
    )


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.key)
def test_each_kind_reads_its_records_and_its_older_states_by_its_own_hook(kind) -> None:
    """Verify from a state asks the kinds: each kind's section is a section of the record, and its state hook
    (program/kinds/<kind>/state.py, when it has one) rebuilds the components it names or reaches its
    clusters."""
    assert kind.section in verify_record.SECTIONS
    if kind.from_state is None:
        return
    hook = kind.from_state.load()
    assert callable(getattr(hook, "access", None)) or (hook.COMPONENTS and callable(hook.rebuild))
    for other in KINDS:
        if other is not kind and other.from_state is not None:
            assert not set(getattr(hook, "COMPONENTS", ())) & set(
                getattr(other.from_state.load(), "COMPONENTS", ())
            )


def test_verify_from_a_state_names_no_component_and_no_section() -> None:
    """No switch on type tokens or sections in program/verify_stack.py: the kinds' hooks say."""
    text = Path(state.__file__).read_text()
    assert "{TOKEN}" not in text
    for section in verify_record.SECTIONS:
        assert f'"{section}"' not in text
