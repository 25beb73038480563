"""Vertex AI Model Development Cluster (Slurm) rules.

Source: Model Development Cluster docs: updates that delete or rename the default partition are refused; `config` replaces the
legacy `scheduling`/`accounting` and a request setting both is refused; node pools replaced without a
`node_image` move to the machine type's newest default image; delete removes the cluster for good.
Inputs are the dynamic resource's Terraform-shaped snake_case keys (components/providers/model_development_cluster.py).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import Severity

from ..common import MODEL_DEVELOPMENT, Report, Unknowns, resource_rule
from ..levels import ADVISORY, MANDATORY, with_options
from ..values import dig

MDC_TYPE = "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster"
SLURM = ("orchestrator_spec", "slurm_spec")


def _name(args: Any, props: dict) -> str:
    return f"Model Development Cluster '{props.get('model_development_cluster_id') or args.name}'"


def _known_list(value: Any, path: str, unknowns: Unknowns) -> list:
    if unknowns.hit(value, path) or not isinstance(value, list):
        return []
    return value


# --- mdc-node-pool-references --------------------------------------------------------------------


def _check_references(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    pools = _known_list(props.get("node_pools"), "node_pools", unknowns)
    if unknowns.paths:
        unknowns.finish()
    pool_ids = [p.get("id") for p in pools if isinstance(p, dict)]
    if any(unknowns.hit(pid, "node_pools[].id") for pid in pool_ids):
        unknowns.finish()
    slurm = dig(props, *SLURM)
    if unknowns.hit(slurm, "orchestrator_spec.slurm_spec") or not isinstance(slurm, dict):
        unknowns.finish()
        return
    problems = []

    def check(path: str, value: Any, what: str, known: list) -> None:
        if unknowns.hit(value, path) or value is None:
            return
        if value not in known:
            problems.append(
                f"{path} {value!r} is not a defined {what} (defined: {', '.join(map(str, known)) or 'none'})"
            )

    check(
        "orchestrator_spec.slurm_spec.login_node_pool_id",
        slurm.get("login_node_pool_id"),
        "node pool",
        pool_ids,
    )
    parts = _known_list(slurm.get("partitions"), "orchestrator_spec.slurm_spec.partitions", unknowns)
    part_ids = [p.get("id") for p in parts if isinstance(p, dict)]
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        where = f"orchestrator_spec.slurm_spec.partitions[{i}].node_pool_ids"
        for j, npid in enumerate(_known_list(part.get("node_pool_ids"), where, unknowns)):
            check(f"{where}[{j}]", npid, "node pool", pool_ids)
    for i, ns in enumerate(
        _known_list(slurm.get("node_sets"), "orchestrator_spec.slurm_spec.node_sets", unknowns)
    ):
        if isinstance(ns, dict):
            check(
                f"orchestrator_spec.slurm_spec.node_sets[{i}].node_pool_id",
                ns.get("node_pool_id"),
                "node pool",
                pool_ids,
            )
    if not [pid for pid in part_ids if unknowns.hit(pid, "orchestrator_spec.slurm_spec.partitions[].id")]:
        check(
            "orchestrator_spec.slurm_spec.default_partition_id",
            slurm.get("default_partition_id"),
            "partition",
            part_ids,
        )
    if problems:
        report(
            f"{_name(args, props)}: {'; '.join(problems)}. The API rejects references to node pools or partitions "
            "that the same request does not define, and an update that deletes or renames the default partition "
            "is refused (Model Development Cluster docs). Remediation: make every login pool, partition and node set reference a "
            "node_pools[].id, and default_partition_id a partitions[].id; when renaming the default partition, "
            "first point default_partition_id at a partition that stays."
        )


node_pool_references = resource_rule(
    "mdc-node-pool-references",
    (
        "A Model Development Cluster's default partition, login node pool, partition node pools and node sets "
        "reference pools and partitions that exist in the same spec (Model Development Cluster docs)."
    ),
    _check_references,
    applies={MDC_TYPE},
    about=MODEL_DEVELOPMENT.concern("configuration"),
    severity=Severity.HIGH,
    remediation="Reference only node pool ids and partition ids defined in the spec.",
    levels={"dev": MANDATORY},
)

# --- mdc-slurm-config-exclusive ------------------------------------------------------------------


def _check_config_exclusive(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    slurm = dig(props, *SLURM)
    if not unknowns.hit(slurm, "orchestrator_spec.slurm_spec") and isinstance(slurm, dict):
        slurm_conf = slurm.get("config")
        legacy = [k for k in ("scheduling", "accounting") if slurm.get(k)]
        if not unknowns.hit(slurm_conf, "orchestrator_spec.slurm_spec.config") and slurm_conf and legacy:
            report(
                f"{_name(args, props)} sets orchestrator_spec.slurm_spec.config together with the legacy "
                f"{' and '.join(legacy)}; a cluster uses one or the other and a request setting both is refused "
                "(Model Development Cluster docs). Remediation: move every setting into config under its slurm.conf name (e.g. "
                "AccountingStorageEnforce, PriorityWeightQOS) and remove scheduling/accounting; the provider then "
                "names all three in the updateMask so the old fields are cleared."
            )


slurm_config_exclusive = resource_rule(
    "mdc-slurm-config-exclusive",
    (
        "A Model Development Cluster's Slurm spec sets either `config` or the legacy `scheduling`/`accounting`, "
        "never both (Model Development Cluster docs: such a request is refused)."
    ),
    _check_config_exclusive,
    applies={MDC_TYPE},
    about=MODEL_DEVELOPMENT.concern("configuration"),
    severity=Severity.HIGH,
    remediation="Use config only; migrate scheduling/accounting into it.",
    levels={"dev": MANDATORY},
)

# --- mdc-node-images-pinned ----------------------------------------------------------------------


def _check_images(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    mode = props.get("update_mode")
    if unknowns.hit(mode, "update_mode") or mode == "USER_ONLY":
        # USER_ONLY updates that omit node_image keep the images the nodes run (the docs' update modes)
        unknowns.finish()
        return
    unpinned = []
    for i, pool in enumerate(_known_list(props.get("node_pools"), "node_pools", unknowns)):
        if not isinstance(pool, dict):
            continue
        image = pool.get("node_image")
        if not unknowns.hit(image, f"node_pools[{i}].node_image") and not image:
            unpinned.append(str(pool.get("id") or i))
    if unpinned:
        report(
            f"{_name(args, props)} node pools {', '.join(unpinned)} set no node_image. node_pools is replaced "
            "whole on every update, and a pool without node_image moves to the machine type's current default "
            "image (Model Development Cluster docs), so an unrelated change can re-image production nodes. Remediation: set "
            "node_image on every pool (read today's image from the cluster) and change it deliberately."
        )


node_images_pinned = resource_rule(
    "mdc-node-images-pinned",
    (
        "Every Model Development Cluster node pool pins node_image, so updates do not move pools to a newer "
        "default image (Model Development Cluster docs, node image selection)."
    ),
    _check_images,
    applies={MDC_TYPE},
    about=MODEL_DEVELOPMENT.concern("versions"),
    severity=Severity.MEDIUM,
    remediation="Set node_image on every node pool.",
    levels={"staging": ADVISORY, "prod": MANDATORY},
)

# --- mdc-deletion-policy -------------------------------------------------------------------------

DELETION_DEFAULTS = {
    "allowedDeletionPolicies": (
        {
            "type": "array",
            "items": {"type": "string", "enum": ["DELETE", "ABANDON", "PREVENT"]},
            "description": "Deletion policies allowed here (unset means DELETE).",
        },
        ["PREVENT", "ABANDON"],
    ),
}


def _check_deletion(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    policy = props.get("deletion_policy")
    if not unknowns.hit(policy, "deletion_policy"):
        effective = policy or "DELETE"
        if effective not in cfg["allowedDeletionPolicies"]:
            report(
                f"{_name(args, props)} has deletion_policy {effective}{'' if policy else ' (the default)'}; "
                f"allowed here: {', '.join(cfg['allowedDeletionPolicies'])}. Deleting the cluster removes it and "
                "its resources for good (Model Development Cluster docs), so a stack removal or a replacing change must not do it "
                "silently. Remediation: set deletion_policy PREVENT (refuse to delete) or ABANDON (keep the "
                "cluster, drop it from the stack)."
            )


deletion_policy = resource_rule(
    "mdc-deletion-policy",
    (
        "A Model Development Cluster's deletion_policy is one this environment allows (prod: PREVENT or "
        "ABANDON), since a delete is permanent (Model Development Cluster docs)."
    ),
    _check_deletion,
    applies={MDC_TYPE},
    about=MODEL_DEVELOPMENT.concern("lifecycle"),
    severity=Severity.HIGH,
    remediation="Set deletion_policy PREVENT or ABANDON.",
    defaults=DELETION_DEFAULTS,
    levels={
        "dev": with_options(ADVISORY, allowedDeletionPolicies=["DELETE", "ABANDON", "PREVENT"]),
        "staging": with_options(ADVISORY, allowedDeletionPolicies=["PREVENT", "ABANDON"]),
        "prod": with_options(MANDATORY, allowedDeletionPolicies=["PREVENT", "ABANDON"]),
    },
)
