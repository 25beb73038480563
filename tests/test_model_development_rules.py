"""`validate_spec`, the Model Development Cluster rules shared by the library's Spec and the provider's check:
every concern's problems, in the order a caller sees them, and the paths as each caller writes them."""

from __future__ import annotations

from typing import Any

from ml_diagnostics.providers.model_development_cluster import ModelDevelopmentClusterProvider
from ml_diagnostics.specs.model_development import UNKNOWN
from ml_diagnostics.specs.model_development_rules import validate_spec
from tests.fixtures.google import pool

S = "orchestrator_spec.slurm_spec"


def bad_spec() -> dict[str, Any]:
    """A problem in each concern: settings, node pools, Slurm references, partitions, node sets, the legacy
    settings and the Lustre export."""
    return {
        "project": "p",
        "region": "us-central1",
        "model_development_cluster_id": "mdc-1",
        "update_mode": "SOMETIMES",
        "operation_timeout_minutes": 0,
        "node_pools": [
            pool("cpu"),
            pool("cpu", 3, 1),
            pool("login", -1, 1, provisioning_model="RESERVATION"),
        ],
        "orchestrator_spec": {
            "slurm_spec": {
                "partitions": [
                    {"id": "cpu", "node_pool_ids": ["cpu", "gpu"]},
                    {"id": "cpu", "node_pool_ids": [], "config": {"default": "YES"}},
                ],
                "login_node_pool_id": "head",
                "default_partition_id": "batch",
                "node_sets": [{"node_pool_id": "cpu"}, {"node_pool_id": "cpu"}, {"node_pool_id": "tpu"}],
                "config": {"PriorityType": "priority/multifactor"},
                "accounting": {"x": 1},
            }
        },
        "lustre_export_config": {"destination_bucket": "gs://backups"},
    }


def test_every_concern_in_order() -> None:
    old = {"orchestrator_spec": {"slurm_spec": {"default_partition_id": "main"}}}
    assert validate_spec(bad_spec(), old) == [
        (
            "model_development_cluster_id",
            "'mdc-1' is not allowed: 1-10 characters of lowercase letters and digits, starting with a letter "
            "(no '-': the cluster uses Slurm)",
        ),
        ("update_mode", "'SOMETIMES' is not allowed; allowed values: USER_AND_SERVICE, USER_ONLY"),
        ("operation_timeout_minutes", "must be a number of minutes from 1 to 1440"),
        ("node_pools[1].id", "duplicate node pool id 'cpu' (also node_pools[0])"),
        ("node_pools[1].scaling_spec.max_node_count", "must be >= minNodeCount (3)"),
        ("node_pools[2].scaling_spec.min_node_count", "must be >= 0"),
        ("node_pools[2].machine_spec.reservation_affinity", "required when provisioningModel is RESERVATION"),
        (f"{S}.home_directory_storage", "required: the Filestore instance mounted as /home"),
        (f"{S}.login_node_pool_id", "login node pool 'head' is not a node pool id; node pools: cpu, login"),
        (
            f"{S}.partitions[0].node_pool_ids[1]",
            "node pool 'gpu' is not a node pool id; node pools: cpu, login",
        ),
        (f"{S}.partitions[1].id", f"duplicate partition id 'cpu' (also {S}.partitions[0])"),
        (f"{S}.partitions[1].node_pool_ids", "at least one node pool id is required"),
        (f"{S}.partitions[1].config", "'Default' is not allowed here; set defaultPartitionId instead"),
        (f"{S}.default_partition_id", "partition 'batch' does not exist; partitions: cpu"),
        (f"{S}.node_sets[1].node_pool_id", "duplicate node set for node pool 'cpu'"),
        (f"{S}.node_sets[2].node_pool_id", "node pool 'tpu' is not a node pool id; node pools: cpu, login"),
        (
            f"{S}.config",
            "cannot be set together with accounting: the cluster uses either config or the legacy "
            "scheduling/accounting; move every setting into config (slurm.conf names) and remove accounting",
        ),
        (
            f"{S}.partitions",
            "this change deletes or renames 'main', the current default partition, which the service rejects; "
            "first change only defaultPartitionId to another partition, apply, then remove or rename it",
        ),
        ("lustre_export_config.destination_bucket", "the bucket's name, without gs://"),
    ]


def test_without_slurm_the_rules_of_slurm_and_lustre_are_not_checked() -> None:
    spec = {**bad_spec(), "orchestrator_spec": {}, "node_pools": []}
    assert validate_spec(spec) == [
        (
            "model_development_cluster_id",
            "'mdc-1' is not allowed: 1-10 characters of lowercase letters and digits, starting with a letter "
            "(no '-': the cluster uses Slurm)",
        ),
        ("update_mode", "'SOMETIMES' is not allowed; allowed values: USER_AND_SERVICE, USER_ONLY"),
        ("operation_timeout_minutes", "must be a number of minutes from 1 to 1440"),
        ("node_pools", "at least one node pool is required (a login pool and a compute pool)"),
        (S, "required: the cluster is orchestrated by Slurm"),
    ]


def test_unknown_values_are_not_references_to_check() -> None:
    spec = bad_spec()
    slurm = spec["orchestrator_spec"]["slurm_spec"]
    slurm.update(
        login_node_pool_id=UNKNOWN, default_partition_id=UNKNOWN, node_sets=[{"node_pool_id": UNKNOWN}]
    )
    slurm["partitions"] = [{"id": "cpu", "node_pool_ids": [UNKNOWN]}]
    spec["model_development_cluster_id"] = UNKNOWN
    assert [p for p, _ in validate_spec(spec)] == [
        "update_mode",
        "operation_timeout_minutes",
        "node_pools[1].id",
        "node_pools[1].scaling_spec.max_node_count",
        "node_pools[2].scaling_spec.min_node_count",
        "node_pools[2].machine_spec.reservation_affinity",
        f"{S}.home_directory_storage",
        f"{S}.config",
        "lustre_export_config.destination_bucket",
    ]


def test_paths_in_camel_case_and_paths_named_inside_messages() -> None:
    problems = validate_spec(
        bad_spec(), camel=True, mention=lambda *parts: "<" + "/".join(map(str, parts)) + ">"
    )
    assert problems[3] == ("nodePools[1].id", "duplicate node pool id 'cpu' (also <node_pools/0>)")
    assert problems[10] == (
        "orchestratorSpec.slurmSpec.partitions[1].id",
        "duplicate partition id 'cpu' (also <orchestrator_spec/slurm_spec/partitions/0>)",
    )
    # Without `mention`, a path inside a message is written as the problems' paths are.
    assert validate_spec(bad_spec(), camel=True)[3] == (
        "nodePools[1].id",
        "duplicate node pool id 'cpu' (also nodePools[0])",
    )


def test_the_provider_check_keeps_the_rules_the_spec_model_also_has() -> None:
    """The dynamic resource's inputs reach `check` without the library's pydantic Spec (a program may
    register it directly): the allowed values, ranges and required keys are refused there too."""
    news = {
        "project": "p",
        "region": "us-central1",
        "model_development_cluster_id": "mdc1",
        "update_mode": "SOMETIMES",
        "deletion_policy": "KEEP",
        "operation_timeout_minutes": 0.0,
        "node_pools": [
            {
                "machine_spec": {"machine_type": "n2-standard-8"},
                "scaling_spec": {"min_node_count": -1.0, "max_node_count": 1.0},
                "zone": "us-central1-a",
            }
        ],
        "orchestrator_spec": {"slurm_spec": {"partitions": [{"node_pool_ids": ["cpu"]}]}},
    }
    failures = ModelDevelopmentClusterProvider().check({}, news).failures
    assert [(f.property, f.reason) for f in failures] == [
        ("update_mode", "'SOMETIMES' is not allowed; allowed values: USER_AND_SERVICE, USER_ONLY"),
        ("deletion_policy", "'KEEP' is not allowed; allowed values: DELETE, ABANDON, PREVENT"),
        ("operation_timeout_minutes", "must be a number of minutes from 1 to 1440"),
        ("node_pools[0].id", "required"),
        ("node_pools[0].scaling_spec.min_node_count", "must be >= 0"),
        (f"{S}.home_directory_storage", "required: the Filestore instance mounted as /home"),
        (f"{S}.login_node_pool_id", "required: one of the node pools ()"),
        (f"{S}.partitions[0].id", "required"),
        (f"{S}.partitions[0].node_pool_ids[0]", "node pool 'cpu' is not a node pool id; node pools: none"),
    ]


def test_node_counts_unknown_in_a_preview_are_not_compared_and_a_non_integer_is_refused() -> None:
    """A pool's counts may be unknown in a preview (an Output the engine has not resolved): the check skips
    them instead of comparing a placeholder with a number; a count that is no integer is named."""
    spec = bad_spec()
    spec["node_pools"] = [pool("cpu"), pool("gpu"), pool("tpu")]
    spec["node_pools"][0]["scaling_spec"] = {"min_node_count": UNKNOWN, "max_node_count": 2}
    spec["node_pools"][1]["scaling_spec"] = {"min_node_count": 1, "max_node_count": UNKNOWN}
    spec["node_pools"][2]["scaling_spec"] = {"min_node_count": "one", "max_node_count": True}
    problems = [(p, m) for p, m in validate_spec(spec) if p.startswith("node_pools")]
    assert problems == [
        ("node_pools[2].scaling_spec.min_node_count", "must be an integer"),
        ("node_pools[2].scaling_spec.max_node_count", "must be an integer"),
    ]
