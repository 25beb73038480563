"""The Model Development Cluster dynamic provider against the loopback Vertex fake.

Each scenario asserts the exact requests: method, path, query (`updateMask`, `updateMode`) and body.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import dill
import pulumi
import pytest
from pulumi.dynamic.dynamic import serialize_provider

from dev.fakes.vertex_api import DEFAULT_IMAGE, FakeAuth
from ml_diagnostics.providers.mdc.update_plan import plan_update
from ml_diagnostics.providers.model_development_cluster import (
    ModelDevelopmentClusterError,
    ModelDevelopmentClusterProvider,
)
from ml_diagnostics.specs.model_development import UNKNOWN, UPDATE_MASK_PATHS, normalize
from tests.fixtures.google import pool, rest_pool

P = "projects/p/locations/us-central1"
NAME = f"{P}/modelDevelopmentClusters/mdc1"
BASE = f"/v1beta1/{NAME}"
SLURM = "orchestrator_spec.slurm_spec."


@pytest.fixture()
def warnings(monkeypatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: seen.append(msg))
    return seen


def create(provider, api, spec) -> dict[str, Any]:
    out = provider.create(copy.deepcopy(spec)).outs
    api.requests.clear()
    return out


def with_slurm(spec: dict[str, Any], **changes: Any) -> dict[str, Any]:
    new = copy.deepcopy(spec)
    slurm = new["orchestrator_spec"]["slurm_spec"]
    for k, v in changes.items():
        if v is None:
            slurm.pop(k, None)
        else:
            slurm[k] = v
    return new


def update(provider, api, olds, news) -> tuple[Any, Any]:
    """diff then update, like the engine; returns (diff result, the single PATCH request)."""
    assert provider.check(olds, news).failures == []
    d = provider.diff(olds.get("name", NAME), olds, news)
    provider.update(NAME, olds, news)
    patches = [r for r in api.api_requests() if r.method == "PATCH"]
    assert len(patches) == 1
    return d, patches[0]


# -- create ---------------------------------------------------------------------------------------------


def test_create_posts_with_cluster_id_and_waits_for_the_operation(provider, api, spec, clock):
    res = provider.create(copy.deepcopy(spec))
    assert res.id == NAME
    (post,) = api.api_requests()
    assert (post.method, post.path, post.query) == (
        "POST",
        f"/v1beta1/{P}/modelDevelopmentClusters",
        {"modelDevelopmentClusterId": "mdc1"},
    )
    assert post.body == {
        "displayName": "cpu cluster",
        "network": {
            "network": "projects/p/global/networks/net",
            "subnetwork": "projects/p/regions/us-central1/subnetworks/sub",
        },
        "nodePools": [rest_pool("cpu"), rest_pool("login", 1, 1)],
        "orchestratorSpec": {
            "slurmSpec": {
                "homeDirectoryStorage": "projects/p/locations/us-central1-a/instances/home",
                "partitions": [{"id": "cpu", "nodePoolIds": ["cpu"]}],
                "loginNodePoolId": "login",
            }
        },
    }
    polls = [r for r in api.requests if "/operations/" in r.path]
    assert len(polls) == 3 and clock.now >= 30  # 15 s, 30 s, then 18 % of the elapsed time
    assert res.outs["state"] == "RUNNING"
    assert res.outs["name"] == NAME
    assert res.outs["node_pools"] == spec["node_pools"]


def test_engine_numbers_arrive_as_floats_and_are_sent_as_integers(provider, api, spec):
    spec["node_pools"][0]["scaling_spec"] = {"min_node_count": 0.0, "max_node_count": 2.0}
    spec["node_pools"][0]["boot_disk"]["boot_disk_size_gb"] = 120.0
    provider.create(spec)
    body = api.api_requests()[0].body
    assert body["nodePools"][0]["scalingSpec"] == {"minNodeCount": 0, "maxNodeCount": 2}
    assert isinstance(body["nodePools"][0]["bootDisk"]["bootDiskSizeGb"], int)


@pytest.mark.parametrize("cid", ["mdc-1", "Mdc1", "1mdc", "abcdefghijk", ""])
def test_check_refuses_bad_cluster_ids(provider, spec, cid):
    spec["model_development_cluster_id"] = cid
    failures = provider.check({}, spec).failures
    assert [(f.property, f.reason) for f in failures] == [
        (
            "model_development_cluster_id",
            f"{cid!r} is not allowed: 1-10 characters of lowercase letters and digits, starting with a letter "
            "(no '-': the cluster uses Slurm)",
        )
    ]


def test_409_adopts_a_matching_cluster(provider, api, spec):
    create(provider, api, spec)  # someone created it already
    res = provider.create(copy.deepcopy(spec))
    assert [(r.method, r.path) for r in api.api_requests()] == [
        ("POST", f"/v1beta1/{P}/modelDevelopmentClusters"),
        ("GET", BASE),
    ]
    assert res.id == NAME and res.outs["state"] == "RUNNING"


def test_409_with_a_different_cluster_fails_and_changes_nothing(provider, api, spec):
    create(provider, api, spec)
    other = copy.deepcopy(spec)
    other["node_pools"][0]["scaling_spec"]["max_node_count"] = 8
    other["labels"] = {"team": "x"}
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.create(other)
    assert str(e.value) == (
        f"cluster {NAME} already exists (ALREADY_EXISTS) and differs from the inputs in: labels, "
        "node_pools[cpu].scaling_spec. It was left unchanged. Choose another modelDevelopmentClusterId, or make "
        "the inputs match it and run again to adopt it, or delete it first"
    )
    assert [r.method for r in api.api_requests()] == ["POST", "GET"]


def test_adopt_takes_over_a_matching_cluster_without_posting(provider, api, spec):
    create(provider, api, spec)  # made by the vendor procedure (curl POST)
    res = provider.create(copy.deepcopy(spec) | {"adopt": True})
    assert [(r.method, r.path) for r in api.api_requests()] == [("GET", BASE)]
    assert res.id == NAME and res.outs["state"] == "RUNNING" and res.outs["adopt"] is True
    # `adopt` is read by create only: dropping it later is no change at all
    assert provider.diff(NAME, res.outs, copy.deepcopy(spec)).changes is False


def test_adopt_of_a_missing_cluster_creates_nothing(provider, api, spec):
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.create(copy.deepcopy(spec) | {"adopt": True})
    assert str(e.value) == (
        f"adopt: cluster {NAME} does not exist (HTTP 404); nothing was created. Check project, region and "
        "modelDevelopmentClusterId, or remove adopt: true to create the cluster"
    )
    assert [r.method for r in api.api_requests()] == ["GET"] and api.clusters == {}


def test_adopt_of_a_different_cluster_fails_and_changes_nothing(provider, api, spec):
    create(provider, api, spec)
    other = copy.deepcopy(spec) | {"adopt": True, "labels": {"team": "x"}}
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.create(other)
    assert str(e.value).startswith(
        f"cluster {NAME} exists and differs from the inputs in: labels. It was left"
    )
    assert [r.method for r in api.api_requests()] == ["GET"]


def test_failed_create_reports_the_cluster_left_in_error(provider, api, spec):
    api.fail_next_operation(8, "Quota 'CPUS' exceeded. Limit: 8.0 in region us-central1.")
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.create(copy.deepcopy(spec))
    assert str(e.value) == (
        f"creating cluster {NAME} failed: operation {P}/operations/1001 failed (code 8, RESOURCE_EXHAUSTED): "
        f"Quota 'CPUS' exceeded. Limit: 8.0 in region us-central1; cluster {NAME} is in state ERROR (Quota 'CPUS' "
        "exceeded. Limit: 8.0 in region us-central1) and is not in the Pulumi state: delete it (DELETE "
        f"https://REGION-aiplatform.googleapis.com/v1beta1/{NAME} or the console), fix the cause, then run "
        "`pulumi up` again"
    )
    assert api.clusters[NAME]["clusterStatus"]["state"] == "ERROR"
    # ... and a rerun does not silently adopt the broken cluster
    with pytest.raises(
        ModelDevelopmentClusterError,
        match="matches the inputs, but cannot be adopted; cluster .* is in state ERROR",
    ):
        provider.create(copy.deepcopy(spec))


def test_failed_create_without_a_cluster_says_nothing_was_left(provider, api, spec):
    api.fail_next_operation(3, "bad machine type")
    api.clusters.clear()

    orig = api._advance

    def advance_and_forget():  # the service removed the cluster when its create failed
        orig()
        for op in api.operations.values():
            if op.done and op.error:
                api.clusters.pop(op.cluster, None)

    api._advance = advance_and_forget  # type: ignore[method-assign]
    with pytest.raises(ModelDevelopmentClusterError, match="No cluster was left behind; fix the cause"):
        provider.create(copy.deepcopy(spec))


def test_create_retried_after_503_when_nothing_was_created(provider, api, spec):
    api.inject("POST", "modelDevelopmentClusters", 503)
    res = provider.create(copy.deepcopy(spec))
    assert [(r.method, r.path) for r in api.api_requests()] == [
        ("POST", f"/v1beta1/{P}/modelDevelopmentClusters"),
        ("GET", BASE),  # look before posting again: the first create may have happened
        ("POST", f"/v1beta1/{P}/modelDevelopmentClusters"),
    ]
    assert res.outs["state"] == "RUNNING"


def test_create_whose_answer_was_lost_is_found_with_get(provider, api, spec):
    api.inject("POST", "modelDevelopmentClusters", None, after=True)
    res = provider.create(copy.deepcopy(spec))
    methods = [r.method for r in api.api_requests()]
    assert methods[:2] == ["POST", "GET"] and "POST" not in methods[1:]  # never posted twice
    assert res.id == NAME and res.outs["state"] == "RUNNING"


def test_create_operation_timeout(provider, api, spec):
    api.operation_seconds = 10_000
    spec["operation_timeout_minutes"] = 1
    with pytest.raises(Exception, match=r"still running after 60 s"):
        provider.create(copy.deepcopy(spec))


def test_operation_timeout_defaults_to_120_minutes():
    assert ModelDevelopmentClusterProvider._deadline({}) == 7200


# -- diff -----------------------------------------------------------------------------------------------


def test_no_diff_when_nothing_changed(provider, api, spec):
    outs = create(provider, api, spec)
    d = provider.diff(NAME, outs, copy.deepcopy(spec))
    assert (d.changes, d.replaces) == (False, [])


def test_server_filled_fields_do_not_diff_unless_set(spec):
    server = normalize(spec)
    for p in server["node_pools"]:
        p["boot_disk"] = {"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 100}
        p["node_image"] = DEFAULT_IMAGE
        p["provisioning_model"] = "ON_DEMAND"
    new = normalize(spec)
    for p in new["node_pools"]:
        del p["boot_disk"]
    new["network"].pop("subnetwork")
    assert plan_update(server, new).changes is False
    new["node_pools"][0]["boot_disk"] = {"boot_disk_size_gb": 200}
    plan = plan_update(server, new)
    assert (plan.changed, plan.mask, plan.replaces) == (["node_pools[cpu].boot_disk"], ["node_pools"], [])


def test_node_pools_compare_by_id_not_position(provider, api, spec):
    outs = create(provider, api, spec)
    new = copy.deepcopy(spec)
    new["node_pools"].reverse()
    assert provider.diff(NAME, outs, new).changes is False


@pytest.mark.parametrize(
    ("change", "replaces"),
    [
        (lambda s: s["node_pools"][0]["machine_spec"].update(machine_type="n2-standard-16"), ["node_pools"]),
        (lambda s: s["network"].update(network="projects/p/global/networks/other"), ["network"]),
        (
            lambda s: s["network"].update(subnetwork="projects/p/regions/us-central1/subnetworks/x"),
            ["network"],
        ),
        (
            lambda s: s["orchestrator_spec"]["slurm_spec"].update(
                home_directory_storage="projects/p/locations/z/instances/h2"
            ),
            ["orchestrator_spec"],
        ),
        (lambda s: s.update(model_development_cluster_id="mdc2"), ["model_development_cluster_id"]),
    ],
)
def test_immutable_fields_replace(provider, api, spec, change, replaces):
    outs = create(provider, api, spec)
    new = copy.deepcopy(spec)
    change(new)
    d = provider.diff(NAME, outs, new)
    assert (d.changes, d.replaces) == (True, replaces)
    # same cluster id: the old one must go first or the create would hit ALREADY_EXISTS
    assert d.delete_before_replace is (replaces != ["model_development_cluster_id"])


def test_replacement_refused_under_prevent(provider, api, spec):
    spec["deletion_policy"] = "PREVENT"
    outs = create(provider, api, spec)
    new = copy.deepcopy(spec)
    new["network"]["network"] = "projects/p/global/networks/other"
    with pytest.raises(
        ModelDevelopmentClusterError, match=r"would be replaced \(network.network cannot change in place\)"
    ):
        provider.diff(NAME, outs, new)


def test_unknown_inputs_during_preview_report_a_change(provider, api, spec):
    outs = create(provider, api, spec)
    new = copy.deepcopy(spec)
    new["network"]["subnetwork"] = UNKNOWN
    d = provider.diff(NAME, outs, new)
    assert d.changes is True and d.replaces == ["network"]


# -- update scenarios from the seed ----------------------------------------------------------------------


def test_node_pool_count_change(provider, api, spec, warnings):
    outs = create(provider, api, spec)
    new = copy.deepcopy(spec)
    new["node_pools"][0]["scaling_spec"] = {"min_node_count": 1, "max_node_count": 4}
    d, patch = update(provider, api, outs, new)
    assert (d.changes, d.replaces) == (True, [])
    assert (patch.path, patch.query) == (BASE, {"updateMask": "node_pools", "updateMode": "USER_AND_SERVICE"})
    assert patch.body == {"nodePools": [rest_pool("cpu", 1, 4), rest_pool("login", 1, 1)]}  # the whole list
    assert api.clusters[NAME]["nodePools"][0]["scalingSpec"] == {"minNodeCount": 1, "maxNodeCount": 4}
    assert warnings == [
        f"{NAME}: node pools cpu, login have no node_image: this USER_AND_SERVICE update resends node_pools, which "
        "moves them to the current default image of their machine type (nodes may be recreated); pin node_image, "
        "or set update_mode USER_ONLY to keep the images they run today"
    ]


def test_partitions_and_node_pools_together(provider, api, spec):
    outs = create(provider, api, spec)
    new = copy.deepcopy(spec)
    new["node_pools"].append(pool("cpu2", 0, 3))
    new["orchestrator_spec"]["slurm_spec"]["partitions"] = [
        {"id": "cpu", "node_pool_ids": ["cpu"]},
        {"id": "big", "node_pool_ids": ["cpu2"], "config": {"MaxTime": "4-00:00:00"}},
    ]
    _, patch = update(provider, api, outs, new)
    assert patch.query == {
        "updateMask": "node_pools,orchestrator_spec.slurm_spec.partitions",
        "updateMode": "USER_AND_SERVICE",
    }
    assert patch.body == {
        "nodePools": [rest_pool("cpu"), rest_pool("login", 1, 1), rest_pool("cpu2", 0, 3)],
        "orchestratorSpec": {
            "slurmSpec": {
                "partitions": [
                    {"id": "cpu", "nodePoolIds": ["cpu"]},
                    {"id": "big", "nodePoolIds": ["cpu2"], "config": {"MaxTime": "4-00:00:00"}},
                ]
            }
        },
    }


def two_partitions_a_default(spec: dict[str, Any]) -> dict[str, Any]:
    return with_slurm(
        spec,
        partitions=[{"id": "a", "node_pool_ids": ["cpu"]}, {"id": "b", "node_pool_ids": ["cpu"]}],
        default_partition_id="a",
    )


def test_default_partition_only_sends_only_that_field(provider, api, spec):
    two = two_partitions_a_default(spec)
    outs = create(provider, api, two)
    new = with_slurm(two, default_partition_id="b")
    _, patch = update(provider, api, outs, new)
    assert patch.query == {"updateMask": SLURM + "default_partition_id", "updateMode": "USER_AND_SERVICE"}
    assert patch.body == {"orchestratorSpec": {"slurmSpec": {"defaultPartitionId": "b"}}}
    assert api.clusters[NAME]["orchestratorSpec"]["slurmSpec"]["partitions"] == [
        {"id": "a", "nodePoolIds": ["cpu"]},
        {"id": "b", "nodePoolIds": ["cpu"]},
    ]


def test_deleting_or_renaming_the_default_partition_is_refused_before_any_call(provider, api, spec):
    two = two_partitions_a_default(spec)
    outs = create(provider, api, two)
    new = with_slurm(two, partitions=[{"id": "b", "node_pool_ids": ["cpu"]}], default_partition_id="b")
    failures = provider.check(outs, new).failures
    assert [(f.property, f.reason) for f in failures] == [
        (
            SLURM + "partitions",
            "this change deletes or renames 'a', the current default partition, which the service rejects; first "
            "change only defaultPartitionId to another partition, apply, then remove or rename it",
        )
    ]
    with pytest.raises(ModelDevelopmentClusterError, match="deletes or renames 'a'"):
        provider.update(NAME, outs, new)
    assert api.requests == []


def test_slurm_config_preemption_user_only(provider, api, spec, warnings):
    outs = create(provider, api, spec)
    preempt = {
        "PriorityType": "priority/multifactor",
        "PriorityWeightAge": "1000",
        "PreemptType": "preempt/partition_prio",
        "PreemptMode": "REQUEUE",
        "PreemptExemptTime": "1:01",
        "SchedulerParameters": "bf_continue,bf_window=1440",
    }
    new = with_slurm(spec, config=preempt)
    new["update_mode"] = "USER_ONLY"
    _, patch = update(provider, api, outs, new)
    assert patch.query == {"updateMask": SLURM + "config", "updateMode": "USER_ONLY"}
    assert patch.body == {"orchestratorSpec": {"slurmSpec": {"config": preempt}}}
    assert warnings == []


def test_clearing_the_config_map_names_it_in_the_mask(provider, api, spec):
    outs = create(provider, api, with_slurm(spec, config={"PriorityWeightAge": "1000"}))
    _, patch = update(provider, api, outs, with_slurm(spec, config=None))
    assert patch.query["updateMask"] == SLURM + "config"
    assert patch.body == {
        "orchestratorSpec": {"slurmSpec": {"config": {}}}
    }  # a map is cleared by sending it empty
    assert "config" not in api.clusters[NAME]["orchestratorSpec"]["slurmSpec"]


def test_clearing_labels_sends_an_empty_map(provider, api, spec):
    outs = create(provider, api, {**spec, "labels": {"team": "ml"}})
    _, patch = update(provider, api, outs, copy.deepcopy(spec))
    assert (patch.query["updateMask"], patch.body) == ("labels", {"labels": {}})
    assert "labels" not in api.clusters[NAME]


def test_migration_from_scheduling_accounting_to_config(provider, api, spec):
    legacy = with_slurm(
        spec,
        scheduling={"priorityType": "PRIORITY_TYPE_MULTIFACTOR", "priorityWeightAge": 1000},
        accounting={"accountingStorageEnforceFlags": ["ASSOCIATIONS", "LIMITS"]},
    )
    outs = create(provider, api, legacy)
    config = {
        "PriorityType": "priority/multifactor",
        "PriorityWeightAge": "1000",
        "AccountingStorageEnforce": "associations,limits",
    }
    migrated = with_slurm(spec, config=config)
    _, patch = update(provider, api, outs, migrated)
    assert patch.query == {
        "updateMask": f"{SLURM}config,{SLURM}scheduling,{SLURM}accounting",
        "updateMode": "USER_AND_SERVICE",
    }
    assert patch.body == {"orchestratorSpec": {"slurmSpec": {"config": config}}}
    slurm = api.clusters[NAME]["orchestratorSpec"]["slurmSpec"]
    assert slurm["config"] == config and "scheduling" not in slurm and "accounting" not in slurm

    # afterwards the config path alone is enough
    outs = provider.read(NAME, migrated).outs
    api.requests.clear()
    later = with_slurm(spec, config={**config, "PriorityWeightAge": "2000"})
    _, patch = update(provider, api, outs, later)
    assert patch.query["updateMask"] == SLURM + "config"


def test_config_with_scheduling_is_refused(provider, spec):
    bad = with_slurm(spec, config={"PriorityWeightAge": "1000"}, scheduling={"priorityWeightAge": 1000})
    assert [(f.property, f.reason) for f in provider.check({}, bad).failures] == [
        (
            SLURM + "config",
            "cannot be set together with scheduling: the cluster uses either config or the legacy "
            "scheduling/accounting; move every setting into config (slurm.conf names) and remove scheduling",
        )
    ]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"login_node_pool_id": "nope"},
            [
                (
                    SLURM + "login_node_pool_id",
                    "login node pool 'nope' is not a node pool id; node pools: cpu, login",
                )
            ],
        ),
        (
            {"default_partition_id": "x"},
            [(SLURM + "default_partition_id", "partition 'x' does not exist; partitions: cpu")],
        ),
        (
            {"partitions": [{"id": "cpu", "node_pool_ids": ["gpu"]}]},
            [
                (
                    SLURM + "partitions[0].node_pool_ids[0]",
                    "node pool 'gpu' is not a node pool id; node pools: cpu, login",
                )
            ],
        ),
        (
            {
                "partitions": [
                    {"id": "cpu", "node_pool_ids": ["cpu"]},
                    {"id": "cpu", "node_pool_ids": ["cpu"]},
                ]
            },
            [(SLURM + "partitions[1].id", f"duplicate partition id 'cpu' (also {SLURM}partitions[0])")],
        ),
    ],
)
def test_check_references(provider, spec, changes, expected):
    assert [
        (f.property, f.reason) for f in provider.check({}, with_slurm(spec, **changes)).failures
    ] == expected


def test_duplicate_node_pool_ids_refused(provider, spec):
    spec["node_pools"].append(pool("cpu"))
    assert [(f.property, f.reason) for f in provider.check({}, spec).failures] == [
        ("node_pools[2].id", "duplicate node pool id 'cpu' (also node_pools[0])")
    ]


def test_node_image_unpinned_user_only_keeps_todays_image(provider, api, spec, warnings):
    outs = create(provider, api, spec)
    api.default_images["n2-standard-8"] = "projects/vertex-ai-slurm/global/images/slurm-2026-06"
    new = copy.deepcopy(spec)
    new["update_mode"] = "USER_ONLY"
    new["node_pools"][0]["scaling_spec"]["max_node_count"] = 5
    _, patch = update(provider, api, outs, new)
    assert patch.query == {"updateMask": "node_pools", "updateMode": "USER_ONLY"}
    assert "nodeImage" not in patch.body["nodePools"][0]
    assert api.running_images[(NAME, "cpu")] == DEFAULT_IMAGE
    assert api.running_images[(NAME, "login")] == DEFAULT_IMAGE
    assert warnings == []


def test_node_image_unpinned_user_and_service_moves_to_new_default_pinned_stays(
    provider, api, spec, warnings
):
    pinned = "projects/vertex-ai-slurm/global/images/slurm-2026-01-15"
    spec["node_pools"][1]["node_image"] = pinned
    outs = create(provider, api, spec)
    newer = "projects/vertex-ai-slurm/global/images/slurm-2026-06"
    api.default_images["n2-standard-8"] = newer
    new = copy.deepcopy(spec)
    new["node_pools"][0]["scaling_spec"]["max_node_count"] = 5
    _, patch = update(provider, api, outs, new)
    assert patch.body["nodePools"][1]["nodeImage"] == pinned
    assert api.running_images[(NAME, "cpu")] == newer  # moved: it was unpinned
    assert api.running_images[(NAME, "login")] == pinned
    assert len(warnings) == 1 and "node pools cpu have no node_image" in warnings[0]


def test_only_local_settings_changed_sends_nothing(provider, api, spec):
    outs = create(provider, api, spec)
    new = copy.deepcopy(spec)
    new["deletion_policy"] = "ABANDON"
    new["operation_timeout_minutes"] = 30
    assert provider.diff(NAME, outs, new).changes is True
    res = provider.update(NAME, outs, new)
    assert api.requests == []
    assert res.outs["deletion_policy"] == "ABANDON" and res.outs["name"] == NAME


def test_patch_is_retried_on_429(provider, api, spec):
    outs = create(provider, api, spec)
    api.inject("PATCH", "mdc1", 429)
    new = copy.deepcopy(spec)
    new["labels"] = {"team": "ml"}
    provider.update(NAME, outs, new)
    patches = [r for r in api.api_requests() if r.method == "PATCH"]
    assert len(patches) == 2
    assert patches[1].query == {"updateMask": "labels", "updateMode": "USER_AND_SERVICE"}
    assert patches[1].body == {"labels": {"team": "ml"}}


def test_failed_update_operation_is_reported(provider, api, spec):
    outs = create(provider, api, spec)
    api.fail_next_operation(9, "node pool cpu: zone has no capacity")
    new = copy.deepcopy(spec)
    new["labels"] = {"team": "ml"}
    with pytest.raises(
        ModelDevelopmentClusterError,
        match=r"updating labels failed: .*code 9, FAILED_PRECONDITION.*no capacity",
    ):
        provider.update(NAME, outs, new)


# -- read / delete --------------------------------------------------------------------------------------


def test_read_reports_drift_in_managed_fields_only(provider, api, spec):
    outs = create(provider, api, spec)
    api.clusters[NAME]["nodePools"][0]["scalingSpec"]["maxNodeCount"] = 9  # changed in the console
    res = provider.read(NAME, outs)
    assert (res.id, res.outs["node_pools"][0]["scaling_spec"]) == (
        NAME,
        {"min_node_count": 0, "max_node_count": 9},
    )
    assert "provisioning_model" not in res.outs["node_pools"][0]  # server-filled, not ours
    assert [(r.method, r.path) for r in api.requests] == [("GET", BASE)]
    d = provider.diff(NAME, res.outs, copy.deepcopy(spec))
    assert (d.changes, d.replaces) == (True, [])


def test_read_404_means_gone(provider, api, spec):
    res = provider.read(NAME, copy.deepcopy(spec))
    assert (res.id, res.outs) == (None, {})


def test_delete_waits_for_the_operation(provider, api, spec):
    outs = create(provider, api, spec)
    provider.delete(NAME, outs)
    assert [(r.method, r.path) for r in api.api_requests()] == [("DELETE", BASE)]
    assert NAME not in api.clusters


def test_delete_of_a_missing_cluster_is_done(provider, api, spec):
    provider.delete(NAME, copy.deepcopy(spec))
    assert [(r.method, r.path) for r in api.requests] == [("DELETE", BASE)]


def test_delete_abandon_makes_no_call(provider, api, spec, warnings):
    outs = create(provider, api, {**spec, "deletion_policy": "ABANDON"})
    provider.delete(NAME, outs)
    assert api.requests == [] and NAME in api.clusters
    assert warnings == [f"cluster {NAME}: deletion policy ABANDON: removed from the stack, left running"]


def test_delete_prevent_refuses(provider, api, spec):
    outs = create(provider, api, {**spec, "deletion_policy": "PREVENT"})
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.delete(NAME, outs)
    assert str(e.value) == (
        f"cluster {NAME} has deletion policy PREVENT: refusing to delete it; set deletionPolicy to DELETE (or "
        "ABANDON to keep it running) and run `pulumi up` before destroying it"
    )
    assert api.requests == [] and NAME in api.clusters


# -- pickling -------------------------------------------------------------------------------------------


def test_provider_pickles_with_no_secret_and_round_trips(api, spec, monkeypatch, tmp_path):
    # Application Default Credentials from an authorized_user file whose token URI is the loopback fake
    api.auth = FakeAuth()
    monkeypatch.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS", api.auth.adc_file(api.endpoint, tmp_path / "adc.json")
    )
    prov = ModelDevelopmentClusterProvider()  # as the resource builds it: ADC, real clock
    api.operation_seconds, api.finish_at_once = 0, True  # the wall clock: no first poll to wait for
    del spec["emulator"]
    spec["quota_project"] = "billing"
    prov.create(copy.deepcopy(spec))  # a real authenticated call happened through this instance
    post = api.api_requests()[0]
    assert post.headers["authorization"] == f"Bearer {FakeAuth.SOURCE_TOKEN}"
    assert post.headers["x-goog-user-project"] == "billing"

    assert vars(prov) == {"clock": None}
    raw = base64.b64decode(serialize_provider(prov))
    assert FakeAuth.SOURCE_TOKEN.encode() not in raw and b"ya29" not in raw
    assert b"ml_diagnostics.providers.model_development_cluster" in raw  # pickled by reference
    back = dill.loads(raw)
    assert type(back) is ModelDevelopmentClusterProvider and vars(back) == vars(prov)


# -- the mask is never empty when an API field changed ------------------------------------------------------

MUTATIONS = {
    "labels": lambda s: s.update(labels={"a": "b"}),
    "pool_count": lambda s: s["node_pools"][0]["scaling_spec"].update(max_node_count=7),
    "pool_added": lambda s: s["node_pools"].append(pool("extra")),
    "pool_removed": lambda s: s["node_pools"].pop(0),
    "pool_image": lambda s: s["node_pools"][1].update(node_image="projects/x/global/images/i"),
    "partitions": lambda s: s["orchestrator_spec"]["slurm_spec"]["partitions"].append(
        {"id": "p2", "node_pool_ids": ["login"]}
    ),
    "default": lambda s: s["orchestrator_spec"]["slurm_spec"].update(default_partition_id="cpu"),
    "login": lambda s: s["orchestrator_spec"]["slurm_spec"].update(login_node_pool_id="cpu"),
    "prolog": lambda s: s["orchestrator_spec"]["slurm_spec"].update(prolog_bash_scripts=["echo hi"]),
    "epilog": lambda s: s["orchestrator_spec"]["slurm_spec"].update(epilog_bash_scripts=["echo bye"]),
    "config": lambda s: s["orchestrator_spec"]["slurm_spec"].update(config={"PriorityWeightAge": "5"}),
    "node_sets": lambda s: s["orchestrator_spec"]["slurm_spec"].update(
        node_sets=[{"node_pool_id": "cpu", "config": {"Weight": "1"}}]
    ),
}
ALLOWED_MASK = set(UPDATE_MASK_PATHS)


@pytest.mark.parametrize("n", range(1, 4))
def test_any_api_change_yields_a_non_empty_mask_of_allowed_paths(spec, n):
    import itertools

    for combo in itertools.combinations(sorted(MUTATIONS), n):
        new = copy.deepcopy(spec)
        for name in combo:
            MUTATIONS[name](new)
        plan = plan_update(normalize(spec), normalize(new))
        assert plan.replaces == [], combo
        assert plan.mask, combo
        assert set(plan.mask) <= ALLOWED_MASK, combo
        assert len(plan.mask) == len(set(plan.mask)), combo


def test_impersonation_and_quota_project_from_the_inputs(api, spec, monkeypatch, tmp_path):
    """googleApi.impersonateServiceAccount/quotaProject reach the API as the impersonated token and header."""
    sa = "deployer@acme-ml.iam.gserviceaccount.com"
    api.auth = FakeAuth(service_account=sa)
    monkeypatch.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS", api.auth.adc_file(api.endpoint, tmp_path / "adc.json")
    )
    api.operation_seconds, api.finish_at_once = 0, True  # the wall clock: no first poll to wait for
    del spec["emulator"]
    spec.update(impersonate_service_account=sa, iam_endpoint=api.endpoint, quota_project="billing")
    ModelDevelopmentClusterProvider().create(copy.deepcopy(spec))
    post = api.api_requests()[0]
    assert (post.method, post.headers["authorization"], post.headers["x-goog-user-project"]) == (
        "POST",
        f"Bearer {FakeAuth.IMPERSONATED_TOKEN}",
        "billing",
    )
    assert [r[0] for r in api.auth.iam_requests] == [sa]
    assert "impersonateServiceAccount" not in json.dumps(post.body) and "iamEndpoint" not in json.dumps(
        post.body
    )


def test_emulator_mode_refuses_a_non_loopback_endpoint(provider, spec):
    spec["api_endpoint"] = "https://europe-west4-aiplatform.googleapis.com"
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.create(copy.deepcopy(spec))
    assert str(e.value) == (
        f"googleApi settings of {NAME}: emulator mode sends no credentials, so only loopback endpoints "
        "(127.0.0.1, localhost, ::1) are allowed; 'europe-west4-aiplatform.googleapis.com' is not one"
    )
