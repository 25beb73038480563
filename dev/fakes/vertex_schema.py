"""The Model Development Cluster as the fake Vertex AI service takes it: the API's JSON shape (an unknown field
is 400 INVALID_ARGUMENT, like the real service), the fields an update mask may name, the rules a cluster is
refused by, and the defaults the service fills in.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from dev.fakes.google_api import ApiError

# The API's JSON shape (what the service accepts). "*" = free-form map or opaque message.
_STR = "s"
_POOL = {
    "id": _STR,
    "machineSpec": {
        "machineType": _STR,
        "acceleratorType": _STR,
        "acceleratorCount": _STR,
        "reservationAffinity": {"reservationAffinityType": _STR, "values": _STR},
    },
    "scalingSpec": {"minNodeCount": _STR, "maxNodeCount": _STR},
    "zone": _STR,
    "enablePublicIps": _STR,
    "bootDisk": {"bootDiskType": _STR, "bootDiskSizeGb": _STR},
    "nodeImage": _STR,
    "provisioningModel": _STR,
    "confidentialInstanceConfig": {"confidentialInstanceType": _STR},
    "flexStartMaxDuration": _STR,
    "filestores": _STR,
    "lustres": _STR,
    "startupScript": _STR,
    "labels": "*",
}
_SLURM = {
    "homeDirectoryStorage": _STR,
    "partitions": [{"id": _STR, "nodePoolIds": _STR, "config": "*"}],
    "loginNodePoolId": _STR,
    "defaultPartitionId": _STR,
    "config": "*",
    "scheduling": "*",
    "accounting": "*",
    "nodeSets": [{"nodePoolId": _STR, "config": "*"}],
    "prologBashScripts": _STR,
    "epilogBashScripts": _STR,
}
SCHEMA = {
    "name": _STR,
    "displayName": _STR,
    "labels": "*",
    "network": {"network": _STR, "subnetwork": _STR},
    "nodePools": [_POOL],
    "orchestratorSpec": {"slurmSpec": _SLURM},
    "runtimeSpec": {"serviceAccount": _STR},
    "lustreExportConfig": {
        "destinationBucket": _STR,
        "daysOfWeek": _STR,
        "lustres": _STR,
        "startTime": {"hours": _STR, "minutes": _STR},
    },
}
# The fields updateMask may name: the Model Development Cluster docs' list, and displayName and lustreExportConfig, mutable in
# Google's API definition (magic-modules). A test can make the fake refuse any of them (`refuse_mask`).
UPDATABLE = {
    "display_name": ("displayName",),
    "lustre_export_config": ("lustreExportConfig",),
    "labels": ("labels",),
    "node_pools": ("nodePools",),
    **{
        f"orchestrator_spec.slurm_spec.{f}": ("orchestratorSpec", "slurmSpec", c)
        for f, c in [
            ("partitions", "partitions"),
            ("default_partition_id", "defaultPartitionId"),
            ("login_node_pool_id", "loginNodePoolId"),
            ("prolog_bash_scripts", "prologBashScripts"),
            ("epilog_bash_scripts", "epilogBashScripts"),
            ("config", "config"),
            ("scheduling", "scheduling"),
            ("accounting", "accounting"),
            ("node_sets", "nodeSets"),
        ]
    },
}


def check_shape(value: Any, schema: Any, path: str) -> None:
    """400 for a value the API's JSON shape does not hold (an unknown field, a list or object expected)."""
    if schema == "*" or schema == _STR:
        return
    if isinstance(schema, list):
        if not isinstance(value, list):
            raise ApiError(400, "INVALID_ARGUMENT", f'Invalid value at "{path}": expected a list')
        for i, v in enumerate(value):
            check_shape(v, schema[0], f"{path}[{i}]")
        return
    if not isinstance(value, dict):
        raise ApiError(400, "INVALID_ARGUMENT", f'Invalid value at "{path}": expected an object')
    for k, v in value.items():
        if k not in schema:
            raise ApiError(
                400,
                "INVALID_ARGUMENT",
                f"Invalid JSON payload received. Unknown name \"{k}\" at '{path}': Cannot find field.",
            )
        check_shape(v, schema[k], f"{path}.{k}" if path else k)


def get_path(obj: dict[str, Any], parts: tuple[str, ...]) -> Any:
    for p in parts:
        if not isinstance(obj, dict) or p not in obj:
            return None
        obj = obj[p]
    return obj


def set_path(obj: dict[str, Any], parts: tuple[str, ...], value: Any) -> None:
    for p in parts[:-1]:
        obj = obj.setdefault(p, {})
    if value is None or value == {} or value == []:  # proto3: empty is absent
        obj.pop(parts[-1], None)
    else:
        obj[parts[-1]] = copy.deepcopy(value)


def snake(path: str) -> str:
    """An update mask path as UPDATABLE names it (`displayName` -> `display_name`)."""
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), path)


def validate_cluster(c: dict[str, Any], old: dict[str, Any] | None = None) -> None:
    """What the service refuses of a cluster, created or (with `old`) updated."""
    slurm = get_path(c, ("orchestratorSpec", "slurmSpec")) or {}
    if slurm.get("config") and (slurm.get("scheduling") or slurm.get("accounting")):
        raise ApiError(400, "INVALID_ARGUMENT", "config cannot be set together with scheduling or accounting")
    parts = [p.get("id") for p in slurm.get("partitions") or []]
    default = slurm.get("defaultPartitionId")
    if default and default not in parts:
        raise ApiError(400, "INVALID_ARGUMENT", f"default_partition_id {default!r} is not a partition")
    if old is not None:
        old_default = get_path(old, ("orchestratorSpec", "slurmSpec", "defaultPartitionId"))
        if old_default and old_default not in parts:
            raise ApiError(
                400,
                "FAILED_PRECONDITION",
                f"cannot delete or rename the default partition {old_default!r}",
            )
        old_pools = {p["id"]: p for p in old.get("nodePools") or []}
        for p in c.get("nodePools") or []:
            if p["id"] in old_pools and p.get("machineSpec") != old_pools[p["id"]].get("machineSpec"):
                raise ApiError(400, "INVALID_ARGUMENT", f"node_pools[{p['id']}].machine_spec is immutable")


def fill_defaults(name: str, c: dict[str, Any]) -> None:
    """What the service fills in that the request left out: network, service account, boot disks."""
    project, region = name.split("/")[1], name.split("/")[3]
    net = c.setdefault("network", {"network": f"projects/{project}/global/networks/default"})
    net.setdefault("subnetwork", f"projects/{project}/regions/{region}/subnetworks/default")
    c.setdefault("runtimeSpec", {"serviceAccount": f"{project}-compute@developer.gserviceaccount.com"})
    for p in c.get("nodePools") or []:
        disk = p.setdefault("bootDisk", {})
        disk.setdefault("bootDiskType", "pd-ssd")
        disk.setdefault("bootDiskSizeGb", 100)
        p.setdefault("provisioningModel", "ON_DEMAND")
