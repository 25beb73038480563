"""Lifecycle through Pulumi's own options: deletionPolicy -> protect / retainOnDelete, prod protection,
previousName -> aliases (a rename is no replacement)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ml_diagnostics import lifecycle
from program.config import ConfigError, parse
from tests.fixtures.components import run_with_options, stack_config

NS = "ml-diagnostics"
SUB = "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f"

CREATED_GKE: dict[str, Any] = {
    "name": "train",
    "create": True,
    "project": "acme-ml-dev",
    "location": "us-central1",
    "mode": "managed",
    "nodePools": [{"name": "system", "machineType": "e2-standard-4"}],
}
AML: dict[str, Any] = {
    "name": "poc",
    "extensionName": "azureml-poc",
    "cluster": {
        "kind": "arc",
        "subscriptionId": SUB,
        "resourceGroup": "rg",
        "name": "arc-lab",
        "location": "koreacentral",
        "nodeCount": 3,
    },
    "training": True,
}


def run(env: str, **kinds: list[dict[str, Any]]):
    config = {f"{NS}:environment": env, **{f"{NS}:{k}": v for k, v in kinds.items()}}
    return run_with_options(config, stack=env)


@pytest.mark.parametrize(
    ("policy", "protect", "retain"),
    [("DELETE", False, False), ("ABANDON", False, True), ("PREVENT", True, False)],
)
def test_deletion_policy_maps_onto_pulumi_options(policy: str, protect: bool, retain: bool):
    opts = lifecycle.deletion_options(policy)  # type: ignore[arg-type]
    assert (bool(opts.protect), bool(opts.retain_on_delete)) == (protect, retain)
    _, registered = run("dev", gkeClusters=[{**CREATED_GKE, "deletionPolicy": policy}])
    cluster = registered["gke-train-cluster"]
    assert (cluster.protect, cluster.retain_on_delete) == (protect, retain)
    # Only the cluster: node pools, the Kubernetes provider and in-cluster resources stay deletable.
    others = [r for n, r in registered.items() if n != "gke-train-cluster"]
    assert not any(r.protect or r.retain_on_delete for r in others)


def test_prod_protects_created_clusters_and_model_development_clusters():
    config, secrets = stack_config("prod")
    _, registered = run_with_options(config, secrets, stack="prod")
    protected = sorted(n for n, r in registered.items() if r.protect)
    # The MDC component carries protect and its cluster resource inherits it.
    assert protected == ["gke-prod-tpu-cluster", "mdc-train", "mdc-train-cluster"]


def test_prod_default_is_prevent_and_an_explicit_delete_wins():
    _, registered = run("prod", gkeClusters=[CREATED_GKE])
    assert registered["gke-train-cluster"].protect is True
    _, registered = run("prod", gkeClusters=[{**CREATED_GKE, "deletionPolicy": "DELETE"}])
    assert registered["gke-train-cluster"].protect is False


def test_dev_and_staging_protect_nothing_by_default():
    for stack in ("dev", "staging"):
        config, secrets = stack_config(stack)
        _, registered = run_with_options(config, secrets, stack=stack)
        assert [n for n, r in registered.items() if r.protect] == [], stack


def test_adopted_clusters_take_no_deletion_policy():
    adopted = {k: v for k, v in CREATED_GKE.items() if k not in ("create", "nodePools")}
    with pytest.raises(ConfigError) as e:
        parse(
            {
                f"{NS}:environment": "dev",
                f"{NS}:gkeClusters": [
                    {**adopted, "currentVersion": "1.35.1-gke.1396000", "deletionPolicy": "ABANDON"}
                ],
            }
        )
    assert e.value.problems == [
        f"{NS}:gkeClusters[0].deletionPolicy: only for clusters the program creates (create: true)"
    ]


def _renamed(target: dict[str, Any], new: str) -> dict[str, Any]:
    out = copy.deepcopy(target)
    out.update(name=new, previousName=target["name"])
    return out


@pytest.mark.parametrize(
    ("kind", "prefix", "target"),
    [
        ("azureMl", "azureml", AML),
        ("gkeClusters", "gke", {**CREATED_GKE, "clusterName": "train"}),
    ],
)
def test_previous_name_aliases_the_component_and_every_child_keeps_its_identity(kind, prefix, target):
    before, _ = run("dev", **{kind: [target]})
    after, registered = run("dev", **{kind: [_renamed(target, "renamed")]})
    component = registered[f"{prefix}-renamed"]
    assert component.alias_names == (f"{prefix}-{target['name']}",)
    # The engine inherits a parent's alias to each child whose name starts with the parent's name:
    # every new resource maps onto exactly one old one, with the same type and the same inputs.
    old = {(r.type, r.name): r for r in before.resources}
    for r in after.resources:
        assert r.name.startswith(f"{prefix}-renamed"), r.name
        was = old.pop((r.type, r.name.replace(f"{prefix}-renamed", f"{prefix}-{target['name']}", 1)))
        assert r.inputs == was.inputs, r.name
    assert old == {}
    # Only the component carries an explicit alias.
    assert [n for n, r in registered.items() if r.alias_names] == [f"{prefix}-renamed"]


def test_rename_keeps_named_cloud_objects_or_says_what_to_set():
    with pytest.raises(ConfigError) as e:
        parse(
            {
                f"{NS}:environment": "dev",
                f"{NS}:gkeClusters": [{**CREATED_GKE, "name": "new", "previousName": "train"}],
                f"{NS}:azureMl": [
                    {**{k: v for k, v in AML.items() if k != "extensionName"}, "previousName": "old"}
                ],
            }
        )
    assert e.value.problems == [
        f"{NS}:azureMl[0].extensionName: required with previousName: the extension is named after the target; "
        "set extensionName: old to keep the extension it names",
        f"{NS}:gkeClusters[0].clusterName: required with previousName: the GKE cluster is named after the "
        "target; set clusterName: train to keep the cluster it names",
    ]


def test_previous_name_has_the_shape_of_a_name():
    with pytest.raises(ConfigError) as e:
        parse({f"{NS}:environment": "dev", f"{NS}:azureMl": [{**AML, "previousName": "Old_Name"}]})
    assert e.value.problems == [
        f"{NS}:azureMl[0].previousName: 'Old_Name' is not allowed: must be 1-40 lowercase letters, digits and "
        "'-', starting with a letter and not ending with '-'"
    ]
