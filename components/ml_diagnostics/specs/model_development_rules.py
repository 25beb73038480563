"""Rules of a Model Development Cluster spec that a pydantic field type cannot express (references between
node pools, partitions and node sets; provisioning rules; the default-partition update rule).

Shared by the stack config model (camelCase key paths) and the provider's `check` (snake_case paths).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ml_diagnostics.compat import quote
from ml_diagnostics.specs.model_development import (
    CLUSTER_ID_SLURM,
    DELETION_POLICIES,
    UNKNOWN,
    UPDATE_MODES,
    slurm_of,
    to_camel,
)


def validate_spec(
    spec: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    *,
    camel: bool = False,
    mention: Callable[..., str] | None = None,
) -> list[tuple[str, str]]:
    """Problems in a cluster spec as (path, message); `old` (previous inputs) enables update rules.
    `mention(*parts)` writes a key path named inside a message (default: as the paths are written)."""

    def path(*parts: str | int) -> str:
        out = ""
        for part in parts:
            if isinstance(part, int):
                out += f"[{part}]"
            else:
                name = to_camel(part) if camel else part
                out += f".{name}" if out else name
        return out

    def p(*parts: str | int) -> str:
        return path(*parts)

    named = mention or path
    problems: list[tuple[str, str]] = []
    cid = spec.get("model_development_cluster_id")
    if isinstance(cid, str) and cid != UNKNOWN and not CLUSTER_ID_SLURM.fullmatch(cid):
        problems.append(
            (
                p("model_development_cluster_id"),
                f"{quote(cid)} is not allowed: 1-10 characters of lowercase letters and digits, starting with a "
                "letter (no '-': the cluster uses Slurm)",
            )
        )
    for key, allowed in (("update_mode", UPDATE_MODES), ("deletion_policy", DELETION_POLICIES)):
        v = spec.get(key)
        if v is not None and v not in allowed:
            problems.append((p(key), f"{quote(v)} is not allowed; allowed values: {', '.join(allowed)}"))
    timeout = spec.get("operation_timeout_minutes")
    if timeout is not None and not (isinstance(timeout, (int, float)) and 1 <= timeout <= 1440):
        problems.append((p("operation_timeout_minutes"), "must be a number of minutes from 1 to 1440"))

    pools = spec.get("node_pools") or []
    if not pools:
        problems.append(
            (p("node_pools"), "at least one node pool is required (a login pool and a compute pool)")
        )
    pool_ids: dict[str, int] = {}
    for i, pool in enumerate(pools):
        pid = pool.get("id")
        if not pid:
            problems.append((p("node_pools", i, "id"), "required"))
        elif pid in pool_ids:
            problems.append(
                (
                    p("node_pools", i, "id"),
                    f"duplicate node pool id {quote(pid)} (also {named('node_pools', pool_ids[pid])})",
                )
            )
        else:
            pool_ids[pid] = i
        scaling = pool.get("scaling_spec") or {}
        lo, hi = scaling.get("min_node_count"), scaling.get("max_node_count")
        if lo is not None and lo < 0:
            problems.append((p("node_pools", i, "scaling_spec", "min_node_count"), "must be >= 0"))
        if lo is not None and hi is not None and hi < lo:
            problems.append(
                (p("node_pools", i, "scaling_spec", "max_node_count"), f"must be >= minNodeCount ({lo})")
            )
        model = pool.get("provisioning_model")
        affinity = (pool.get("machine_spec") or {}).get("reservation_affinity")
        if model == "RESERVATION" and not affinity:
            problems.append(
                (
                    p("node_pools", i, "machine_spec", "reservation_affinity"),
                    "required when provisioningModel is RESERVATION",
                )
            )
        if model in ("ON_DEMAND", "SPOT", "FLEX_START") and affinity:
            problems.append(
                (
                    p("node_pools", i, "machine_spec", "reservation_affinity"),
                    f"not allowed with provisioningModel {model}; allowed only with RESERVATION",
                )
            )
    known = sorted(pool_ids)

    def ref(path: str, value: Any, what: str) -> None:
        if value is not None and value != UNKNOWN and value not in pool_ids:
            problems.append(
                (
                    path,
                    f"{what} {quote(value)} is not a node pool id; node pools: {', '.join(known) or 'none'}",
                )
            )

    slurm = slurm_of(spec)
    if not slurm:
        problems.append(
            (p("orchestrator_spec", "slurm_spec"), "required: the cluster is orchestrated by Slurm")
        )
        return problems
    sp = ("orchestrator_spec", "slurm_spec")
    if not slurm.get("home_directory_storage"):
        problems.append(
            (p(*sp, "home_directory_storage"), "required: the Filestore instance mounted as /home")
        )
    if not slurm.get("login_node_pool_id"):
        problems.append(
            (p(*sp, "login_node_pool_id"), f"required: one of the node pools ({', '.join(known)})")
        )
    ref(p(*sp, "login_node_pool_id"), slurm.get("login_node_pool_id"), "login node pool")

    part_ids: dict[str, int] = {}
    for i, part in enumerate(slurm.get("partitions") or []):
        pid = part.get("id")
        if not pid:
            problems.append((p(*sp, "partitions", i, "id"), "required"))
        elif pid in part_ids:
            problems.append(
                (
                    p(*sp, "partitions", i, "id"),
                    f"duplicate partition id {quote(pid)} (also {named(*sp, 'partitions', part_ids[pid])})",
                )
            )
        else:
            part_ids[pid] = i
        if not part.get("node_pool_ids"):
            problems.append(
                (p(*sp, "partitions", i, "node_pool_ids"), "at least one node pool id is required")
            )
        for j, npid in enumerate(part.get("node_pool_ids") or []):
            ref(p(*sp, "partitions", i, "node_pool_ids", j), npid, "node pool")
        if any(str(k).lower() == "default" for k in (part.get("config") or {})):
            problems.append(
                (
                    p(*sp, "partitions", i, "config"),
                    "'Default' is not allowed here; set defaultPartitionId instead",
                )
            )
    default = slurm.get("default_partition_id")
    if default is not None and default != UNKNOWN and default not in part_ids:
        problems.append(
            (
                p(*sp, "default_partition_id"),
                f"partition {quote(default)} does not exist; partitions: {', '.join(sorted(part_ids)) or 'none'}",
            )
        )
    seen_sets: set[str] = set()
    for i, ns in enumerate(slurm.get("node_sets") or []):
        npid = ns.get("node_pool_id")
        ref(p(*sp, "node_sets", i, "node_pool_id"), npid, "node pool")
        if npid in seen_sets:
            problems.append(
                (p(*sp, "node_sets", i, "node_pool_id"), f"duplicate node set for node pool {quote(npid)}")
            )
        seen_sets.add(npid)
    legacy = [k for k in ("scheduling", "accounting") if slurm.get(k)]
    if slurm.get("config") and legacy:
        problems.append(
            (
                p(*sp, "config"),
                f"cannot be set together with {' and '.join(legacy)}: the cluster uses either config or the "
                "legacy scheduling/accounting; move every setting into config (slurm.conf names) and remove "
                f"{' and '.join(legacy)}",
            )
        )

    if old:
        old_default = slurm_of(old).get("default_partition_id")
        if old_default and old_default not in part_ids:
            problems.append(
                (
                    p(*sp, "partitions"),
                    f"this change deletes or renames {quote(old_default)}, the current default partition, which the "
                    "service rejects; first change only defaultPartitionId to another partition, apply, then "
                    "remove or rename it",
                )
            )
    problems += _lustre_export_problems(spec, pools, p)
    return problems


_BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]", re.ASCII)


def _lustre_export_problems(spec: Mapping[str, Any], pools: list[Any], p: Any) -> list[tuple[str, str]]:
    """The lustreExportConfig rules of Google's API definition: a bucket name (no gs://), each day at most
    once, each instance attached to a node pool and named once."""
    cfg = spec.get("lustre_export_config")
    if not isinstance(cfg, Mapping):
        return []
    problems: list[tuple[str, str]] = []
    bucket = cfg.get("destination_bucket")
    if isinstance(bucket, str) and bucket != UNKNOWN:
        if bucket.startswith("gs://"):
            problems.append(
                (p("lustre_export_config", "destination_bucket"), "the bucket's name, without gs://")
            )
        elif not _BUCKET.fullmatch(bucket) or ".." in bucket:
            problems.append(
                (
                    p("lustre_export_config", "destination_bucket"),
                    f"{bucket[:80]!r} is not a Cloud Storage bucket name",
                )
            )
    days = [d for d in cfg.get("days_of_week") or [] if d != UNKNOWN]
    for d in sorted({d for d in days if days.count(d) > 1}):
        problems.append((p("lustre_export_config", "days_of_week"), f"{d} is given more than once"))
    attached = {x for pool in pools for x in (pool.get("lustres") or [])}
    seen: set[str] = set()
    for i, name in enumerate(cfg.get("lustres") or []):
        if name == UNKNOWN:
            continue
        if name in seen:
            problems.append((p("lustre_export_config", "lustres", i), f"{quote(name)} is named twice"))
        elif UNKNOWN not in attached and name not in attached:
            problems.append(
                (
                    p("lustre_export_config", "lustres", i),
                    f"{quote(name)} is attached to no node pool (nodePools[].lustres)",
                )
            )
        seen.add(name)
    return problems
