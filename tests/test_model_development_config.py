"""`modelDevelopmentClusters` config validation and the component's resources under the mock runtime."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from mldiag.engine.runtime import run_config
from program import config
from program.kinds.model_development.model import ModelDevelopmentClusterTarget
from tests.fixtures.google import seed_orchestrator
from tests.fixtures.stacks import STACK_NAMES

NS = "ml-diagnostics"
KEY = f"{NS}:modelDevelopmentClusters"
T = f"{NS}:modelDevelopmentClusters[0]"
SLURM = f"{T}.orchestratorSpec.slurmSpec"
DYN = "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster"
STACKS = Path(__file__).resolve().parent.parent / "stacks"


def target(**over: Any) -> dict[str, Any]:
    t: dict[str, Any] = {
        "name": "cpu",
        "project": "ml-train-dev",
        "region": "us-central1",
        "modelDevelopmentClusterId": "cpu1",
        "network": {"network": "projects/p/global/networks/n"},
        "nodePools": [
            {
                "id": "cpu",
                "machineSpec": {"machineType": "n2-standard-8"},
                "scalingSpec": {"minNodeCount": 0, "maxNodeCount": 2},
                "zone": "us-central1-a",
            },
            {
                "id": "login",
                "machineSpec": {"machineType": "n2-standard-8"},
                "scalingSpec": {"minNodeCount": 1, "maxNodeCount": 1},
                "zone": "us-central1-a",
            },
        ],
        "orchestratorSpec": {
            "slurmSpec": {
                "homeDirectoryStorage": "projects/p/locations/us-central1-a/instances/home",
                "partitions": [{"id": "cpu", "nodePoolIds": ["cpu"]}],
                "loginNodePoolId": "login",
            }
        },
    }
    t.update(over)
    return t


def problems(*targets: dict[str, Any], extra: dict[str, Any] | None = None) -> list[str]:
    with pytest.raises(config.ConfigError) as e:
        config.parse({f"{NS}:environment": "dev", KEY: list(targets), **(extra or {})})
    return e.value.problems


def slurm(t: dict[str, Any], **changes: Any) -> dict[str, Any]:
    t = copy.deepcopy(t)
    t["orchestratorSpec"]["slurmSpec"].update(changes)
    return t


def test_a_valid_target_parses_with_defaults():
    cfg = config.parse({f"{NS}:environment": "dev", KEY: [target()]})
    (t,) = cfg.model_development_clusters
    assert (t.update_mode, t.deletion_policy, t.operation_timeout_minutes) == (
        "USER_AND_SERVICE",
        "DELETE",
        120,
    )


@pytest.mark.parametrize("cid", ["cpu-1", "Cpu1", "1cpu", "abcdefghijk"])
def test_cluster_id_rules(cid):
    assert problems(target(modelDevelopmentClusterId=cid)) == [
        f"{T}.modelDevelopmentClusterId: {cid!r} is not allowed: 1-10 characters of lowercase letters and "
        "digits, starting with a letter (no '-': the cluster uses Slurm)"
    ]


def test_duplicate_pool_and_partition_ids():
    t = target()
    t["nodePools"].append(copy.deepcopy(t["nodePools"][0]))
    t = slurm(t, partitions=[{"id": "cpu", "nodePoolIds": ["cpu"]}, {"id": "cpu", "nodePoolIds": ["cpu"]}])
    assert problems(t) == [
        f"{T}.nodePools[2].id: duplicate node pool id 'cpu' (also nodePools[0])",
        f"{SLURM}.partitions[1].id: duplicate partition id 'cpu' (also orchestratorSpec.slurmSpec.partitions[0])",
    ]


def test_references_must_exist():
    t = slurm(
        target(),
        partitions=[{"id": "cpu", "nodePoolIds": ["cpu", "gpu"]}],
        loginNodePoolId="login2",
        defaultPartitionId="gpu",
        nodeSets=[{"nodePoolId": "tpu", "config": {"Weight": "10"}}],
    )
    assert problems(t) == [
        f"{SLURM}.defaultPartitionId: partition 'gpu' does not exist; partitions: cpu",
        f"{SLURM}.loginNodePoolId: login node pool 'login2' is not a node pool id; node pools: cpu, login",
        f"{SLURM}.nodeSets[0].nodePoolId: node pool 'tpu' is not a node pool id; node pools: cpu, login",
        f"{SLURM}.partitions[0].nodePoolIds[1]: node pool 'gpu' is not a node pool id; node pools: cpu, login",
    ]


def test_config_with_scheduling_and_accounting_is_refused():
    t = slurm(target(), config={"PriorityWeightAge": "1000"}, scheduling={"a": 1}, accounting={"b": 2})
    assert problems(t) == [
        f"{SLURM}.config: cannot be set together with scheduling and accounting: the cluster uses either config "
        "or the legacy scheduling/accounting; move every setting into config (slurm.conf names) and remove "
        "scheduling and accounting"
    ]


def test_partition_default_key_and_scaling_and_reservation_rules():
    t = target()
    t["nodePools"][0]["scalingSpec"] = {"minNodeCount": 3, "maxNodeCount": 2}
    t["nodePools"][0]["provisioningModel"] = "RESERVATION"
    t["nodePools"][1]["provisioningModel"] = "SPOT"
    t["nodePools"][1]["machineSpec"]["reservationAffinity"] = {"reservationAffinityType": "ANY_RESERVATION"}
    t = slurm(t, partitions=[{"id": "cpu", "nodePoolIds": ["cpu"], "config": {"Default": "YES"}}])
    assert problems(t) == [
        f"{T}.nodePools[0].machineSpec.reservationAffinity: required when provisioningModel is RESERVATION",
        f"{T}.nodePools[0].scalingSpec.maxNodeCount: must be >= minNodeCount (3)",
        f"{T}.nodePools[1].machineSpec.reservationAffinity: not allowed with provisioningModel SPOT; allowed only "
        "with RESERVATION",
        f"{SLURM}.partitions[0].config: 'Default' is not allowed here; set defaultPartitionId instead",
    ]


def test_shapes_and_enums_name_what_is_allowed():
    t = target(updateMode="SERVICE_ONLY", deletionPolicy="KEEP", network={"network": "default"})
    t["orchestratorSpec"]["slurmSpec"]["homeDirectoryStorage"] = "fs-home"
    assert problems(t) == [
        f"{T}.deletionPolicy: must be one of 'DELETE', 'ABANDON' or 'PREVENT'",
        f"{T}.network.network: must look like projects/PROJECT/global/networks/NETWORK",
        f"{SLURM}.homeDirectoryStorage: must look like projects/PROJECT/locations/ZONE/instances/NAME",
        f"{T}.updateMode: must be one of 'USER_AND_SERVICE' or 'USER_ONLY'",
    ]


def test_unknown_key_lists_allowed_keys():
    (p,) = problems(target(nodeCount=3))
    assert p.startswith(
        f"{T}.nodeCount: unknown key; allowed keys: adopt, deletionPolicy, displayName, googleApi, labels, "
    )


# -- component under the mock runtime ---------------------------------------------------------------------


def test_component_registers_the_dynamic_resource_with_snake_case_inputs():
    t = target(displayName="cpu", labels={"env": "dev"})
    t["nodePools"][0]["nodeImage"] = "projects/x/global/images/slurm-1"
    result = run_config(
        {
            f"{NS}:environment": "dev",
            KEY: [t],
            f"{NS}:googleApi": {
                "quotaProject": "billing",
                "endpoints": {"aiplatform": "https://private.example"},
            },
        }
    )
    comp = result.one("mldiag:index:ModelDevelopmentCluster", "mdc-cpu")
    res = result.one(DYN, "mdc-cpu-cluster")
    assert res.parent == comp.urn
    inputs = {k: v for k, v in res.inputs.items() if k != "__provider"}
    assert inputs == {
        "project": "ml-train-dev",
        "region": "us-central1",
        "model_development_cluster_id": "cpu1",
        "display_name": "cpu",
        "labels": {"env": "dev"},
        "network": {"network": "projects/p/global/networks/n"},
        "node_pools": [
            {
                "id": "cpu",
                "machine_spec": {"machine_type": "n2-standard-8"},
                "scaling_spec": {"min_node_count": 0, "max_node_count": 2},
                "zone": "us-central1-a",
                "node_image": "projects/x/global/images/slurm-1",
            },
            {
                "id": "login",
                "machine_spec": {"machine_type": "n2-standard-8"},
                "scaling_spec": {"min_node_count": 1, "max_node_count": 1},
                "zone": "us-central1-a",
            },
        ],
        "orchestrator_spec": seed_orchestrator(),
        "update_mode": "USER_AND_SERVICE",
        "deletion_policy": "DELETE",
        "operation_timeout_minutes": 120,
        "api_endpoint": "https://private.example",
        "quota_project": "billing",
    }


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_stack_files_parse(stack):
    raw = yaml.safe_load((STACKS / f"Pulumi.{stack}.yaml").read_text())["config"]
    targets = raw[KEY]
    parsed = [ModelDevelopmentClusterTarget.model_validate(x) for x in targets]
    if stack == "prod":
        assert all(p.node_image for c in parsed for p in c.node_pools)
        assert {c.deletion_policy for c in parsed} == {"PREVENT"}
    if stack == "dev":
        assert all(not p.machine_spec.accelerator_type for c in parsed for p in c.node_pools)
