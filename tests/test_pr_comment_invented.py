"""Values the offline plan invents (mock answers, secret placeholders): found in the plan, marked in every format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mldiag.diff import diff_plans, render, render_json, render_markdown, render_table
from mldiag.engine.invented import Inventory, answered, config_strings, invented_paths, mark_resources
from mldiag.engine.runtime import RecordedResource
from mldiag.plan.cli import plan_stack
from mldiag.report import render as plan_render
from program.kinds.gke.mocks import _gke_endpoint
from tests.fixtures.mermaid import mermaid_blocks
from tests.test_plan_diff import only, plan, res

MARK = "(offline: invented)"


@pytest.fixture(scope="module")
def dev() -> dict[str, Any]:
    return plan_stack("dev")


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in report["resources"]}


# --- detection ----------------------------------------------------------------------------------------


def test_dev_plan_marks_kubeconfigs_from_mock_endpoints_and_secret_placeholders(dev) -> None:
    res = by_name(dev)
    # Created cluster: its provider's kubeconfig holds the endpoint and CA the mock answered for the Cluster.
    assert res["gke-dev-train-k8s"]["invented"] == ["kubeconfig"]
    # Adopted cluster: the kubeconfig comes from the getCluster invoke's answer.
    assert res["gke-legacy-train-k8s"]["invented"] == ["kubeconfig"]
    # A `secure:` kubeconfig is a placeholder offline (still masked).
    assert res["k8s-lab-provider"]["inputs"]["kubeconfig"] == "[secret]"
    assert res["k8s-lab-provider"]["invented"] == ["kubeconfig"]
    # What the program computes from config is not invented, even where a mock answers the same text
    # (getCluster answers `<project>.svc.id.goog`, the created cluster computes it).
    assert res["gke-dev-train-cluster"]["invented"] == []
    assert res["gke-dev-train-cluster"]["inputs"]["workloadIdentityConfig"]["workloadPool"].endswith(
        ".svc.id.goog"
    )
    assert all(not r["invented"] for r in dev["resources"] if r["type"].startswith("kubernetes:"))
    assert dev["inventedOutputs"] == [
        "azureMl:aks-poc",
        "gkeCluster:dev-train.endpoint",
        "gkeCluster:legacy-train.endpoint",
        "modelDevelopmentCluster:cpu.name",
        "modelDevelopmentCluster:cpu.state",
    ]
    assert "offline-plan-placeholder" not in json.dumps(dev)


def test_prod_base64_encoded_placeholders_are_found() -> None:
    ext = by_name(plan_stack("prod", skip_policies=True))["azureml-aks-prod-extension"]
    assert ext["invented"] == [
        "configurationProtectedSettings.scoringFe.sslCert",
        "configurationProtectedSettings.scoringFe.sslKey",
    ]


def rec(
    urn: str, inputs: dict[str, Any], deps: list[str] = (), custom: bool = True, parent: str | None = None
):
    return RecordedResource(urn, "t", urn, custom, parent, None, list(deps), {}, inputs, inputs)


def test_a_resource_answer_counts_only_for_what_depends_on_it() -> None:
    endpoint = _gke_endpoint("p", "us-central1", "x")
    inv = Inventory([("cluster", [endpoint, "ACTIVE"])])
    resources = [
        rec("cluster", {}),
        rec("comp", {}, custom=False),
        rec("inside", {}, parent="comp"),
        rec("provider", {"kubeconfig": f"server: https://{endpoint}\n", "state": "ACTIVE"}, deps=["cluster"]),
        rec("later", {"copy": f"https://{endpoint}"}, deps=["comp"]),  # through a component's child
        rec("unrelated", {"note": f"https://{endpoint}", "state": "ACTIVE"}),
    ]
    resources[2].dependencies = ["provider"]
    assert mark_resources(resources, inv) == {"provider": ["kubeconfig", "state"], "later": ["copy"]}


def test_invoke_answers_count_everywhere_but_only_distinctive_strings_not_built_from_the_args() -> None:
    args = {"project": "acme-ml", "location": "us-central1", "name": "legacy"}
    answer = {
        "endpoint": "34.118.1.2",
        "workloadPool": "acme-ml.svc.id.goog",
        "channel": "REGULAR",
        "name": "legacy",
    }
    assert answered(args, answer, opaque=True) == ["34.118.1.2", "REGULAR"]
    inv = Inventory([(None, answered(args, answer, opaque=True))])
    inputs = {"a": "https://34.118.1.2", "b": "REGULAR", "c": "acme-ml.svc.id.goog"}
    assert invented_paths(inputs, inputs, inv, set()) == ["a"]


def test_strings_of_the_stack_config_are_not_evidence() -> None:
    config = {"ml-diagnostics:gkeClusters": json.dumps([{"currentVersion": "1.35.1-gke.1396000"}])}
    inv = Inventory([(None, ["1.35.1-gke.1396000", "34.118.9.9"])], config_strings(config))
    assert invented_paths(
        {"v": "1.35.1-gke.1396000", "e": "34.118.9.9"},
        {"v": "1.35.1-gke.1396000", "e": "34.118.9.9"},
        inv,
        None,
    ) == ["e"]


# --- the plan's own formats ---------------------------------------------------------------------------


def test_plan_table_marks_invented_outputs(dev) -> None:
    table = plan_render.render(dev, "table")
    line = next(ln for ln in table.splitlines() if ln.startswith("  gkeCluster:dev-train:"))
    assert line.endswith(f"{MARK[:-1]}: endpoint)")
    line = next(ln for ln in table.splitlines() if ln.startswith("  azureMl:aks-poc:"))
    assert line.endswith(MARK)
    line = next(ln for ln in table.splitlines() if ln.startswith("  environment:"))
    assert "offline" not in line
    assert json.loads(plan_render.render(dev, "json"))["inventedOutputs"] == dev["inventedOutputs"]


# --- the diff: JSON, table, Markdown, diagram ---------------------------------------------------------


def kube_provider(endpoint: str, invented: list[str] | None = None) -> dict[str, Any]:
    kubeconfig = json.dumps({"clusters": [{"cluster": {"server": f"https://{endpoint}"}}]})
    r = res(
        "pulumi:providers:kubernetes",
        "gke-dev-train-k8s",
        {"kubeconfig": kubeconfig, "context": "dev"},
        parent_type="mldiag:index:GkeCluster",
        provider=None,
    )
    if invented is not None:
        r["invented"] = invented
    return r


def endpoint_diff() -> dict[str, Any]:
    base = plan(kube_provider("34.118.1.1", ["kubeconfig"]))
    head = plan(kube_provider("34.118.2.2", ["kubeconfig"]))
    head["resources"][0]["inputs"]["context"] = "dev2"
    return diff_plans(base, head)


def test_diff_json_lists_invented_paths_and_sides() -> None:
    d = endpoint_diff()
    (e,) = d["resources"]
    assert e["invented"] == ["kubeconfig"]
    by_path = {c["path"]: c for c in e["changes"]}
    assert by_path["kubeconfig"]["oldInvented"] is by_path["kubeconfig"]["newInvented"] is True
    assert "oldInvented" not in by_path["context"] and "newInvented" not in by_path["context"]
    assert json.loads(render_json(d))["resources"][0]["invented"] == ["kubeconfig"]


def test_diff_table_and_markdown_mark_invented_values() -> None:
    d = endpoint_diff()
    table = render_table(d)
    line = next(ln for ln in table.splitlines() if ln.strip().startswith("kubeconfig:"))
    assert line.count(MARK) == 2 and f"{MARK} => " in line
    line = next(ln for ln in table.splitlines() if ln.strip().startswith("context:"))
    assert line.strip() == 'context: "dev" => "dev2"'
    md = render_markdown(d)
    row = next(ln for ln in md.splitlines() if ln.startswith("| <code>kubeconfig</code>"))
    assert row.count(f"</code> {MARK}") == 2
    row = next(ln for ln in md.splitlines() if ln.startswith("| <code>context</code>"))
    assert MARK not in row


def test_diff_diagram_marks_a_change_of_invented_values() -> None:
    d = endpoint_diff()
    (block,) = mermaid_blocks(render_markdown(d))
    assert "(offline: invented value)" in block
    assert "(offline: invented value)" in render(d, "dot")
    plain = diff_plans(plan(kube_provider("x", [])), plan(kube_provider("y", [])))
    assert "offline" not in mermaid_blocks(render_markdown(plain))[0]


def test_added_resources_and_masked_secrets_are_marked_too() -> None:
    head = kube_provider("34.118.2.2", ["kubeconfig"])
    d = diff_plans(None, plan(head))
    md = render_markdown(d)
    row = next(ln for ln in md.splitlines() if ln.startswith("| <code>kubeconfig</code>"))
    assert row.endswith(f"</code> {MARK} |")
    old, new = (kube_provider(e, ["kubeconfig"]) for e in ("a", "b"))
    for r, digest in ((old, "1111"), (new, "2222")):
        r["inputs"]["kubeconfig"] = "[secret]"
        r["secretDigests"] = {"kubeconfig": digest}
    d = diff_plans(plan(old), plan(new))
    (c,) = only(d)["changes"]
    assert c == {
        "path": "kubeconfig",
        "old": "[secret]",
        "new": "[secret]",
        "secret": True,
        "oldInvented": True,
        "newInvented": True,
    }
    assert f"[secret] {MARK} => [secret] {MARK}  [secret changed]" in render_table(d)


def test_a_base_planned_before_the_plan_recorded_invented_values_takes_the_heads_paths() -> None:
    base = plan(kube_provider("34.118.1.1"))  # no "invented" key at all
    head = plan(kube_provider("34.118.2.2", ["kubeconfig"]))
    (c,) = only(diff_plans(base, head))["changes"]
    assert c["oldInvented"] is c["newInvented"] is True
