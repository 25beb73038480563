"""Rules of a Model Development Cluster spec that a pydantic field type cannot express (references between
node pools, partitions and node sets; provisioning rules; the default-partition update rule).

Shared by the library's Spec rules (`ml_diagnostics.rules.model_development`, after pydantic validated the
spec) and the provider's `check`, `create` and `update` (snake_case paths), which get the engine's inputs as
they are: the checks that repeat `ClusterSpec`'s own types and ranges (allowed values, required keys, ranges)
stay for them, since a program may register the dynamic resource with inputs no pydantic model has seen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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

Problems = list[tuple[str, str]]
_SLURM = ("orchestrator_spec", "slurm_spec")


def validate_spec(
    spec: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    *,
    camel: bool = False,
    mention: Callable[..., str] | None = None,
) -> Problems:
    """Problems in a cluster spec as (path, message); `old` (previous inputs) enables update rules.
    `mention(*parts)` writes a key path named inside a message (default: as the paths are written)."""
    paths = _Paths(camel, mention)
    pools = spec.get("node_pools") or []
    pool_ids = _PoolIds.of(pools)
    problems = _settings_problems(spec, paths) + _node_pool_problems(pools, pool_ids, paths)
    slurm = slurm_of(spec)
    if not slurm:
        return [*problems, (paths.at(*_SLURM), "required: the cluster is orchestrated by Slurm")]
    partition_ids = _first_ids(slurm.get("partitions") or [])
    return (
        problems
        + _slurm_reference_problems(slurm, pool_ids, paths)
        + _partition_problems(slurm, partition_ids, pool_ids, paths)
        + _node_set_problems(slurm, pool_ids, paths)
        + _legacy_config_problems(slurm, paths)
        + _update_problems(old, partition_ids, paths)
        + _lustre_export_problems(spec, pools, paths.at)
    )


@dataclass(frozen=True)
class _Paths:
    """How a problem's key path is written (snake_case, or camelCase with `camel`), and how a key path named
    inside a message is (`mention`, by default the same way)."""

    camel: bool = False
    mention: Callable[..., str] | None = None

    def at(self, *parts: str | int) -> str:
        out = ""
        for part in parts:
            if isinstance(part, int):
                out += f"[{part}]"
            else:
                name = to_camel(part) if self.camel else part
                out += f".{name}" if out else name
        return out

    def named(self, *parts: str | int) -> str:
        return (self.mention or self.at)(*parts)


def _first_ids(items: Sequence[Mapping[str, Any]]) -> dict[Any, int]:
    """Each id of these node pools or partitions, with the index of the first one that has it (entries
    without an id left out)."""
    first: dict[Any, int] = {}
    for i, item in enumerate(items):
        if item_id := item.get("id"):
            first.setdefault(item_id, i)
    return first


@dataclass(frozen=True)
class _PoolIds:
    """The node pools' ids, for the references to them."""

    first: dict[Any, int]
    known: list[Any]
    """The ids, sorted (as the messages list them)."""

    @classmethod
    def of(cls, pools: Sequence[Mapping[str, Any]]) -> _PoolIds:
        first = _first_ids(pools)
        return cls(first, sorted(first))

    def reference_problems(self, path: str, value: Any, what: str) -> Problems:
        """A set reference (`value`) that names no node pool (an unknown value is not checked)."""
        if value is not None and value != UNKNOWN and value not in self.first:
            return [
                (
                    path,
                    f"{what} {quote(value)} is not a node pool id; node pools: {', '.join(self.known) or 'none'}",
                )
            ]
        return []


def _settings_problems(spec: Mapping[str, Any], paths: _Paths) -> Problems:
    """The cluster id's Slurm form and the provider's own settings (update mode, deletion policy, timeout)."""
    problems: Problems = []
    cid = spec.get("model_development_cluster_id")
    if isinstance(cid, str) and cid != UNKNOWN and not CLUSTER_ID_SLURM.fullmatch(cid):
        problems.append(
            (
                paths.at("model_development_cluster_id"),
                f"{quote(cid)} is not allowed: 1-10 characters of lowercase letters and digits, starting with a "
                "letter (no '-': the cluster uses Slurm)",
            )
        )
    for key, allowed in (("update_mode", UPDATE_MODES), ("deletion_policy", DELETION_POLICIES)):
        v = spec.get(key)
        if v is not None and v not in allowed:
            problems.append(
                (paths.at(key), f"{quote(v)} is not allowed; allowed values: {', '.join(allowed)}")
            )
    timeout = spec.get("operation_timeout_minutes")
    if timeout is not None and not (isinstance(timeout, (int, float)) and 1 <= timeout <= 1440):
        problems.append((paths.at("operation_timeout_minutes"), "must be a number of minutes from 1 to 1440"))
    return problems


def _node_pool_problems(pools: Sequence[Mapping[str, Any]], pool_ids: _PoolIds, paths: _Paths) -> Problems:
    """At least one pool; each pool's id, scaling and provisioning, pool by pool."""
    problems: Problems = []
    if not pools:
        problems.append(
            (paths.at("node_pools"), "at least one node pool is required (a login pool and a compute pool)")
        )
    for i, pool in enumerate(pools):
        problems += _pool_id_problems(pool, i, pool_ids, paths)
        problems += _scaling_problems(pool, i, paths)
        problems += _reservation_problems(pool, i, paths)
    return problems


def _pool_id_problems(pool: Mapping[str, Any], i: int, pool_ids: _PoolIds, paths: _Paths) -> Problems:
    pid = pool.get("id")
    if not pid:
        return [(paths.at("node_pools", i, "id"), "required")]
    if (first := pool_ids.first[pid]) != i:
        return [
            (
                paths.at("node_pools", i, "id"),
                f"duplicate node pool id {quote(pid)} (also {paths.named('node_pools', first)})",
            )
        ]
    return []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _scaling_problems(pool: Mapping[str, Any], i: int, paths: _Paths) -> Problems:
    problems: Problems = []
    scaling = pool.get("scaling_spec") or {}
    lo, hi = scaling.get("min_node_count"), scaling.get("max_node_count")
    for key, value in (("min_node_count", lo), ("max_node_count", hi)):
        if value is not None and value != UNKNOWN and not _is_int(value):
            problems.append((paths.at("node_pools", i, "scaling_spec", key), "must be an integer"))
    # A count still unknown in a preview (or already refused above) is not compared.
    lo = lo if _is_int(lo) else None
    hi = hi if _is_int(hi) else None
    if lo is not None and lo < 0:
        problems.append((paths.at("node_pools", i, "scaling_spec", "min_node_count"), "must be >= 0"))
    if lo is not None and hi is not None and hi < lo:
        problems.append(
            (paths.at("node_pools", i, "scaling_spec", "max_node_count"), f"must be >= minNodeCount ({lo})")
        )
    return problems


def _reservation_problems(pool: Mapping[str, Any], i: int, paths: _Paths) -> Problems:
    """A reservation affinity exactly when the pool is provisioned from a reservation."""
    problems: Problems = []
    model = pool.get("provisioning_model")
    affinity = (pool.get("machine_spec") or {}).get("reservation_affinity")
    at = paths.at("node_pools", i, "machine_spec", "reservation_affinity")
    if model == "RESERVATION" and not affinity:
        problems.append((at, "required when provisioningModel is RESERVATION"))
    if model in ("ON_DEMAND", "SPOT", "FLEX_START") and affinity:
        problems.append((at, f"not allowed with provisioningModel {model}; allowed only with RESERVATION"))
    return problems


def _slurm_reference_problems(slurm: Mapping[str, Any], pool_ids: _PoolIds, paths: _Paths) -> Problems:
    """The home directory's storage, and the login node pool: set, and one of the node pools."""
    problems: Problems = []
    if not slurm.get("home_directory_storage"):
        problems.append(
            (paths.at(*_SLURM, "home_directory_storage"), "required: the Filestore instance mounted as /home")
        )
    login = slurm.get("login_node_pool_id")
    at = paths.at(*_SLURM, "login_node_pool_id")
    if not login:
        problems.append((at, f"required: one of the node pools ({', '.join(pool_ids.known)})"))
    return problems + pool_ids.reference_problems(at, login, "login node pool")


def _partition_problems(
    slurm: Mapping[str, Any], partition_ids: dict[Any, int], pool_ids: _PoolIds, paths: _Paths
) -> Problems:
    """Each partition (id, node pools, no 'Default' in its config), then the default partition."""
    problems: Problems = []
    for i, part in enumerate(slurm.get("partitions") or []):
        at = (*_SLURM, "partitions", i)
        pid = part.get("id")
        if not pid:
            problems.append((paths.at(*at, "id"), "required"))
        elif (first := partition_ids[pid]) != i:
            problems.append(
                (
                    paths.at(*at, "id"),
                    f"duplicate partition id {quote(pid)} (also {paths.named(*_SLURM, 'partitions', first)})",
                )
            )
        if not part.get("node_pool_ids"):
            problems.append((paths.at(*at, "node_pool_ids"), "at least one node pool id is required"))
        for j, npid in enumerate(part.get("node_pool_ids") or []):
            problems += pool_ids.reference_problems(paths.at(*at, "node_pool_ids", j), npid, "node pool")
        if any(str(k).lower() == "default" for k in (part.get("config") or {})):
            problems.append(
                (paths.at(*at, "config"), "'Default' is not allowed here; set defaultPartitionId instead")
            )
    default = slurm.get("default_partition_id")
    if default is not None and default != UNKNOWN and default not in partition_ids:
        problems.append(
            (
                paths.at(*_SLURM, "default_partition_id"),
                f"partition {quote(default)} does not exist; partitions: {', '.join(sorted(partition_ids)) or 'none'}",
            )
        )
    return problems


def _node_set_problems(slurm: Mapping[str, Any], pool_ids: _PoolIds, paths: _Paths) -> Problems:
    """Each node set names a node pool, and at most one node set names each."""
    problems: Problems = []
    seen: set[Any] = set()
    for i, ns in enumerate(slurm.get("node_sets") or []):
        npid = ns.get("node_pool_id")
        at = paths.at(*_SLURM, "node_sets", i, "node_pool_id")
        problems += pool_ids.reference_problems(at, npid, "node pool")
        if npid in seen:
            problems.append((at, f"duplicate node set for node pool {quote(npid)}"))
        seen.add(npid)
    return problems


def _legacy_config_problems(slurm: Mapping[str, Any], paths: _Paths) -> Problems:
    """`config` or the legacy scheduling/accounting, not both."""
    legacy = [k for k in ("scheduling", "accounting") if slurm.get(k)]
    if not (slurm.get("config") and legacy):
        return []
    return [
        (
            paths.at(*_SLURM, "config"),
            f"cannot be set together with {' and '.join(legacy)}: the cluster uses either config or the "
            "legacy scheduling/accounting; move every setting into config (slurm.conf names) and remove "
            f"{' and '.join(legacy)}",
        )
    ]


def _update_problems(old: Mapping[str, Any] | None, partition_ids: dict[Any, int], paths: _Paths) -> Problems:
    """An update keeps the current default partition (the service refuses to delete or rename it)."""
    if not old:
        return []
    old_default = slurm_of(old).get("default_partition_id")
    if not old_default or old_default in partition_ids:
        return []
    return [
        (
            paths.at(*_SLURM, "partitions"),
            f"this change deletes or renames {quote(old_default)}, the current default partition, which the "
            "service rejects; first change only defaultPartitionId to another partition, apply, then "
            "remove or rename it",
        )
    ]


_BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]", re.ASCII)


def _lustre_export_problems(
    spec: Mapping[str, Any], pools: Sequence[Mapping[str, Any]], p: Callable[..., str]
) -> Problems:
    """The lustreExportConfig rules of Google's API definition: a bucket name (no gs://), each day at most
    once, each instance attached to a node pool and named once."""
    cfg = spec.get("lustre_export_config")
    if not isinstance(cfg, Mapping):
        return []
    problems: Problems = []
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
