"""Model Development Cluster rules, through the Analyzer protocol."""

from __future__ import annotations

import copy

from tests.fixtures.policies import ENVS, EXPECTED, UNKNOWN_STRING, levels_ok, res, the

MDC = "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster"


def pool(pid: str, image: str | None = "slurm-gcp-6-9-ubuntu-2204") -> dict:
    p = {
        "id": pid,
        "machine_spec": {"machine_type": "n2-standard-8"},
        "scaling_spec": {"min_node_count": 1, "max_node_count": 2},
        "zone": "us-central1-a",
    }
    if image:
        p["node_image"] = image
    return p


def spec(**slurm) -> dict:
    return {
        "project": "acme",
        "region": "us-central1",
        "model_development_cluster_id": "train",
        "deletion_policy": "PREVENT",
        "node_pools": [pool("cpu"), pool("login")],
        "orchestrator_spec": {
            "slurm_spec": {
                "home_directory_storage": "projects/acme/locations/us-central1-a/instances/fs",
                "partitions": [{"id": "cpu", "node_pool_ids": ["cpu"]}],
                "login_node_pool_id": "login",
                "default_partition_id": "cpu",
                **slurm,
            }
        },
        # the dynamic provider's pickled code travels as an input too: rules never look at it
        "__provider": "gASVxxxx",
    }


def test_a_well_formed_cluster_passes_every_rule(pack):
    r = res(MDC, "train", spec(config={"PreemptMode": "REQUEUE"}))
    assert [v for v in pack.run([r], "prod")] == []


def test_node_pool_references(pack):
    bad = spec(login_node_pool_id="gateway", default_partition_id="gpu", node_sets=[{"node_pool_id": "tpu"}])
    bad["orchestrator_spec"]["slurm_spec"]["partitions"].append(
        {"id": "a100", "node_pool_ids": ["cpu", "a100"]}
    )
    r = res(MDC, "train", bad)
    levels_ok(pack, "mdc-node-pool-references", [r])
    assert the(pack, "mdc-node-pool-references", [r]) == (
        "Model Development Cluster 'train': orchestrator_spec.slurm_spec.login_node_pool_id 'gateway' is not a "
        "defined node pool (defined: cpu, login); orchestrator_spec.slurm_spec.partitions[1].node_pool_ids[1] "
        "'a100' is not a defined node pool (defined: cpu, login); orchestrator_spec.slurm_spec.node_sets[0]."
        "node_pool_id 'tpu' is not a defined node pool (defined: cpu, login); orchestrator_spec.slurm_spec."
        "default_partition_id 'gpu' is not a defined partition (defined: cpu, a100). The API rejects references "
        "to node pools or partitions that the same request does not define, and an update that deletes or renames "
        "the default partition is refused (Model Development Cluster docs). Remediation: make every login pool, partition and node set "
        "reference a node_pools[].id, and default_partition_id a partitions[].id; when renaming the default "
        "partition, first point default_partition_id at a partition that stays."
    )


def test_slurm_config_exclusive(pack):
    legacy_only = res(MDC, "a", spec(scheduling={"priority_type": "PRIORITY_BASIC"}))
    assert pack.findings("mdc-slurm-config-exclusive", [legacy_only]) == []
    both = res(
        MDC, "b", spec(config={"PriorityType": "priority/multifactor"}, accounting={"enforce": ["limits"]})
    )
    levels_ok(pack, "mdc-slurm-config-exclusive", [both])
    assert the(pack, "mdc-slurm-config-exclusive", [both]).startswith(
        "Model Development Cluster 'train' sets orchestrator_spec.slurm_spec.config together with the legacy "
        "accounting; a cluster uses one or the other and a request setting both is refused (Model Development Cluster docs)."
    )


def test_node_images_pinned(pack):
    s = spec()
    s["node_pools"] = [pool("cpu", None), pool("login")]
    r = res(MDC, "train", s)
    levels_ok(pack, "mdc-node-images-pinned", [r])
    assert the(pack, "mdc-node-images-pinned", [r]).startswith(
        "Model Development Cluster 'train' node pools cpu set no node_image. node_pools is replaced whole on every "
        "update, and a pool without node_image moves to the machine type's current default image (Model Development Cluster docs)"
    )
    s["node_pools"][0]["node_image"] = UNKNOWN_STRING
    (v,) = pack.findings("mdc-node-images-pinned", [res(MDC, "train", s)])
    assert v.enforcement_level == "advisory"
    assert "node_pools[0].node_image are unknown until apply" in v.message


def test_deletion_policy(pack):
    for allowed in ("PREVENT", "ABANDON"):
        assert (
            pack.findings("mdc-deletion-policy", [res(MDC, "t", spec() | {"deletion_policy": allowed})]) == []
        )
    default = copy.deepcopy(spec())
    del default["deletion_policy"]
    r = res(MDC, "train", default)
    # dev's config allows DELETE (throwaway clusters); staging and prod report it at their level
    assert pack.findings("mdc-deletion-policy", [r], "dev") == []
    for env in ("staging", "prod"):
        found = pack.findings("mdc-deletion-policy", [r], env)
        assert [v.enforcement_level for v in found] == [EXPECTED["mdc-deletion-policy"][ENVS.index(env)]]
    assert the(pack, "mdc-deletion-policy", [r]).startswith(
        "Model Development Cluster 'train' has deletion_policy DELETE (the default); allowed here: PREVENT, "
        "ABANDON. Deleting the cluster removes it and its resources for good (Model Development Cluster docs)"
    )
