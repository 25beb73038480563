"""What an input change means for a Model Development Cluster: nothing, a PATCH (with which mask), or a
replacement.

The mask is built from `UPDATE_MASK_PATHS` (components/specs/model_development.py) only: a difference under one of those paths is sent with
that path in `updateMask`; a difference anywhere else in the API fields is immutable and replaces the
cluster. So no PATCH can name a field outside the list. Repeated fields and maps go whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ml_diagnostics.specs.model_development import (
    API_SCHEMA,
    CLEAR_AS_EMPTY_MAP,
    IDENTITY_KEYS,
    LOCAL_KEYS,
    NODE_POOL,
    NODE_POOL_IMMUTABLE,
    NODE_POOL_SERVER_FILLED,
    SLURM_PREFIX,
    UPDATE_MASK_PATHS,
    slurm_of,
    to_camel,
    to_rest,
)


@dataclass
class UpdatePlan:
    changed: list[str] = field(default_factory=list)  # input paths that differ (for messages)
    replaces: list[str] = field(default_factory=list)  # top-level input keys forcing a replacement
    replace_reasons: list[str] = field(default_factory=list)
    mask: list[str] = field(default_factory=list)  # update mask paths, in UPDATE_MASK_PATHS order
    warnings: list[str] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return bool(self.changed or self.replaces)


def _empty(v: Any) -> bool:
    # proto3 JSON omits false, 0 and "": an absent field equals its zero value.
    return v is None or v == {} or v == [] or v == "" or v is False or (type(v) in (int, float) and v == 0)


def same(a: Any, b: Any) -> bool:
    return (_empty(a) and _empty(b)) or a == b


def by_key(items: list[Mapping[str, Any]] | None, key: str) -> dict[Any, Mapping[str, Any]]:
    return {i.get(key): i for i in items or []}


def _pool_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(updatable fields that differ, immutable fields that differ) for one node pool."""
    upd: list[str] = []
    imm: list[str] = []
    for name in NODE_POOL:
        if name == "id":
            continue
        o, n = old.get(name), new.get(name)
        if name in NODE_POOL_SERVER_FILLED:
            if n is None:
                continue
            if isinstance(n, Mapping):  # boot_disk: only the sub-fields the user set
                o = {k: (o or {}).get(k) for k in n}
        if same(o, n):
            continue
        (imm if name in NODE_POOL_IMMUTABLE else upd).append(name)
    return upd, imm


def plan_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> UpdatePlan:
    """Compares our own inputs (old state vs new inputs) and says what changes and how.

    Both sides are normalized input dicts. Only identity, local and API schema keys are looked at.
    """
    plan = UpdatePlan()

    def replace(path: str, why: str) -> None:
        plan.changed.append(why)
        plan.replace_reasons.append(why)
        top = path.split(".")[0]
        if top not in plan.replaces:
            plan.replaces.append(top)

    def update(path: str, why: str) -> None:
        plan.changed.append(why)
        if path not in plan.mask:
            plan.mask.append(path)

    for key in IDENTITY_KEYS:
        if old.get(key) != new.get(key):
            replace(key, key)
    for key in LOCAL_KEYS:
        if not same(old.get(key), new.get(key)):
            plan.changed.append(key)

    def walk(path: str, schema: Any, o: Any, n: Any) -> None:
        if path in UPDATE_MASK_PATHS:
            if path == "node_pools":
                _node_pools(o, n)
            elif path == SLURM_PREFIX + "node_sets":  # one entry per node pool: order does not matter
                if not same(by_key(o, "node_pool_id"), by_key(n, "node_pool_id")):
                    update(path, path)
            elif not same(o, n):
                update(path, path)
        elif isinstance(schema, dict):  # a block holding updatable paths, or an immutable one
            for k, sub in schema.items():
                walk(f"{path}.{k}", sub, (o or {}).get(k), (n or {}).get(k))
        # Immutable leaf. Unset in the inputs: the service's value (maybe one it filled in) stays.
        elif n is not None and not same(o, n):
            replace(path, path)

    def _node_pools(o: Any, n: Any) -> None:
        old_pools, new_pools = by_key(o, "id"), by_key(n, "id")
        for pid in new_pools.keys() - old_pools.keys():
            update("node_pools", f"node_pools[{pid}] added")
        for pid in old_pools.keys() - new_pools.keys():
            update("node_pools", f"node_pools[{pid}] removed")
        for pid in [k for k in new_pools if k in old_pools]:
            upd, imm = _pool_differences(old_pools[pid], new_pools[pid])
            for f in imm:
                replace("node_pools", f"node_pools[{pid}].{f}")
            for f in upd:
                update("node_pools", f"node_pools[{pid}].{f}")

    for key, sub in API_SCHEMA.items():
        walk(key, sub, old.get(key), new.get(key))

    if plan.replaces:
        plan.mask = []
    else:
        plan.mask.sort(key=UPDATE_MASK_PATHS.index)
        plan.warnings += _update_warnings(old, new, plan.mask)
    return plan


def _update_warnings(old: Mapping[str, Any], new: Mapping[str, Any], mask: list[str]) -> list[str]:
    out = []
    mode = new.get("update_mode") or "USER_AND_SERVICE"
    unpinned = [p["id"] for p in new.get("node_pools") or [] if not p.get("node_image")]
    if "node_pools" in mask and mode != "USER_ONLY" and unpinned:
        out.append(
            f"node pools {', '.join(unpinned)} have no node_image: this {mode} update resends node_pools, "
            "which moves them to the current default image of their machine type (nodes may be recreated); "
            "pin node_image, or set update_mode USER_ONLY to keep the images they run today"
        )
    if SLURM_PREFIX + "partitions" in mask and not slurm_of(new).get("default_partition_id"):
        empty: dict[str, Any] = {}
        first_old = next(iter(slurm_of(old).get("partitions") or []), empty).get("id")
        first_new = next(iter(slurm_of(new).get("partitions") or []), empty).get("id")
        if first_old and first_new and first_old != first_new:
            out.append(
                f"default_partition_id is unset, so the default partition moves from {first_old!r} to "
                f"{first_new!r} (the first in the list); set default_partition_id to keep it"
            )
    return out


def mask_body(spec: Mapping[str, Any], mask: list[str]) -> dict[str, Any]:
    """The REST body holding exactly the masked fields.

    A cleared field is left out (named in the mask, absent from the body: the service deletes it), except
    maps, which the docs say to clear by sending them empty.
    """
    outside = [p for p in mask if p not in UPDATE_MASK_PATHS]
    if outside:  # cannot happen through plan_update; a guard for any other caller
        raise ValueError(f"update mask names fields the API cannot update: {', '.join(outside)}")
    full = to_rest(spec)
    body: dict[str, Any] = {}
    for path in mask:
        parts = [to_camel(p) for p in path.split(".")]
        src: Any = full
        for part in parts:
            src = src.get(part) if isinstance(src, Mapping) else None
        if src is None:
            if path not in CLEAR_AS_EMPTY_MAP:
                continue
            src = {}
        dst = body
        for part in parts[:-1]:
            dst = dst.setdefault(part, {})
        dst[parts[-1]] = src
    return body
