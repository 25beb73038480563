"""The offline diff (mldiag/diff.py): plan JSON fixtures, rendering limits, and real git worktrees."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mldiag import diff as plan_diff
from mldiag.diff import (
    GITHUB_COMMENT_LIMIT,
    diff_plans,
    render_json,
    render_markdown,
    render_table,
    run_diff,
)
from mldiag.diff import cli as diff_cli

ROOT = Path(__file__).resolve().parent.parent
STACK = "urn:pulumi:dev::ml-diagnostics::"
K8S_PROVIDER = f"{STACK}mldiag:index:KubernetesCluster$pulumi:providers:kubernetes::lab-provider"
DIAGON_IMAGE = "us-central1-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon"


def res(
    type_: str,
    name: str,
    inputs: dict[str, Any],
    parent_type: str = "mldiag:index:ClusterMlDiagnostics",
    provider: str | None = K8S_PROVIDER,
    digests: dict[str, str] | None = None,
    custom: bool = True,
) -> dict[str, Any]:
    return {
        "urn": f"{STACK}{parent_type}${type_}::{name}",
        "type": type_,
        "name": name,
        "custom": custom,
        "parent": None,
        "provider": provider,
        "dependencies": [],
        "inputs": inputs,
        "secretDigests": digests or {},
    }


def plan(*resources: dict[str, Any], violations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "project": "ml-diagnostics",
        "stack": "dev",
        "resources": list(resources),
        "outputs": {},
        "policyViolations": violations or [],
        "criticalPath": {"depth": 2, "urns": []},
    }


def daemonset(name: str = "lab-diagon-daemonset", image: str = f"{DIAGON_IMAGE}:v2.1.0") -> dict[str, Any]:
    return res(
        "kubernetes:apps/v1:DaemonSet",
        name,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "diagon-daemon", "namespace": "diagon"},
            "spec": {
                "selector": {"matchLabels": {"name": "diagon-daemon"}},
                "template": {
                    "metadata": {"labels": {"name": "diagon-daemon"}},
                    "spec": {
                        "hostNetwork": True,
                        "containers": [
                            {"name": "diagon-daemon", "image": image, "imagePullPolicy": "IfNotPresent"},
                        ],
                    },
                },
            },
        },
        parent_type="mldiag:index:Diagon",
    )


def release(
    name: str = "cert-manager", version: str = "v1.13.0", namespace: str = "cert-manager"
) -> dict[str, Any]:
    return res(
        "kubernetes:helm.sh/v3:Release",
        f"lab-{name}-release",
        {
            "name": name,
            "chart": name,
            "version": version,
            "namespace": namespace,
            "repositoryOpts": {"repo": "https://charts.jetstack.io"},
            "values": {"installCRDs": True},
        },
        parent_type="mldiag:index:CertManager",
    )


def opt_in(namespace: str) -> dict[str, Any]:
    return res(
        "kubernetes:core/v1:NamespacePatch",
        f"lab-opt-in-{namespace}",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {"managed-mldiagnostics-gke": "true"}},
        },
        parent_type="mldiag:index:WorkloadOptIn",
    )


def extension(name: str = "aks-prod", cert_digest: str = "1111aaaa2222bbbb") -> list[dict[str, Any]]:
    component = res(
        "mldiag:index:AzureMlExtension",
        name,
        {},
        parent_type="pulumi:pulumi:Stack",
        provider=None,
        custom=False,
    )
    ext = res(
        "azure-native:kubernetesconfiguration:Extension",
        f"{name}-extension",
        {
            "resourceGroupName": "rg-ml",
            "clusterRp": "Microsoft.ContainerService",
            "clusterResourceName": "managedClusters",
            "clusterName": name,
            "extensionName": "azureml",
            "extensionType": "Microsoft.AzureML.Kubernetes",
            "configurationSettings": {"enableTraining": "True", "sslCname": "ml.example.com"},
            "configurationProtectedSettings": {
                "scoringFe.sslCert": "[secret]",
                "scoringFe.sslKey": "[secret]",
            },
        },
        parent_type="mldiag:index:AzureMlExtension",
        provider=None,
        digests={
            "configurationProtectedSettings.scoringFe.sslCert": cert_digest,
            "configurationProtectedSettings.scoringFe.sslKey": "3333cccc4444dddd",
        },
    )
    return [component, ext]


def violation(policy: str, urn: str, level: str = "mandatory", message: str = "bad") -> dict[str, Any]:
    return {"policy": policy, "enforcementLevel": level, "urn": urn, "message": message}


def only(diff: dict[str, Any]) -> dict[str, Any]:
    assert len(diff["resources"]) == 1, diff["resources"]
    return diff["resources"][0]


# --- diff_plans on fixtures ---------------------------------------------------------------------------


def test_image_bump_is_an_update_of_one_daemonset_field() -> None:
    base = plan(daemonset(), release())
    head = plan(daemonset(image=f"{DIAGON_IMAGE}:v2.2.0"), release())
    d = diff_plans(base, head)
    assert d["summary"] == {
        "add": 0,
        "import": 0,
        "update": 1,
        "rename": 0,
        "replace": 0,
        "delete": 0,
        "unchanged": 1,
        "newPolicyViolations": 0,
        "resolvedPolicyViolations": 0,
        "mandatoryViolations": 0,
    }
    e = only(d)
    assert (e["action"], e["type"], e["name"]) == (
        "update",
        "kubernetes:apps/v1:DaemonSet",
        "lab-diagon-daemonset",
    )
    assert e["changes"] == [
        {
            "path": "spec.template.spec.containers[0].image",
            "old": f"{DIAGON_IMAGE}:v2.1.0",
            "new": f"{DIAGON_IMAGE}:v2.2.0",
        }
    ]
    assert "replaceReasons" not in e
    assert plan_diff.exit_code(d) == 0


def test_chart_version_bump_is_an_update() -> None:
    d = diff_plans(plan(release()), plan(release(version="v1.15.1")))
    e = only(d)
    assert e["action"] == "update"
    assert e["changes"] == [{"path": "version", "old": "v1.13.0", "new": "v1.15.1"}]


def test_new_azure_target_is_added_with_its_inputs_and_secrets_masked() -> None:
    d = diff_plans(plan(daemonset()), plan(daemonset(), *extension()))
    assert d["summary"]["add"] == 2 and d["summary"]["unchanged"] == 1
    actions = [(e["action"], e["type"]) for e in d["resources"]]
    assert actions == [
        ("add", "azure-native:kubernetesconfiguration:Extension"),
        ("add", "mldiag:index:AzureMlExtension"),
    ]
    ext = d["resources"][0]
    paths = {c["path"]: c["new"] for c in ext["changes"]}
    assert paths["configurationSettings.sslCname"] == "ml.example.com"
    assert paths["configurationProtectedSettings.scoringFe.sslCert"] == "[secret]"
    assert all("old" not in c for c in ext["changes"])


def test_removed_namespace_opt_in_is_a_delete() -> None:
    d = diff_plans(plan(opt_in("team-a"), opt_in("team-b")), plan(opt_in("team-a")))
    e = only(d)
    assert (e["action"], e["name"]) == ("delete", "lab-opt-in-team-b")
    assert {"path": "metadata.name", "old": "team-b"} in e["changes"]
    assert all("new" not in c for c in e["changes"])


def test_daemonset_selector_change_forces_replacement() -> None:
    head_ds = daemonset()
    head_ds["inputs"]["spec"]["selector"]["matchLabels"]["name"] = "diagon"
    d = diff_plans(plan(daemonset()), plan(head_ds))
    e = only(d)
    assert e["action"] == "replace"
    assert e["replaceReasons"] == ["spec.selector changed"]
    by_path = {c["path"]: c for c in e["changes"]}
    assert by_path["spec.selector.matchLabels.name"] == {
        "path": "spec.selector.matchLabels.name",
        "old": "diagon-daemon",
        "new": "diagon",
        "forcesReplace": True,
    }


@pytest.mark.parametrize(
    ("make_head", "reason"),
    [
        (lambda: release(namespace="security"), "namespace changed"),
        (
            lambda: release(name="cert-manager") | {"inputs": release()["inputs"] | {"name": "cm"}},
            "name changed",
        ),
    ],
)
def test_helm_release_name_and_namespace_force_replacement(make_head: Any, reason: str) -> None:
    e = only(diff_plans(plan(release()), plan(make_head())))
    assert (e["action"], e["replaceReasons"]) == ("replace", [reason])


def test_namespace_rename_replaces_but_label_change_updates() -> None:
    renamed = opt_in("team-a")
    renamed["inputs"]["metadata"]["name"] = "team-z"
    assert only(diff_plans(plan(opt_in("team-a")), plan(renamed)))["replaceReasons"] == [
        "metadata.name changed"
    ]
    relabeled = opt_in("team-a")
    relabeled["inputs"]["metadata"]["labels"]["extra"] = "x"
    e = only(diff_plans(plan(opt_in("team-a")), plan(relabeled)))
    assert e["action"] == "update"
    assert e["changes"] == [{"path": "metadata.labels.extra", "new": "x"}]


def test_explicit_namespace_default_is_not_a_replacement() -> None:
    implicit = res("kubernetes:core/v1:ServiceAccount", "sa", {"metadata": {"name": "sa"}})
    explicit = res(
        "kubernetes:core/v1:ServiceAccount", "sa", {"metadata": {"name": "sa", "namespace": "default"}}
    )
    e = only(diff_plans(plan(implicit), plan(explicit)))
    assert e["action"] == "update"


def test_provider_change_replaces_but_default_provider_upgrade_does_not() -> None:
    moved = daemonset()
    moved["provider"] = f"{STACK}mldiag:index:GkeCluster$pulumi:providers:kubernetes::other-provider"
    e = only(diff_plans(plan(daemonset()), plan(moved)))
    assert e["action"] == "replace"
    assert e["replaceReasons"] == [f"provider changed from {K8S_PROVIDER} to {moved['provider']}"]

    old_default = f"{STACK}pulumi:providers:kubernetes::default_4_34_2"
    new_default = f"{STACK}pulumi:providers:kubernetes::default_4_35_0"
    a, b = daemonset(), daemonset()
    a["provider"], b["provider"] = old_default, new_default
    d = diff_plans(plan(a), plan(b))
    assert d["resources"] == [] and d["summary"]["unchanged"] == 1
    assert d["notes"] == [
        f"1 resource(s) move from default provider {old_default} to {new_default}: not a replacement by itself "
        "(the engine compares default providers by their configuration)"
    ]


def test_type_change_without_alias_is_a_replacement() -> None:
    old = res("kubernetes:core/v1:Namespace", "lab-opt-in-team-a", {"metadata": {"name": "team-a"}})
    new = res("kubernetes:core/v1:NamespacePatch", "lab-opt-in-team-a", {"metadata": {"name": "team-a"}})
    e = only(diff_plans(plan(old), plan(new)))
    assert e["action"] == "replace"
    assert e["oldUrn"] == old["urn"] and e["urn"] == new["urn"]
    assert e["replaceReasons"] == [
        "type changed from kubernetes:core/v1:Namespace to kubernetes:core/v1:NamespacePatch (no alias)"
    ]


def test_azure_path_parameter_change_replaces_the_extension() -> None:
    base = extension()
    head = copy.deepcopy(base)
    head[1]["inputs"]["resourceGroupName"] = "rg-ml-2"
    e = only(diff_plans(plan(*base), plan(*head)))
    assert (e["action"], e["replaceReasons"]) == ("replace", ["resourceGroupName changed"])
    # The same rule for an explicit API version's token.
    for r in (base[1], head[1]):
        r["type"] = "azure-native:kubernetesconfiguration/v20230501:Extension"
        r["urn"] = r["urn"].replace("kubernetesconfiguration:", "kubernetesconfiguration/v20230501:")
    e = only(diff_plans(plan(*base), plan(*head)))
    assert (e["action"], e["replaceReasons"]) == ("replace", ["resourceGroupName changed"])


def test_secret_change_is_shown_as_changed_with_the_value_masked() -> None:
    base = plan(*extension(cert_digest="1111aaaa2222bbbb"))
    head = plan(*extension(cert_digest="9999ffff8888eeee"))
    d = diff_plans(base, head)
    e = only(d)
    assert e["action"] == "update"
    assert e["changes"] == [
        {
            "path": "configurationProtectedSettings.scoringFe.sslCert",
            "old": "[secret]",
            "new": "[secret]",
            "secret": True,
        }
    ]
    for text in (render_table(d), render_json(d), render_markdown(d)):
        assert "[secret]" in text
        assert "9999ffff8888eeee" not in text and "1111aaaa2222bbbb" not in text
    assert "secret changed" in render_table(d) and "secret changed" in render_markdown(d)


def test_missing_secret_digests_are_reported_not_guessed() -> None:
    base, head = plan(*extension()), plan(*extension(cert_digest="different"))
    for r in base["resources"] + head["resources"]:
        del r["secretDigests"]
    d = diff_plans(base, head)
    assert d["resources"] == []
    assert d["notes"] == [
        "the plans carry no secretDigests: secret values could not be compared and are treated as unchanged"
    ]
    assert "secretDigests" in render_markdown(d)


def test_dynamic_providers_are_asked_through_their_own_diff() -> None:
    rules = plan_diff.discover_dynamic_rules()
    assert "pulumi-python:dynamic/gke:ManagedMlDiagnostics" in rules
    token = "pulumi-python:dynamic/gke:ManagedMlDiagnostics"
    inputs = {
        "__provider": "[secret]",
        "project": "acme",
        "location": "us-central1-a",
        "cluster": "train-a",
        "enabled": True,
        "clusterVersion": "1.35.1-gke.1396000",
    }
    flip = res(token, "adopt", inputs | {"enabled": False}, provider=None)
    e = only(diff_plans(plan(res(token, "adopt", inputs, provider=None)), plan(flip), rules))
    assert e["action"] == "update"
    assert e["changes"] == [{"path": "enabled", "old": True, "new": False}]
    moved = res(token, "adopt", inputs | {"cluster": "train-b"}, provider=None)
    e = only(diff_plans(plan(res(token, "adopt", inputs, provider=None)), plan(moved), rules))
    assert e["action"] == "replace"
    assert e["replaceReasons"] == ["cluster cannot change in place (the provider's own diff)"]


MDC = "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster"


def mdc(**changes: Any) -> dict[str, Any]:
    pool = {
        "id": "cpu",
        "zone": "us-central1-a",
        "machine_spec": {"machine_type": "n2-standard-8"},
        "scaling_spec": {"min_node_count": 0, "max_node_count": 2},
        "boot_disk": {"boot_disk_type": "pd-standard", "boot_disk_size_gb": 120},
    }
    inputs = {
        "__provider": "[secret]",
        "project": "mldiag-dev",
        "region": "us-central1",
        "model_development_cluster_id": "devcpu",
        "display_name": "dev CPU cluster",
        "labels": {"env": "dev"},
        "network": {"network": "projects/mldiag-dev/global/networks/mldiag"},
        "node_pools": [pool],
        "orchestrator_spec": {
            "slurm_spec": {
                "home_directory_storage": "projects/mldiag-dev/locations/us-central1-a/instances/home",
                "partitions": [{"id": "cpu", "node_pool_ids": ["cpu"]}],
                "default_partition_id": "cpu",
                "login_node_pool_id": "cpu",
            }
        },
        "update_mode": "USER_AND_SERVICE",
        "deletion_policy": "DELETE",
    }
    for key, value in changes.items():
        inputs[key] = value
    return res(
        MDC, "mdc-cpu-cluster", inputs, parent_type="mldiag:index:ModelDevelopmentCluster", provider=None
    )


def test_model_development_cluster_replacement_comes_from_its_provider() -> None:
    rules = plan_diff.discover_dynamic_rules()
    assert MDC in rules
    e = only(diff_plans(plan(mdc()), plan(mdc(labels={"env": "dev", "team": "a"})), rules))
    assert (e["action"], e["changes"]) == ("update", [{"path": "labels.team", "new": "a"}])
    moved = mdc(network={"network": "projects/mldiag-dev/global/networks/other"})
    e = only(diff_plans(plan(mdc()), plan(moved), rules))
    assert e["action"] == "replace"
    assert e["replaceReasons"] == ["network cannot change in place (the provider's own diff)"]
    assert e["changes"][0]["forcesReplace"] is True


def test_a_change_the_provider_refuses_is_reported_in_the_summary() -> None:
    rules = plan_diff.discover_dynamic_rules()
    base = mdc(deletion_policy="PREVENT")
    head = mdc(deletion_policy="PREVENT", network={"network": "projects/mldiag-dev/global/networks/other"})
    d = diff_plans(plan(base), plan(head), rules)
    e = only(d)
    assert len(d["notes"]) == 1
    assert d["notes"][0].startswith("mdc-cpu-cluster: the provider's diff refuses this change: ")
    assert "PREVENT" in d["notes"][0]
    assert e["notes"] == [d["notes"][0].removeprefix("mdc-cpu-cluster: ")]
    assert "refuses this change" in render_markdown(d).split("**Changed resources**")[0]


def test_declared_force_new_paths_with_wildcards() -> None:
    token = "pulumi-python:dynamic/example:Thing"
    rules = {token: ("pools[*].machine",)}
    a = res(token, "t", {"pools": [{"machine": "n2", "count": 1}]}, provider=None)
    b = res(token, "t", {"pools": [{"machine": "n2", "count": 2}]}, provider=None)
    c = res(token, "t", {"pools": [{"machine": "a3", "count": 1}]}, provider=None)
    assert only(diff_plans(plan(a), plan(b), rules))["action"] == "update"
    assert only(diff_plans(plan(a), plan(c), rules))["replaceReasons"] == ["pools[0].machine changed"]


def test_policy_findings_new_resolved_and_exit_code() -> None:
    ds = daemonset()
    kept = violation("k8s-images-pinned", ds["urn"], "advisory", "image uses :latest")
    gone = violation("diagon-memory-limit", ds["urn"], "mandatory", "no memory limit")
    new = violation("helm-chart-pinned", release()["urn"], "mandatory", "chart version not pinned")
    reworded = kept | {"message": "image uses the :latest tag"}
    d = diff_plans(plan(ds, violations=[kept, gone]), plan(ds, violations=[reworded, new]))
    assert d["newPolicyViolations"] == [new]
    assert d["resolvedPolicyViolations"] == [gone]
    assert plan_diff.exit_code(d) == 1
    # An existing mandatory violation still fails the head plan even though it is not new.
    d = diff_plans(plan(ds, violations=[gone]), plan(ds, violations=[gone]))
    assert d["newPolicyViolations"] == [] and plan_diff.exit_code(d) == 1
    # A finding that becomes mandatory (stricter policy config) is new.
    d = diff_plans(
        plan(ds, violations=[kept]), plan(ds, violations=[kept | {"enforcementLevel": "mandatory"}])
    )
    assert [v["enforcementLevel"] for v in d["newPolicyViolations"]] == ["mandatory"]


def test_no_base_means_everything_is_added() -> None:
    d = diff_plans(None, plan(daemonset(), release()))
    assert [e["action"] for e in d["resources"]] == ["add", "add"]
    assert d["summary"]["unchanged"] == 0


def test_dynamic_provider_pickle_is_not_compared() -> None:
    token = "pulumi-python:dynamic/example:Thing"
    a = res(token, "t", {"__provider": "gASVold", "x": 1}, provider=None)
    b = res(token, "t", {"__provider": "gASVnew", "x": 1}, provider=None)
    assert diff_plans(plan(a), plan(b), {})["resources"] == []


# --- rendering ----------------------------------------------------------------------------------------


def test_markdown_escapes_table_breaking_values() -> None:
    head = release()
    head["inputs"]["values"]["note"] = "a | b\n<script>"
    md = render_markdown(diff_plans(plan(release()), plan(head)))
    row = next(line for line in md.splitlines() if "values.note" in line)
    assert "&#124;" in row and "&lt;script&gt;" in row and "<script>" not in md


def big_target(i: int, image_tag: str = "v2.1.0") -> list[dict[str, Any]]:
    name = f"cluster-{i:03d}"
    out = []
    for r in (
        daemonset(f"{name}-diagon-daemonset", f"{DIAGON_IMAGE}:{image_tag}"),
        release(),
        opt_in("team-a"),
    ):
        r = copy.deepcopy(r)
        r["urn"] = r["urn"].replace("::lab-", f"::{name}-").replace("::lab", f"::{name}")
        r["urn"] = r["urn"].rsplit("::", 1)[0] + f"::{name}-{r['name']}"
        r["name"] = f"{name}-{r['name']}"
        r["inputs"]["metadata" if "metadata" in r["inputs"] else "values"]["padding"] = "x" * 200
        out.append(r)
    ext = extension(name)
    return out + ext


@pytest.mark.parametrize("scenario", ["all-new", "all-updated"])
def test_markdown_for_500_targets_stays_under_the_comment_limit(scenario: str) -> None:
    head = plan(*[r for i in range(500) for r in big_target(i, "v2.2.0")])
    base = None if scenario == "all-new" else plan(*[r for i in range(500) for r in big_target(i)])
    head["policyViolations"] = [
        violation("k8s-images-pinned", r["urn"], "mandatory", "pin the image " * 20)
        for r in head["resources"][:200]
    ]
    d = diff_plans(base, head)
    expected = 2500 if scenario == "all-new" else 500
    assert len(d["resources"]) == expected
    md = render_markdown(d)
    assert len(md) < GITHUB_COMMENT_LIMIT
    lines = md.splitlines()
    # The headline first (the 200 mandatory findings block the plan), then the findings, then the rest.
    what = "2500 adds" if scenario == "all-new" else "500 updates"
    assert lines[0] == f"### ❌ <code>dev</code>: blocked by 200 mandatory policy violations — {what}"
    assert md.index("**❌ Blocked: 200 mandatory policy violations**") < md.index("```mermaid")
    summary = "| resources | 2500 | 0 | 0 | 0 | 0 | 0 | 0 | 200 | 0 |" if scenario == "all-new" else None
    if summary:
        assert summary in lines
    else:
        assert "| resources | 0 | 0 | 500 | 0 | 0 | 0 | 2000 | 200 | 0 |" in lines
    assert md.index("| resources |") < md.index("<details>")
    assert md.count("<details>") == md.count("</details>") > 10
    shown = md.count("<details>") + md.count("<p>+ <b>add</b>")
    assert f"Details truncated: {expected - shown} of {expected} changed resources not shown" in md
    # Several stacks in one PR comment still fit together.
    combined = diff_cli.render_all([d, d, d], "markdown", "origin/main")
    assert len(combined) < GITHUB_COMMENT_LIMIT
    assert combined.startswith(diff_cli.COMMENT_MARKER)
    assert combined.count("| resources |") == 3


def test_table_and_json_formats() -> None:
    d = diff_plans(plan(daemonset()), plan(daemonset(image=f"{DIAGON_IMAGE}:v2.2.0")))
    table = render_table(d)
    assert " ~ update   kubernetes:apps/v1:DaemonSet  lab-diagon-daemonset" in table
    assert (
        f'spec.template.spec.containers[0].image: "{DIAGON_IMAGE}:v2.1.0" => "{DIAGON_IMAGE}:v2.2.0"' in table
    )
    assert json.loads(render_json(d))["summary"]["update"] == 1


# --- run_diff with real git worktrees -----------------------------------------------------------------

FAKE_PLAN = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    args = sys.argv[1:]
    stack = args[0]
    path = Path(args[args.index("--config-file") + 1]) if "--config-file" in args else Path("plans") / f"{stack}.json"
    if not path.exists():
        print(f"error: no plan for {stack}", file=sys.stderr)
        sys.exit(2)
    report = json.loads(path.read_text())
    if "--previous-outputs" in args:  # the outputs the head plan was given as its last deployment's
        Path("previous-seen.json").write_text(Path(args[args.index("--previous-outputs") + 1]).read_text())
    print(json.dumps(report))
    sys.exit(1 if any(v["enforcementLevel"] == "mandatory" for v in report["policyViolations"]) else 0)
    """
)


def git(repo: Path, *args: str) -> str:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def write_plan(repo: Path, stack: str, report: dict[str, Any]) -> None:
    (repo / "stacks").mkdir(exist_ok=True)
    (repo / "stacks" / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    (repo / "plans").mkdir(exist_ok=True)
    (repo / "plans" / f"{stack}.json").write_text(json.dumps(report))


def write_fake_plan_module(repo: Path, package: str) -> None:
    """The offline plan's module as a layout has it: mldiag/plan (cli.py, run as `-m mldiag.plan`) or
    tools/plan.py (before mldiag/ existed)."""
    if package == "tools":
        (repo / "tools").mkdir(parents=True)
        (repo / "tools" / "__init__.py").write_text("")
        (repo / "tools" / "plan.py").write_text(FAKE_PLAN)
        return
    (repo / package).mkdir(parents=True)
    (repo / "mldiag" / "__init__.py").write_text("")
    (repo / package / "__init__.py").write_text("")
    (repo / package / "cli.py").write_text(FAKE_PLAN)
    (repo / package / "__main__.py").write_text("import mldiag.plan.cli\n")


@pytest.fixture
def fake_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "repo"
    write_fake_plan_module(repo, "mldiag/plan")
    write_plan(repo, "dev", plan(daemonset(), release()))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return repo


def assert_clean(repo: Path) -> None:
    worktrees = [
        ln for ln in git(repo, "worktree", "list", "--porcelain").splitlines() if ln.startswith("worktree ")
    ]
    assert worktrees == [f"worktree {repo}"]
    assert list((repo.parent / "scratch").iterdir()) == []


def test_run_diff_compares_the_base_worktree_with_the_working_tree(fake_repo: Path) -> None:
    write_plan(fake_repo, "dev", plan(daemonset(image=f"{DIAGON_IMAGE}:v2.2.0"), release(version="v1.15.1")))
    text, code = run_diff("dev", "main", "json", project_dir=fake_repo)
    assert code == 0, text
    d = json.loads(text)
    assert [(e["action"], e["type"]) for e in d["resources"]] == [
        ("update", "kubernetes:apps/v1:DaemonSet"),
        ("update", "kubernetes:helm.sh/v3:Release"),
    ]
    assert d["baseRef"] == "main" and d["baseMissing"] is False
    assert d["baseCommit"] == git(fake_repo, "rev-parse", "main").strip()
    assert_clean(fake_repo)


def test_run_diff_plans_the_head_after_the_base_outputs(fake_repo: Path) -> None:
    base = plan(daemonset(), release()) | {
        "outputs": {"gkeCluster:x": {"mode": "manual"}, "pendingSteps": []}
    }
    write_plan(fake_repo, "dev", base)
    git(fake_repo, "commit", "-q", "-am", "outputs")
    head = plan(daemonset(), release()) | {"outputs": {"pendingSteps": ["x: step 1 of 2"]}}
    write_plan(fake_repo, "dev", head)
    text, code = run_diff("dev", "main", "json", project_dir=fake_repo)
    assert code == 0, text
    assert json.loads((fake_repo / "previous-seen.json").read_text()) == base["outputs"]
    d = json.loads(text)
    assert d["pendingSteps"] == ["x: step 1 of 2"]
    assert d["notes"] == ["order: x: step 1 of 2"]
    assert_clean(fake_repo)


def test_run_diff_stack_absent_at_base_is_all_adds_and_mandatory_exit(fake_repo: Path) -> None:
    ds = daemonset()
    write_plan(fake_repo, "qa", plan(ds, violations=[violation("k8s-images-pinned", ds["urn"])]))
    text, code = run_diff("qa", "main", "markdown", project_dir=fake_repo)
    assert code == 1
    assert "| resources | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 0 |" in text
    assert "stack qa does not exist at main: every resource is new" in text
    assert_clean(fake_repo)


def test_run_diff_config_file_applies_to_the_working_tree(fake_repo: Path, tmp_path: Path) -> None:
    alt = tmp_path / "alt.json"
    alt.write_text(json.dumps(plan(daemonset(), release(), opt_in("team-a"))))
    text, code = run_diff("dev", "main", "table", config_file=alt, project_dir=fake_repo)
    assert code == 0, text
    assert "+ add      kubernetes:core/v1:NamespacePatch  lab-opt-in-team-a" in text
    assert_clean(fake_repo)


def test_run_diff_errors_exit_2_and_remove_the_worktree(fake_repo: Path) -> None:
    text, code = run_diff("dev", "no-such-ref", "table", project_dir=fake_repo)
    assert code == 2
    assert text == (
        "error: git ref 'no-such-ref' does not name a commit (fetch it first, e.g. git fetch origin main)"
    )
    # The base plan fails: the error says which side and why; the worktree is gone all the same.
    (fake_repo / "plans" / "dev.json").unlink()
    git(fake_repo, "commit", "-q", "-am", "drop the plan")
    write_plan(fake_repo, "dev", plan(daemonset()))
    text, code = run_diff("dev", "HEAD", "table", project_dir=fake_repo)
    assert code == 2
    assert text.startswith("error: the HEAD (") and text.endswith(
        "plan of stack dev failed:\nerror: no plan for dev"
    )
    assert_clean(fake_repo)
    assert run_diff("dev", "HEAD", "yaml", project_dir=fake_repo)[1] == 2


def test_diff_cli_covers_every_stack_in_one_report(fake_repo: Path) -> None:
    write_plan(fake_repo, "prod", plan(release()))
    out = fake_repo.parent / "comment.md"
    code = diff_cli.main(
        ["--base", "main", "--format", "markdown", "--output", str(out), "--project-dir", str(fake_repo)]
    )
    assert code == 0
    text = out.read_text()
    assert diff_cli.all_stacks(fake_repo) == ["dev", "prod"]
    # dev has no changes: one line; prod is new.
    assert "\n### ✅ <code>dev</code>: no changes (2 resources unchanged)\n" in text
    assert "\n### <code>prod</code>: 1 add\n" in text
    assert text.count("```mermaid") == 1
    assert_clean(fake_repo)


def test_diff_cli_reports_a_failing_stack_without_hiding_the_others(
    fake_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_plan(fake_repo, "prod", plan(release()))
    git(fake_repo, "add", ".")
    git(fake_repo, "commit", "-q", "-m", "prod")
    (fake_repo / "plans" / "prod.json").unlink()  # the working tree's prod plan now fails
    write_plan(fake_repo, "dev", plan(daemonset(image=f"{DIAGON_IMAGE}:v2.2.0"), release()))
    out = fake_repo.parent / "comment.md"
    code = diff_cli.main(
        ["--base", "main", "--format", "markdown", "--output", str(out), "--project-dir", str(fake_repo)]
    )
    assert code == 2
    text = out.read_text()
    dev, prod = text.split("### ❌ <code>prod</code>: the offline plan failed")
    assert "| resources | 0 | 0 | 1 | 0 | 0 | 0 | 1 | 0 | 0 |" in dev
    assert "❌ The offline plan failed (base `main`):" in prod
    assert "<pre>the working tree plan of stack prod failed:\nerror: no plan for prod</pre>" in prod
    assert "error: stack prod: the working tree plan of stack prod failed" in capsys.readouterr().err
    assert_clean(fake_repo)


def test_run_diff_on_this_project_end_to_end(tmp_path: Path) -> None:
    """The real offline plan on a copy of this project: a changed `secure:` value is a masked secret change."""
    repo = tmp_path / "project"
    repo.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(repo)], input=archive, check=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    stack_file = repo / "stacks" / "Pulumi.dev.yaml"
    text = stack_file.read_text()
    assert "secure: v1:" in text, "the dev stack should carry a secret"
    # another ciphertext of the same shape (the 12-byte nonce re-drawn): the secret was rotated
    stack_file.write_text(
        re.sub(r"secure: v1:[A-Za-z0-9+/]{16}:", "secure: v1:cm90YXRlZHJvdGF0:", text, count=1)
    )
    out, code = run_diff("dev", "main", "json", project_dir=repo)
    assert code in (0, 1), out
    d = json.loads(out)
    assert d["baseMissing"] is False and d["summary"]["unchanged"] > 0
    assert d["resources"], "rotating a secret must show as a change"
    for e in d["resources"]:
        assert e["action"] == "update", e
        assert e["changes"] and all(
            c["secret"] and c["old"] == c["new"] == "[secret]" for c in e["changes"]
        ), e
    assert "placeholder" not in out
    worktrees = [
        ln for ln in git(repo, "worktree", "list", "--porcelain").splitlines() if ln.startswith("worktree ")
    ]
    assert worktrees == [f"worktree {repo}"]


def test_plan_cli_wires_diff_base() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mldiag.plan.cli", "dev", "--diff-base", "no-such-ref-xyz"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "git ref 'no-such-ref-xyz' does not name a commit" in proc.stdout + proc.stderr


def test_a_base_of_the_layout_before_mldiag_is_planned_with_its_own_tools_plan(fake_repo: Path) -> None:
    """`mldiag diff --base <older ref>`: a base from before mldiag/ existed has its plan at tools/plan.py."""
    git(fake_repo, "rm", "-q", "-r", "mldiag")
    write_fake_plan_module(fake_repo, "tools")
    git(fake_repo, "add", ".")
    git(fake_repo, "commit", "-q", "-m", "the older layout")
    git(fake_repo, "tag", "older")
    git(fake_repo, "rm", "-q", "-r", "tools")
    write_fake_plan_module(fake_repo, "mldiag/plan")
    write_plan(fake_repo, "dev", plan(daemonset(image=f"{DIAGON_IMAGE}:v2.2.0"), release()))
    text, code = run_diff("dev", "older", "json", project_dir=fake_repo)
    d = json.loads(text)
    assert code == 0 and d["summary"]["update"] == 1
    assert_clean(fake_repo)
