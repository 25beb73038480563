"""Dynamic provider for a Vertex AI Model Development Cluster (Slurm), over the v1beta1 REST API.

Inputs are shaped like the Terraform beta resource `google_vertex_ai_model_development_cluster`
(snake_case, nested `machine_spec`, `scaling_spec`, `orchestrator_spec.slurm_spec`, ...) so that moving to a
native resource later is an alias. The REST body is the API's JSON (lowerCamelCase).

Update rules (from the vendor docs): PATCH always carries an explicit `updateMask` naming exactly the
changed fields (without one the service compares the whole payload and deletes what it omits);
repeated fields and maps are sent whole; `updateMode` comes from the input.

This module path is pickled into Pulumi state with the provider: do not move it. The provider instance
holds only plain settings; HTTP sessions are created inside each call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from components.providers.google_rest import (
    VERTEX,
    Clock,
    GoogleApiError,
    GoogleRestClient,
    OperationFailed,
)

API_VERSION = "v1beta1"
DEFAULT_OPERATION_TIMEOUT_MINUTES = 120
UPDATE_MODES = ("USER_AND_SERVICE", "USER_ONLY")
DELETION_POLICIES = ("DELETE", "ABANDON", "PREVENT")
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # pulumi.runtime.rpc.UNKNOWN (preview placeholder)

CLUSTER_ID_SLURM = re.compile(r"[a-z][a-z0-9]{0,9}")

# ---------------------------------------------------------------------------------------------------------
# Schema: which input keys exist, how they map to REST JSON. Leaves: STR/INT/BOOL/LIST (of scalars);
# MAP: string map whose keys are kept verbatim; OPAQUE: passed through unchanged (legacy scheduling/accounting).
STR, INT, BOOL, LIST, MAP, OPAQUE = "str", "int", "bool", "list", "map", "opaque"

NODE_POOL = {
    "id": STR,
    "machine_spec": {
        "machine_type": STR,
        "accelerator_type": STR,
        "accelerator_count": INT,
        "reservation_affinity": {"reservation_affinity_type": STR, "values": LIST},
    },
    "scaling_spec": {"min_node_count": INT, "max_node_count": INT},
    "zone": STR,
    "enable_public_ips": BOOL,
    "boot_disk": {"boot_disk_type": STR, "boot_disk_size_gb": INT},
    "node_image": STR,
    "provisioning_model": STR,
    "confidential_instance_config": {"confidential_instance_type": STR},
    "flex_start_max_duration": STR,
    "filestores": LIST,
    "lustres": LIST,
    "startup_script": STR,
    "labels": MAP,
}
SLURM_SPEC = {
    "home_directory_storage": STR,
    "partitions": [{"id": STR, "node_pool_ids": LIST, "config": MAP}],
    "login_node_pool_id": STR,
    "default_partition_id": STR,
    "config": MAP,
    "scheduling": OPAQUE,
    "accounting": OPAQUE,
    "node_sets": [{"node_pool_id": STR, "config": MAP}],
    "prolog_bash_scripts": LIST,
    "epilog_bash_scripts": LIST,
}
API_SCHEMA: dict[str, Any] = {
    "display_name": STR,
    "labels": MAP,
    "network": {"network": STR, "subnetwork": STR},
    "node_pools": [NODE_POOL],
    "orchestrator_spec": {"slurm_spec": SLURM_SPEC},
    "runtime_spec": {"service_account": STR},
}
# Inputs that never reach the API body.
LOCAL_KEYS = (
    "update_mode",
    "deletion_policy",
    "operation_timeout_minutes",
    "api_endpoint",
    "quota_project",
)
IDENTITY_KEYS = ("project", "region", "model_development_cluster_id")
OUTPUT_KEYS = ("name", "state", "create_time", "update_time")

# Updatable Slurm fields, in the order the mask lists them.
SLURM_MASK_FIELDS = (
    "partitions",
    "default_partition_id",
    "login_node_pool_id",
    "prolog_bash_scripts",
    "epilog_bash_scripts",
    "config",
    "scheduling",
    "accounting",
    "node_sets",
)
SLURM_PREFIX = "orchestrator_spec.slurm_spec."
CLEAR_AS_EMPTY_MAP = ("labels", SLURM_PREFIX + "config")
# Node pool fields the service fills in: an unset input never diffs against them.
NODE_POOL_SERVER_FILLED = ("boot_disk", "node_image", "provisioning_model", "flex_start_max_duration")
NODE_POOL_IMMUTABLE = ("machine_spec", "provisioning_model", "confidential_instance_config")


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _snake(key: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def _norm_scalar(v: Any, kind: str) -> Any:
    if v is None:
        return None
    if kind == INT:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str) and re.fullmatch(r"-?\d+", v):  # proto JSON may send int64 as string
            return int(v)
    return v


def _convert(value: Any, schema: Any, key_fn: Callable[[str], str], in_key_fn: Callable[[str], str]) -> Any:
    """Walks `value` along `schema`, renaming keys; drops unknown keys and None values."""
    if value is None:
        return None
    if isinstance(schema, list):
        if not isinstance(value, list):
            return value
        return [_convert(v, schema[0], key_fn, in_key_fn) for v in value]
    if isinstance(schema, dict):
        if not isinstance(value, Mapping):
            return value
        out = {}
        for name, sub in schema.items():
            src = value.get(in_key_fn(name))
            conv = _convert(src, sub, key_fn, in_key_fn)
            if conv is not None:
                out[key_fn(name)] = conv
        return out
    if schema == LIST:
        return list(value) if isinstance(value, (list, tuple)) else value
    if schema in (MAP, OPAQUE):
        return dict(value) if isinstance(value, Mapping) else value
    return _norm_scalar(value, schema)


def to_rest(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Input dict (snake_case) -> the API's JSON body (lowerCamelCase), API fields only."""
    return _convert(spec, API_SCHEMA, _camel, lambda k: k)


def from_rest(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """API JSON -> input-shaped dict (known fields only)."""
    return _convert(cluster, API_SCHEMA, lambda k: k, _camel)


def normalize(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs as the engine hands them (numbers as floats, Nones) -> canonical input dict."""
    out = _convert(spec, API_SCHEMA, lambda k: k, lambda k: k)
    for k in (*IDENTITY_KEYS, *LOCAL_KEYS):
        v = spec.get(k)
        if v is not None:
            out[k] = _norm_scalar(v, INT) if k == "operation_timeout_minutes" else v
    return out


def _slurm(spec: Mapping[str, Any]) -> dict[str, Any]:
    return (spec.get("orchestrator_spec") or {}).get("slurm_spec") or {}


def cluster_path(spec: Mapping[str, Any]) -> str:
    return (
        f"projects/{spec['project']}/locations/{spec['region']}/modelDevelopmentClusters/"
        f"{spec['model_development_cluster_id']}"
    )


# ---------------------------------------------------------------------------------------------------------
# Validation (shared with the stack config model, which reports camelCase key paths).


def validate_spec(
    spec: Mapping[str, Any], old: Mapping[str, Any] | None = None, *, camel: bool = False
) -> list[tuple[str, str]]:
    """Problems in a cluster spec as (path, message); `old` (previous inputs) enables update rules."""

    def p(*parts: str | int) -> str:
        out = ""
        for part in parts:
            if isinstance(part, int):
                out += f"[{part}]"
            else:
                name = _camel(part) if camel else part
                out += f".{name}" if out else name
        return out

    problems: list[tuple[str, str]] = []
    cid = spec.get("model_development_cluster_id")
    if isinstance(cid, str) and cid != UNKNOWN and not CLUSTER_ID_SLURM.fullmatch(cid):
        problems.append(
            (
                p("model_development_cluster_id"),
                f"{cid!r} is not allowed: 1-10 characters of lowercase letters and digits, starting with a "
                "letter (no '-': the cluster uses Slurm)",
            )
        )
    for key, allowed in (("update_mode", UPDATE_MODES), ("deletion_policy", DELETION_POLICIES)):
        v = spec.get(key)
        if v is not None and v not in allowed:
            problems.append((p(key), f"{v!r} is not allowed; allowed values: {', '.join(allowed)}"))
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
                    f"duplicate node pool id {pid!r} (also {p('node_pools', pool_ids[pid])})",
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
                (path, f"{what} {value!r} is not a node pool id; node pools: {', '.join(known) or 'none'}")
            )

    slurm = _slurm(spec)
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
                    f"duplicate partition id {pid!r} (also {p(*sp, 'partitions', part_ids[pid])})",
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
                f"partition {default!r} does not exist; partitions: {', '.join(sorted(part_ids)) or 'none'}",
            )
        )
    seen_sets: set[str] = set()
    for i, ns in enumerate(slurm.get("node_sets") or []):
        npid = ns.get("node_pool_id")
        ref(p(*sp, "node_sets", i, "node_pool_id"), npid, "node pool")
        if npid in seen_sets:
            problems.append(
                (p(*sp, "node_sets", i, "node_pool_id"), f"duplicate node set for node pool {npid!r}")
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
        old_default = _slurm(old).get("default_partition_id")
        if old_default and old_default not in part_ids:
            problems.append(
                (
                    p(*sp, "partitions"),
                    f"this change deletes or renames {old_default!r}, the current default partition, which the "
                    "service rejects; first change only defaultPartitionId to another partition, apply, then "
                    "remove or rename it",
                )
            )
    return problems


# ---------------------------------------------------------------------------------------------------------
# Diff


@dataclass
class UpdatePlan:
    changed: list[str] = field(default_factory=list)  # input paths that differ (for messages)
    replaces: list[str] = field(default_factory=list)  # top-level input keys forcing a replacement
    replace_reasons: list[str] = field(default_factory=list)
    mask: list[str] = field(default_factory=list)  # API update mask paths, in canonical order
    warnings: list[str] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return bool(self.changed or self.replaces)


def _empty(v: Any) -> bool:
    # proto3 JSON omits false, 0 and "": an absent field equals its zero value.
    return v is None or v == {} or v == [] or v == "" or v is False or (type(v) in (int, float) and v == 0)


def _same(a: Any, b: Any) -> bool:
    return (_empty(a) and _empty(b)) or a == b


def _unknown(v: Any) -> bool:
    if v == UNKNOWN:
        return True
    if isinstance(v, Mapping):
        return any(_unknown(x) for x in v.values())
    if isinstance(v, list):
        return any(_unknown(x) for x in v)
    return False


def _by_key(items: list[Mapping[str, Any]] | None, key: str) -> dict[Any, Mapping[str, Any]]:
    return {i.get(key): i for i in items or []}


def _pool_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(updatable fields that differ, immutable fields that differ) for one node pool."""
    upd, imm = [], []
    for name in NODE_POOL:
        if name == "id":
            continue
        o, n = old.get(name), new.get(name)
        if name in NODE_POOL_SERVER_FILLED:
            if n is None:
                continue
            if isinstance(n, Mapping):  # boot_disk: only the sub-fields the user set
                o = {k: (o or {}).get(k) for k in n}
        if _same(o, n):
            continue
        (imm if name in NODE_POOL_IMMUTABLE else upd).append(name)
    return upd, imm


def plan_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> UpdatePlan:
    """Compares our own inputs (old state vs new inputs) and says what changes and how.

    Both sides are normalized input dicts. Only keys of the input schema are looked at.
    """
    plan = UpdatePlan()

    def replace(key: str, why: str) -> None:
        plan.changed.append(why)
        plan.replace_reasons.append(why)
        if key not in plan.replaces:
            plan.replaces.append(key)

    def update(mask_path: str | None, why: str) -> None:
        plan.changed.append(why)
        if mask_path and mask_path not in plan.mask:
            plan.mask.append(mask_path)

    for key in IDENTITY_KEYS:
        if old.get(key) != new.get(key):
            replace(key, key)
    for key in LOCAL_KEYS:
        if not _same(old.get(key), new.get(key)):
            update(None, key)

    if not _same(old.get("display_name"), new.get("display_name")):
        update("display_name", "display_name")
    if not _same(old.get("labels"), new.get("labels")):
        update("labels", "labels")

    on, nn = old.get("network") or {}, new.get("network") or {}
    if not _same(on.get("network"), nn.get("network")) and nn.get("network") is not None:
        replace("network", "network.network")
    if nn.get("subnetwork") is not None and not _same(on.get("subnetwork"), nn.get("subnetwork")):
        replace("network", "network.subnetwork")
    osa = (old.get("runtime_spec") or {}).get("service_account")
    nsa = (new.get("runtime_spec") or {}).get("service_account")
    if nsa is not None and osa != nsa:
        replace("runtime_spec", "runtime_spec.service_account")

    old_pools, new_pools = _by_key(old.get("node_pools"), "id"), _by_key(new.get("node_pools"), "id")
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

    os_, ns = _slurm(old), _slurm(new)
    if not _same(os_.get("home_directory_storage"), ns.get("home_directory_storage")):
        replace("orchestrator_spec", "orchestrator_spec.slurm_spec.home_directory_storage")
    for f in SLURM_MASK_FIELDS:
        o, n = os_.get(f), ns.get(f)
        if f == "node_sets":  # one entry per node pool: order does not matter
            o, n = _by_key(o, "node_pool_id"), _by_key(n, "node_pool_id")
        if not _same(o, n):
            update(SLURM_PREFIX + f, SLURM_PREFIX + f)

    if plan.replaces:
        plan.mask = []
    else:
        order = ["display_name", "labels", "node_pools", *(SLURM_PREFIX + f for f in SLURM_MASK_FIELDS)]
        plan.mask.sort(key=order.index)
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
    if SLURM_PREFIX + "partitions" in mask and not _slurm(new).get("default_partition_id"):
        first_old = next(iter(_slurm(old).get("partitions") or []), {}).get("id")
        first_new = next(iter(_slurm(new).get("partitions") or []), {}).get("id")
        if first_old and first_new and first_old != first_new:
            out.append(
                f"default_partition_id is unset, so the default partition moves from {first_old!r} to "
                f"{first_new!r} (the first in the list); set default_partition_id to keep it"
            )
    return out


def _mask_body(spec: Mapping[str, Any], mask: list[str]) -> dict[str, Any]:
    """The REST body holding exactly the masked fields.

    A cleared field is left out (named in the mask, absent from the body: the service deletes it), except
    maps, which the docs say to clear by sending them empty.
    """
    full = to_rest(spec)
    body: dict[str, Any] = {}
    for path in mask:
        parts = [_camel(p) for p in path.split(".")]
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


# ---------------------------------------------------------------------------------------------------------
# Provider


class ModelDevelopmentClusterError(pulumi.RunError):
    """A failure the user must act on; the message says what happened and what to do."""


def _base_url(spec: Mapping[str, Any]) -> str:
    endpoint = spec.get("api_endpoint") or "https://{region}-aiplatform.googleapis.com"
    endpoint = endpoint.replace("{region}", str(spec["region"])).rstrip("/")
    if not re.search(r"/v1(beta1)?$", endpoint):
        endpoint += f"/{API_VERSION}"
    return endpoint


class ModelDevelopmentClusterProvider(ResourceProvider):
    """CRUD for `pulumi-python:dynamic/vertexai:ModelDevelopmentCluster`.

    `anonymous` and `clock` exist for tests against a loopback fake and the benchmark; production
    instances are built with no arguments. Nothing else lives on the instance (it is pickled into state).
    """

    def __init__(self, *, anonymous: bool = False, clock: Clock | None = None) -> None:
        super().__init__()
        self.anonymous = anonymous
        self.clock = clock

    # -- plumbing -----------------------------------------------------------------------------------------
    def _client(self, spec: Mapping[str, Any]) -> GoogleRestClient:
        return GoogleRestClient(
            _base_url(spec),
            quota_project=spec.get("quota_project") or None,
            anonymous=self.anonymous,
            custom_endpoint=bool(spec.get("api_endpoint")),
            clock=self.clock,
        )

    @staticmethod
    def _deadline(spec: Mapping[str, Any]) -> float:
        return 60.0 * float(spec.get("operation_timeout_minutes") or DEFAULT_OPERATION_TIMEOUT_MINUTES)

    @staticmethod
    def _outs(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> dict[str, Any]:
        status = cluster.get("clusterStatus") or {}
        return {
            **spec,
            "name": cluster.get("name", ""),
            "state": status.get("state", ""),
            "create_time": cluster.get("createTime", ""),
            "update_time": cluster.get("updateTime", ""),
        }

    # -- check / diff -------------------------------------------------------------------------------------
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        spec = normalize(news)
        old = normalize(_olds) if _olds and _olds.get("model_development_cluster_id") else None
        failures = [CheckFailure(path, msg) for path, msg in validate_spec(spec, old)]
        return CheckResult(dict(news), failures)

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        old, new = normalize(_olds), normalize(_news)
        plan = plan_update(old, new)
        same_id = old.get("model_development_cluster_id") == new.get("model_development_cluster_id")
        if _unknown(_news):
            # Some inputs are not known yet (preview): unknown values count as changed (a replace if immutable).
            return DiffResult(
                changes=True, replaces=plan.replaces, delete_before_replace=bool(plan.replaces) and same_id
            )
        if plan.replaces and (new.get("deletion_policy") or old.get("deletion_policy")) == "PREVENT":
            raise ModelDevelopmentClusterError(
                f"cluster {cluster_path(old)} would be replaced ({', '.join(plan.replace_reasons)} cannot change "
                "in place) but its deletion policy is PREVENT; revert the change, or set deletionPolicy to "
                "DELETE and run the update again to allow the replacement"
            )
        for w in plan.warnings:
            pulumi.log.warn(f"{cluster_path(new)}: {w}")
        return DiffResult(
            changes=plan.changes,
            replaces=plan.replaces,
            stables=[],
            # The new cluster has the same id: delete the old one first (else create gets ALREADY_EXISTS).
            delete_before_replace=bool(plan.replaces) and same_id,
        )

    # -- create -------------------------------------------------------------------------------------------
    def create(self, props: dict[str, Any]) -> CreateResult:
        spec = normalize(props)
        problems = validate_spec(spec)
        if problems:
            raise ModelDevelopmentClusterError("; ".join(f"{p}: {m}" for p, m in problems))
        path = cluster_path(spec)
        client = self._client(spec)
        parent, cid = path.rsplit("/", 1)
        url = f"{parent}?modelDevelopmentClusterId={quote(cid)}"
        body = to_rest(spec)
        deadline = self._deadline(spec)
        op: dict[str, Any] | None = None
        for attempt in range(3):
            try:
                op = client.request("POST", url, json=body, idempotent=False, resource=path)
                break
            except GoogleApiError as e:
                if e.http_status == 409:
                    return CreateResult(path, self._adopt(client, spec, path))
                if e.http_status not in (None, 429, 500, 502, 503) or attempt == 2:
                    raise ModelDevelopmentClusterError(f"creating cluster failed: {e}") from None
                # The create may have happened (no answer, or a 5xx after it was accepted): look before retrying.
                client.clock.sleep(client.request_backoff.delay(attempt, client.clock.random()))
                existing = self._get(client, path)
                if existing is not None:
                    return CreateResult(path, self._wait_for_cluster(client, spec, path, existing, deadline))
        assert op is not None
        try:
            done = client.wait_operation(op, deadline, style=VERTEX, resource=path)
        except OperationFailed as e:
            raise ModelDevelopmentClusterError(self._failed_create_message(client, path, e)) from None
        cluster = done.get("response") or {}
        if not cluster.get("name"):
            cluster = client.request("GET", path, resource=path)
        return CreateResult(path, self._outs(spec, cluster))

    def _get(self, client: GoogleRestClient, path: str) -> dict[str, Any] | None:
        try:
            return client.request("GET", path, resource=path)
        except GoogleApiError as e:
            if e.http_status == 404:
                return None
            raise

    def _wait_for_cluster(
        self,
        client: GoogleRestClient,
        spec: Mapping[str, Any],
        path: str,
        cluster: dict[str, Any],
        deadline: float,
    ) -> dict[str, Any]:
        """Waits for a cluster whose create we started but whose operation we do not know."""
        end = client.clock.monotonic() + deadline
        attempt = 0
        while (cluster.get("clusterStatus") or {}).get("state") == "PROVISIONING":
            if client.clock.monotonic() >= end:
                raise ModelDevelopmentClusterError(
                    f"cluster {path} is still provisioning after {deadline:.0f} s; run `pulumi refresh` later"
                )
            client.clock.sleep(client.poll_backoff.delay(attempt, client.clock.random()))
            attempt += 1
            cluster = client.request("GET", path, resource=path)
        status = cluster.get("clusterStatus") or {}
        if status.get("state") == "ERROR":
            raise ModelDevelopmentClusterError(
                self._error_state_message(path, cluster, f"creating cluster {path} failed")
            )
        return self._outs(spec, cluster)

    def _adopt(self, client: GoogleRestClient, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        cluster = client.request("GET", path, resource=path)
        existing = from_rest(cluster)
        local = {k: v for k, v in spec.items() if k not in API_SCHEMA}
        plan = plan_update({**local, **existing}, spec)
        state = (cluster.get("clusterStatus") or {}).get("state", "")
        if plan.changes:
            raise ModelDevelopmentClusterError(
                f"cluster {path} already exists (ALREADY_EXISTS) and differs from the inputs in: "
                f"{', '.join(plan.changed)}. It was left unchanged. Choose another modelDevelopmentClusterId, "
                "or make the inputs match it and run again to adopt it, or delete it first"
            )
        if state == "ERROR":
            raise ModelDevelopmentClusterError(
                self._error_state_message(
                    path,
                    cluster,
                    f"cluster {path} already exists (ALREADY_EXISTS) and matches the inputs, but cannot be adopted",
                )
            )
        return self._wait_for_cluster(client, spec, path, cluster, self._deadline(spec))

    @staticmethod
    def _error_state_message(path: str, cluster: Mapping[str, Any], what: str) -> str:
        status = cluster.get("clusterStatus") or {}
        err = status.get("error") or {}
        detail = (err.get("message") or status.get("detail") or "no detail given").rstrip(".")
        return (
            f"{what}; cluster {path} is in state {status.get('state')} ({detail}) and is not in the Pulumi "
            f"state: delete it (DELETE https://REGION-aiplatform.googleapis.com/{API_VERSION}/{path} or the "
            "console), fix the cause, then run `pulumi up` again"
        )

    def _failed_create_message(self, client: GoogleRestClient, path: str, err: OperationFailed) -> str:
        what = f"creating cluster {path} failed: {err.message.rstrip('.')}"
        try:
            cluster = self._get(client, path)
        except GoogleApiError as e:
            return f"{what}. Could not check whether the cluster was left behind ({e}); look for it before retrying"
        if cluster is None:
            return f"{what}. No cluster was left behind; fix the cause and run `pulumi up` again"
        return self._error_state_message(path, cluster, what)

    # -- read ---------------------------------------------------------------------------------------------
    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        spec = normalize(props)
        importing = not spec.get("model_development_cluster_id")
        if importing:  # derive the identity from the id
            m = re.fullmatch(r"projects/([^/]+)/locations/([^/]+)/modelDevelopmentClusters/([^/]+)", id_)
            if not m:
                raise ModelDevelopmentClusterError(
                    f"cannot import {id_!r}: expected projects/PROJECT/locations/REGION/modelDevelopmentClusters/ID"
                )
            spec.update(project=m[1], region=m[2], model_development_cluster_id=m[3])
        client = self._client(spec)
        cluster = self._get(client, id_)
        if cluster is None:
            return ReadResult(None, {})
        if importing:
            inputs = {**spec, **from_rest(cluster)}
            return ReadResult(id_, self._outs(inputs, cluster), inputs)
        return ReadResult(id_, self._outs(project_onto(spec, cluster), cluster))

    # -- update -------------------------------------------------------------------------------------------
    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> UpdateResult:
        old, new = normalize(_olds), normalize(_news)
        problems = validate_spec(new, old)
        if problems:
            raise ModelDevelopmentClusterError("; ".join(f"{p}: {m}" for p, m in problems))
        plan = plan_update(old, new)
        path = cluster_path(new)
        if not plan.mask:  # only local settings changed (deletion policy, timeout, ...): nothing to send
            return UpdateResult({**{k: _olds.get(k) for k in OUTPUT_KEYS}, **new})
        client = self._client(new)
        mode = new.get("update_mode") or "USER_AND_SERVICE"
        params = {"updateMask": ",".join(plan.mask), "updateMode": mode}
        # A PATCH with an explicit mask sets fixed values: repeating it is harmless, so it may be retried.
        op = client.request(
            "PATCH", path, json=_mask_body(new, plan.mask), params=params, idempotent=True, resource=path
        )
        try:
            done = client.wait_operation(op, self._deadline(new), style=VERTEX, resource=path)
        except OperationFailed as e:
            raise ModelDevelopmentClusterError(
                f"updating {', '.join(plan.mask)} failed: {e}. The cluster keeps its previous settings for "
                "the fields the service rejected; run `pulumi refresh` to see its state"
            ) from None
        cluster = done.get("response") or {}
        if not cluster.get("name"):
            cluster = client.request("GET", path, resource=path)
        return UpdateResult(self._outs(new, cluster))

    # -- delete -------------------------------------------------------------------------------------------
    def delete(self, id_: str, props: dict[str, Any]) -> None:
        spec = normalize(props)
        policy = spec.get("deletion_policy") or "DELETE"
        if policy == "ABANDON":
            pulumi.log.warn(f"cluster {id_}: deletion policy ABANDON: removed from the stack, left running")
            return
        if policy == "PREVENT":
            raise ModelDevelopmentClusterError(
                f"cluster {id_} has deletion policy PREVENT: refusing to delete it; set deletionPolicy to DELETE "
                "(or ABANDON to keep it running) and run `pulumi up` before destroying it"
            )
        client = self._client(spec)
        try:
            op = client.request("DELETE", id_, resource=id_)
        except GoogleApiError as e:
            if e.http_status == 404:
                return
            raise ModelDevelopmentClusterError(f"deleting failed: {e}") from None
        try:
            client.wait_operation(op, self._deadline(spec), style=VERTEX, resource=id_)
        except OperationFailed as e:
            if e.status == "NOT_FOUND":
                return
            raise ModelDevelopmentClusterError(f"deleting failed: {e}") from None


def project_onto(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster as the server reports it, in input shape, limited to what the inputs set.

    Used by refresh: drift in a field the user manages shows up in the next diff; fields the service
    fills in (and the user left unset) stay unset. Node pools the server has are all kept (by id).
    """
    server = from_rest(cluster)

    def limit(mine: Any, theirs: Any, schema: Any) -> Any:
        if isinstance(schema, dict) and isinstance(mine, Mapping) and isinstance(theirs, Mapping):
            return {k: limit(mine[k], theirs.get(k), schema[k]) for k in mine if k in schema}
        if isinstance(schema, list) and isinstance(theirs, list):
            key = "id" if "id" in schema[0] else "node_pool_id"
            mine_by = _by_key(mine if isinstance(mine, list) else [], key)
            return [limit(mine_by.get(t.get(key), t), t, schema[0]) for t in theirs]
        return theirs

    out = dict(spec)
    for k in API_SCHEMA:
        if k in spec:
            out[k] = limit(spec[k], server.get(k), API_SCHEMA[k])
    return out


class ModelDevelopmentCluster(pulumi.dynamic.Resource, module="vertexai", name="ModelDevelopmentCluster"):
    """`pulumi-python:dynamic/vertexai:ModelDevelopmentCluster`. Inputs: see the module docstring.

    Outputs add `name` (full resource name), `state`, `create_time`, `update_time`.
    """

    name: pulumi.Output[str]
    state: pulumi.Output[str]

    def __init__(
        self, resource_name: str, props: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(
            ModelDevelopmentClusterProvider(),
            resource_name,
            {**props, "name": None, "state": None, "create_time": None, "update_time": None},
            opts,
        )
