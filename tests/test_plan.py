"""The offline plan engine: stack file reading, recording, critical path, rendering, exit codes."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

import pytest
import yaml

from mldiag.engine.analyzer import load_pack_config, run_policies
from mldiag.engine.runtime import ROOT, RecordedResource, deterministic_order, run_config
from mldiag.plan.cli import build_report, critical_path, read_stack_file
from mldiag.report import render as plan_render
from program.config import PLACEHOLDER_SECRET
from tests.fixtures.plan_cli import run_plan
from tests.fixtures.stacks import STACK_NAMES

STACKS = STACK_NAMES
SECRET_VALUE = "s3cr3t-value-that-must-never-print"

PROGRAM = textwrap.dedent(
    """
    import pulumi
    from pulumi_kubernetes.apps.v1 import DaemonSet
    from pulumi_kubernetes.core.v1 import Namespace, Secret

    cfg = pulumi.Config("ml-diagnostics")
    comp = pulumi.ComponentResource("mldiag:index:Test", "t")
    ns = Namespace("t-ns", metadata={"name": "diag"}, opts=pulumi.ResourceOptions(parent=comp))
    sec = Secret("t-secret", metadata={"namespace": ns.metadata.name},
                 string_data={"token": cfg.require_secret("token")}, opts=pulumi.ResourceOptions(parent=comp))
    ds = DaemonSet(
        "t-ds",
        metadata={"namespace": ns.metadata.name},
        spec={"selector": {"matchLabels": {"a": "b"}},
              "template": {"metadata": {"labels": {"a": "b"}},
                           "spec": {"containers": [{"name": "c", "image": cfg.require("image")}]}}},
        opts=pulumi.ResourceOptions(parent=comp, depends_on=[sec]),
    )
    comp.register_outputs({})
    pulumi.export("token", cfg.require_secret("token"))
    pulumi.export("namespace", ns.metadata.name)
    """
)


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    p = tmp_path / "__main__.py"
    p.write_text(PROGRAM)
    return p


def run_test_program(program: Path, image: str = "registry.example/diag:v1"):
    config = {"ml-diagnostics:token": SECRET_VALUE, "ml-diagnostics:image": image}
    return run_config(config, ["ml-diagnostics:token"], stack="dev", program=program)


def test_records_every_registration_with_wire_inputs(program):
    result = run_test_program(program)
    types = [(r.type, r.name, r.custom) for r in result.resources]
    assert types == [
        ("mldiag:index:Test", "t", False),
        ("kubernetes:core/v1:Namespace", "t-ns", True),
        ("kubernetes:core/v1:Secret", "t-secret", True),
        ("kubernetes:apps/v1:DaemonSet", "t-ds", True),
    ]
    ns, sec, ds = result.resources[1:]
    assert ns.inputs == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "diag"}}
    assert ns.parent == result.resources[0].urn
    assert sec.inputs["stringData"] == "[secret]"
    assert sec.unmasked_inputs["stringData"] == {"token": SECRET_VALUE}
    assert set(ds.dependencies) == {ns.urn, sec.urn}
    assert ds.inputs["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/diag:v1"
    assert result.outputs == {"token": "[secret]", "namespace": "diag"}


def test_secret_digest_changes_with_the_secret_but_reveals_nothing(program):
    a = run_test_program(program).resources[2]
    b = run_config(
        {"ml-diagnostics:token": "other", "ml-diagnostics:image": "x:1"},
        ["ml-diagnostics:token"],
        program=program,
    ).resources[2]
    assert set(a.secret_digests) == {"stringData"}
    assert a.secret_digests != b.secret_digests
    assert SECRET_VALUE not in json.dumps(a.to_json())


def test_no_plaintext_secret_in_any_format_or_out_dir(program, tmp_path):
    result = run_test_program(program)
    report = build_report(result, [])
    for fmt in ("table", "json", "markdown"):
        assert SECRET_VALUE not in plan_render.render(report, fmt), fmt
    out = tmp_path / "out"
    written = plan_render.write_out(report, out)
    assert written == 3
    for f in out.rglob("*"):
        if f.is_file():
            assert SECRET_VALUE not in f.read_text(), f
    manifest = yaml.safe_load((out / "manifests" / "daemonset-t-ds.yaml").read_text())
    assert manifest["kind"] == "DaemonSet"
    assert manifest["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/diag:v1"


def _res(urn: str, deps=(), parent=None, custom=True, provider=None) -> RecordedResource:
    return RecordedResource(urn, "t", urn, custom, parent, provider, list(deps), {}, {}, {})


def test_critical_path_follows_dependencies_providers_and_component_children():
    resources = [
        _res("cluster"),
        _res("provider", deps=["cluster"]),
        _res("comp", custom=False),
        _res("ns", parent="comp", provider="provider"),
        _res("release", parent="comp", deps=["ns"], provider="provider"),
        _res("late", deps=["comp"]),  # waits for every custom child of the component
        _res("independent"),
    ]
    cp = critical_path(resources)
    assert cp == {"depth": 5, "urns": ["cluster", "provider", "ns", "release", "late"]}
    assert critical_path([]) == {"depth": 0, "urns": []}


def test_read_stack_file_replaces_secure_values_and_marks_secret_keys(tmp_path):
    f = tmp_path / "Pulumi.x.yaml"
    f.write_text(
        textwrap.dedent(
            """
            encryptionsalt: v1:c2FsdHNhbHQ=:v1:bm9uY2Vub25jZTEy:Y2lwaGVydGV4dGNpcGhlcnRleHQ=
            config:
              environment: dev
              ml-diagnostics:kubernetesClusters:
                - name: a
                  kubeconfig:
                    secure: v1:bm9uY2Vub25jZTEy:Y2lwaGVydGV4dGNpcGhlcnRleHQ=
              gcp:project: p
            """
        )
    )
    config, secret_keys = read_stack_file(f)
    assert config["ml-diagnostics:environment"] == "dev"
    kubeconfig = config["ml-diagnostics:kubernetesClusters"][0]["kubeconfig"]
    assert kubeconfig.startswith(PLACEHOLDER_SECRET + ":")
    assert secret_keys == ["ml-diagnostics:kubernetesClusters"]
    assert config["gcp:project"] == "p"


def test_images_rule_through_the_analyzer_levels_per_environment(program):
    result = run_test_program(program, image="registry.example/diag:latest")
    for env, level in (("dev", "advisory"), ("prod", "mandatory")):
        pack_config = load_pack_config(ROOT / "policies" / "config" / "environments" / f"{env}.json")
        violations, levels = run_policies(result.resources, pack_config, "ml-diagnostics", env)
        pinned = [v for v in violations if v.policy == "k8s-images-pinned"]
        assert levels["k8s-images-pinned"] == level
        assert len(pinned) == 1
        assert pinned[0].enforcement_level == level
        assert pinned[0].urn.endswith("kubernetes:apps/v1:DaemonSet::t-ds")
        assert "registry.example/diag:latest" in pinned[0].message


@pytest.mark.parametrize("stack", STACKS)
def test_plan_every_stack_json_shape_and_exit_code(stack):
    proc = run_plan(stack, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert list(report) == [
        "project",
        "stack",
        "resources",
        "outputs",
        "inventedOutputs",
        "policyViolations",
        "criticalPath",
    ]
    assert report["project"] == "ml-diagnostics" and report["stack"] == stack
    for r in report["resources"]:
        assert {"urn", "type", "name", "custom", "parent", "provider", "dependencies", "inputs"} <= set(r)
    for v in report["policyViolations"]:
        assert set(v) == {"policy", "enforcementLevel", "urn", "message"}
        assert v["enforcementLevel"] != "mandatory"
    assert set(report["criticalPath"]) == {"depth", "urns"}
    assert PLACEHOLDER_SECRET not in proc.stdout
    assert "[plan" in proc.stderr  # progress goes to stderr, never into the JSON
    urns = [r["urn"] for r in report["resources"]]
    for i, r in enumerate(report["resources"]):
        assert all(urns.index(u) < i for u in (r["parent"], r["provider"], *r["dependencies"]) if u in urns)


def test_plan_output_is_the_same_in_every_run():
    """Set iteration (hash seed) and the SDK's registration order change nothing in the report."""
    one, two = (run_plan("dev", "--format", "json", "-q", hash_seed=seed) for seed in ("1", "2"))
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout


def test_deterministic_order_ignores_the_order_of_registration():
    resources = [
        _res("c-cluster"),
        _res("b-provider", deps=["c-cluster"]),
        _res("a-comp", custom=False),
        _res("z-ns", parent="a-comp", provider="b-provider"),
        _res("d-release", parent="a-comp", deps=["z-ns", "c-cluster"], provider="b-provider"),
        _res("e-independent"),
    ]
    expected = ["a-comp", "c-cluster", "b-provider", "e-independent", "z-ns", "d-release"]
    for seed in range(20):
        shuffled = resources[:]
        random.Random(seed).shuffle(shuffled)
        for r in shuffled:
            random.Random(seed).shuffle(r.dependencies)
        ordered = deterministic_order(shuffled)
        assert [r.urn for r in ordered] == expected
        assert ordered[5].dependencies == ["c-cluster", "z-ns"]


def test_plan_invalid_config_exits_2_with_key_path_and_no_traceback(tmp_path):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  ml-diagnostics:environment: qa\n  ml-diagnostics:azureMll: []\n")
    proc = run_plan("bad", "--config-file", str(bad), "-q")
    assert proc.returncode == 2
    assert "ml-diagnostics:environment: must be one of 'dev', 'staging' or 'prod'" in proc.stderr
    assert "ml-diagnostics:azureMll: unknown key" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_plan_missing_stack_file_exits_2(tmp_path):
    proc = run_plan("nosuchstack", "-q")
    assert proc.returncode == 2
    assert "stacks/Pulumi.nosuchstack.yaml does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_plan_bad_policy_config_exits_2(tmp_path):
    cfg = tmp_path / "p.json"
    cfg.write_text(json.dumps({"k8s-images-pinned": "fatal", "no-such-policy": "advisory"}))
    proc = run_plan("dev", "--policy-config", str(cfg), "-q")
    assert proc.returncode == 2
    assert "policy config names unknown policies: no-such-policy" in proc.stderr


def test_plan_bad_stack_exits_1_and_names_the_rule():
    bad = ROOT / "tests" / "stacks" / "Pulumi.bad-latest-image.yaml"
    proc = run_plan("staging", "--config-file", str(bad), "--format", "json", "-q")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    mandatory = [v for v in report["policyViolations"] if v["enforcementLevel"] == "mandatory"]
    assert [v["policy"] for v in mandatory] == ["k8s-images-pinned"]
    assert mandatory[0]["urn"].endswith("kubernetes:apps/v1:DaemonSet::k8s-lab-mldiag-diagon-daemonset")
    assert "mldiagnostics-daemon:latest" in mandatory[0]["message"]
