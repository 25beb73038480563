"""The PR comment puts danger first: headline, one-line stacks, findings before the graph, the size budget."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag.common import GITHUB_COMMENT_LIMIT, ROOT
from mldiag.diff import cli as diff_cli
from mldiag.diff import diff_plans, render_json, render_markdown, render_table
from mldiag.diff.danger import DANGEROUS, classify
from mldiag.diff.headline import headline
from mldiag.plan.cli import plan_stack
from mldiag.report import render as plan_render
from tests.fixtures.mermaid import mermaid_blocks
from tests.test_plan_diff import daemonset, extension, opt_in, plan, res, violation

MARK = "(offline: invented)"
GKE = "mldiag:index:GkeCluster"


# --- fixtures -----------------------------------------------------------------------------------------


def cluster(target: str = "gke-dev-train", location: str = "us-central1", **extra: Any) -> dict[str, Any]:
    r = res(
        "gcp:container/cluster:Cluster",
        f"{target}-cluster",
        {"name": target.removeprefix("gke-"), "location": location, "project": "acme"},
        parent_type=GKE,
        provider=None,
    )
    return r | extra


def pool(pool_name: str, target: str = "gke-dev-train", location: str = "us-central1") -> dict[str, Any]:
    return res(
        "gcp:container/nodePool:NodePool",
        f"{target}-pool-{pool_name}",
        {"name": pool_name, "cluster": target, "location": location, "project": "acme"},
        parent_type=GKE,
        provider=None,
    )


def namespace(name: str, parent: str = "mldiag:index:WorkloadOptIn", rname: str = "") -> dict[str, Any]:
    return res(
        "kubernetes:core/v1:Namespace",
        rname or f"gke-dev-train-mldiag-opt-in-{name}",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        parent_type=parent,
    )


def moved_cluster() -> dict[str, Any]:
    """A GKE cluster and its two node pools move to another region; a workload namespace goes."""
    base = plan(cluster(), pool("system"), pool("l4"), namespace("ml-dev"), daemonset())
    head = plan(
        cluster(location="us-east1"), pool("system", location="us-east1"), pool("l4", location="us-east1")
    )
    head["resources"].append(daemonset(image="diagon:v3"))
    return diff_plans(base, head)


# --- 1. the headline ----------------------------------------------------------------------------------

HEADLINE = (
    "⚠️ dev: replaces GKE cluster gke-dev-train-cluster, 2 node pools (gke-dev-train-pool-l4, "
    "gke-dev-train-pool-system); deletes namespace ml-dev — 3 replaces, 1 delete, 1 update"
)


def test_headline_names_a_replaced_cluster_and_its_node_pools_first() -> None:
    d = moved_cluster()
    assert headline(d) == HEADLINE
    assert render_table(d).splitlines()[0] == HEADLINE
    md = render_markdown(d)
    assert md.splitlines()[0] == (
        "### ⚠️ <code>dev</code>: replaces GKE cluster <code>gke-dev-train-cluster</code>, 2 node pools "
        "(<code>gke-dev-train-pool-l4</code>, <code>gke-dev-train-pool-system</code>); deletes namespace "
        "<code>ml-dev</code> — 3 replaces, 1 delete, 1 update"
    )


@pytest.fixture(scope="module")
def dev_moved() -> dict[str, Any]:
    """The real dev stack with its created GKE cluster moved to another region and its namespace dropped."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    gke = {t["name"]: t for t in doc["config"]["ml-diagnostics:gkeClusters"]}
    gke["dev-train"]["location"] = "us-east1"
    gke["dev-train"]["workloadNamespaces"] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Pulumi.dev.yaml"
        path.write_text(yaml.safe_dump(doc))
        head = plan_stack("dev", config_file=path)
    return diff_plans(plan_stack("dev"), head)


def test_real_dev_plan_headline_and_the_invented_endpoint(dev_moved) -> None:
    assert render_table(dev_moved).splitlines()[0] == (
        "⚠️ dev: replaces GKE cluster gke-dev-train-cluster, 2 node pools (gke-dev-train-pool-l4, "
        "gke-dev-train-pool-system); deletes namespace ml-dev in gke-dev-train — 3 replaces, 1 delete, 2 updates"
    )
    # The provider's kubeconfig changes with the mock endpoint: marked in every format.
    k8s = next(e for e in dev_moved["resources"] if e["name"] == "gke-dev-train-k8s")
    assert k8s["invented"] == ["kubeconfig"]
    assert f"{MARK} => " in render_table(dev_moved)
    md = render_markdown(dev_moved)
    assert "(offline: invented value)" in mermaid_blocks(md)[0]
    assert next(ln for ln in md.splitlines() if ln.startswith("| <code>kubeconfig</code>")).count(MARK) == 2


def test_the_diff_lists_the_costly_replaces_and_deletes() -> None:
    d = moved_cluster()
    assert [(i["action"], i["kind"], i["name"]) for i in d["dangerous"]] == [
        ("replace", "GKE cluster", "gke-dev-train-cluster"),
        ("replace", "node pool", "gke-dev-train-pool-l4"),
        ("replace", "node pool", "gke-dev-train-pool-system"),
        ("delete", "namespace", "ml-dev"),
    ]
    assert render_json(d).count('"kind": "node pool"') == 2


def test_every_costly_kind_is_in_one_table_and_matched_from_it() -> None:
    types = {c.type for c in DANGEROUS}
    assert types == {
        "gcp:container/cluster:Cluster",
        "gcp:container/nodePool:NodePool",
        "azure-native:kubernetesconfiguration:Extension",
        "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster",
        "pulumi-python:dynamic/gke:ManagedMlDiagnostics",
        "kubernetes:core/v1:Namespace",
    }
    urn = "urn:pulumi:dev::ml-diagnostics::mldiag:index:AzureMlExtension$"
    for token in (
        "azure-native:kubernetesconfiguration:Extension",
        "azure-native:kubernetesconfiguration/v20230501:Extension",
        "azure-native:kubernetesconfiguration/v20240401preview:Extension",
    ):
        assert classify(token, f"{urn}{token}::x").one == "Azure ML extension", token
    ns = "kubernetes:core/v1:Namespace"
    for parent in ("mldiag:index:WorkloadOptIn", "mldiag:index:Diagon", "mldiag:index:MlDiagnosticsManual"):
        assert classify(ns, f"urn:pulumi:dev::p::{GKE}${parent}${ns}::x").one == "namespace"
    assert classify(ns, f"urn:pulumi:dev::p::mldiag:index:Other${ns}::x") is None
    assert classify("kubernetes:core/v1:NamespacePatch", f"urn:pulumi:dev::p::{GKE}${ns}Patch::x") is None
    assert (
        classify("kubernetes:apps/v1:DaemonSet", "urn:pulumi:dev::p::kubernetes:apps/v1:DaemonSet::x") is None
    )


def test_headline_of_each_kind_protection_and_many_names() -> None:
    ext_base = extension("aks-poc")
    ext_head = copy.deepcopy(ext_base)
    ext_head[1]["inputs"]["extensionName"] = "azureml2"
    mdc = res(
        "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster",
        "mdc-cpu-cluster",
        {"model_development_cluster_id": "a"},
        parent_type="mldiag:index:ModelDevelopmentCluster",
        provider=None,
    )
    flag = res(
        "pulumi-python:dynamic/gke:ManagedMlDiagnostics",
        "gke-legacy-train-managed-mldiagnostics",
        {"cluster": "legacy-train", "enabled": True},
        parent_type=GKE,
        provider=None,
    )
    diagon_ns = namespace("diagon", "mldiag:index:Diagon", "k8s-lab-mldiag-diagon-namespace")
    pools = [pool(f"p{i}") for i in range(7)]
    protected = cluster("gke-prod-tpu") | {"protect": True}
    base = plan(*ext_base, mdc, flag, diagon_ns, *pools, protected, opt_in("team-a"))
    mdc_head = copy.deepcopy(mdc)
    mdc_head["inputs"]["model_development_cluster_id"] = "b"
    head = plan(*ext_head, mdc_head, *[pool(f"p{i}", location="eu") for i in range(7)])
    d = diff_plans(base, head, rules={**diff_rules(), mdc["type"]: ("model_development_cluster_id",)})
    assert headline(d) == (
        "⚠️ dev: replaces 7 node pools (gke-dev-train-pool-p0, gke-dev-train-pool-p1, gke-dev-train-pool-p2, "
        "gke-dev-train-pool-p3, gke-dev-train-pool-p4, +2 more), Azure ML extension aks-poc-extension, "
        "Model Development Cluster mdc-cpu-cluster; "
        "deletes GKE cluster gke-prod-tpu-cluster (protected: the update fails), "
        "GKE ML diagnostics flag gke-legacy-train-managed-mldiagnostics, namespace diagon "
        "— 9 replaces, 4 deletes"
    )


def diff_rules() -> dict[str, Any]:
    from mldiag.diff import default_rules

    return {k: v for k, v in default_rules().items() if not k.startswith("pulumi-python:")}


def test_changes_without_costly_ones_and_blocked_plans_say_so_in_the_headline() -> None:
    base = plan(daemonset(), opt_in("team-a"))
    head = plan(daemonset(image="diagon:v3"))
    assert headline(diff_plans(base, head)) == "dev: 1 delete, 1 update"
    ds = head["resources"][0]
    head["policyViolations"] = [violation("k8s-images-pinned", ds["urn"])]
    assert headline(diff_plans(base, head)) == (
        "❌ dev: blocked by 1 mandatory policy violation — 1 delete, 1 update"
    )
    d = moved_cluster()
    d["summary"]["mandatoryViolations"] = 2
    assert headline(d) == HEADLINE + "; ❌ blocked by 2 mandatory policy violations"


# --- 2. a stack with no changes -----------------------------------------------------------------------


def test_a_stack_with_no_changes_is_one_line_in_markdown_and_table() -> None:
    p = plan(daemonset(), *extension())
    p["stack"] = "staging"
    d = diff_plans(p, copy.deepcopy(p))
    assert render_markdown(d) == "### ✅ <code>staging</code>: no changes (3 resources unchanged)\n"
    assert render_table(d) == "✅ staging: no changes (3 resources unchanged)\n"
    # In the PR comment, no graph and no table for it; the changed stack keeps its own.
    changed = moved_cluster()
    comment = diff_cli.render_all([changed, d], "markdown", "origin/main")
    section = comment.split("### ✅ <code>staging</code>")[1]
    assert section == ": no changes (3 resources unchanged)\n\n"
    assert comment.count("```mermaid") == 1 and comment.count("| resources |") == 1


def test_no_changes_but_blocked_is_not_one_line() -> None:
    ds = daemonset()
    p = plan(ds, violations=[violation("k8s-images-pinned", ds["urn"])])
    md = render_markdown(diff_plans(p, copy.deepcopy(p)))
    assert md.splitlines()[0] == (
        "### ❌ <code>dev</code>: no changes (1 resource unchanged), but blocked by 1 mandatory policy violation"
    )
    # The finding is not new, but it is what blocks the plan: shown, and said to be at the base too.
    assert "| mandatory, also at base | k8s-images-pinned |" in md


# --- 3. blocked: findings before the graph and the tables ---------------------------------------------


def test_blocked_plan_shows_its_findings_before_the_graph_and_the_tables() -> None:
    base = plan(daemonset(), opt_in("team-a"))
    head = plan(daemonset(image="diagon:latest"), opt_in("team-b"))
    ds = head["resources"][0]
    head["policyViolations"] = [
        violation("k8s-images-pinned", ds["urn"], message="pin the image"),
        violation("k8s-diagon-resources", ds["urn"], "advisory", "set requests"),
    ]
    d = diff_plans(base, head)
    md = render_markdown(d)
    blocked = md.index("**❌ Blocked: 1 mandatory policy violation**")
    assert blocked < md.index("```mermaid") < md.index("| resources |") < md.index("<details>")
    rows = [
        ln for ln in md[blocked:].splitlines() if ln.startswith("| mandatory") or ln.startswith("| advisory")
    ]
    assert rows[0].startswith("| mandatory | k8s-images-pinned |") and rows[1].startswith("| advisory |")
    table = render_table(d)
    assert table.index("Blocking policy findings:") < table.index(" ~ update   kubernetes:apps/v1:DaemonSet")
    # Not blocked: the findings stay after the tables.
    head["policyViolations"] = [violation("k8s-diagon-resources", ds["urn"], "advisory", "set requests")]
    md = render_markdown(diff_plans(base, head))
    assert md.index("| resources |") < md.index("**New policy findings**") < md.index("<details>")


def test_blocked_plan_markdown_of_the_plan_itself_puts_findings_first() -> None:
    ds = daemonset()
    report = plan(ds, violations=[violation("k8s-images-pinned", ds["urn"])])
    report["resources"][0]["parent"] = None
    md = plan_render.render(report, "markdown")
    assert md.index("#### Policy findings") < md.index("```mermaid") < md.index("| type | count |")


# --- 5. the size budget -------------------------------------------------------------------------------


def big_gke_plan(targets: int, location: str, namespaces: bool = True) -> dict[str, Any]:
    out = []
    for i in range(targets):
        t = f"gke-t{i:03d}"
        out += [cluster(t, location), pool("system", t, location), pool("gpu", t, location)]
        if namespaces:
            ns = namespace(f"team-{i:03d}", rname=f"{t}-mldiag-opt-in-team")
            ns["urn"] = ns["urn"].replace("gke-dev-train", t)
            out.append(ns)
    for r in out:
        r["urn"] = r["urn"].rsplit("::", 1)[0] + f"::{r['name']}"
        r["inputs"]["padding"] = "p" * 150
    return plan(*out)


def test_a_huge_dangerous_blocked_diff_of_several_stacks_fits_one_comment() -> None:
    base = big_gke_plan(500, "us-central1")
    head = big_gke_plan(500, "us-east1", namespaces=False)
    head["policyViolations"] = [
        violation("gke-cluster-version", r["urn"], "mandatory", "the cluster must run 1.35 or later " * 12)
        for r in head["resources"][:300]
    ]
    d = diff_plans(base, head)
    assert d["summary"]["replace"] == 1500 and d["summary"]["delete"] == 500
    quiet = diff_plans(plan(daemonset()), plan(daemonset()))
    quiet["stack"] = "staging"
    diffs = [d, {**copy.deepcopy(d), "stack": "prod"}, quiet]
    comment = diff_cli.render_all(diffs, "markdown", "origin/main")
    assert len(comment) < GITHUB_COMMENT_LIMIT
    sections = comment.split("\n### ")[1:]
    assert [s.split(":", 1)[0] for s in sections] == [
        "⚠️ <code>dev</code>",
        "⚠️ <code>prod</code>",
        "✅ <code>staging</code>",
    ]
    for s in sections[:2]:
        first = s.splitlines()[0]
        assert first.startswith("⚠️ <code>")
        assert "500 GKE clusters (<code>gke-t000-cluster</code>" in first and "+495 more" in first
        assert "1000 node pools" in first and "deletes 500 namespaces" in first
        assert first.endswith("— 1500 replaces, 500 deletes; ❌ blocked by 300 mandatory policy violations")
        assert s.index("**❌ Blocked: 300 mandatory policy violations**") < s.index("| resources |")
        if "```mermaid" in s:
            assert s.index("Blocked") < s.index("```mermaid")
        assert s.count("```") % 2 == 0 and s.count("<details>") == s.count("</details>")
        assert "Details truncated" in s
    # One stack alone within the same limit, with its graph.
    alone = render_markdown(d, GITHUB_COMMENT_LIMIT - 1536)
    assert len(alone) < GITHUB_COMMENT_LIMIT and len(mermaid_blocks(alone)) == 1


def test_a_diff_saved_before_it_listed_the_costly_ones_still_gets_its_headline() -> None:
    d = moved_cluster()
    del d["dangerous"]
    assert headline(d) == HEADLINE.replace("namespace ml-dev", "namespace gke-dev-train-mldiag-opt-in-ml-dev")
