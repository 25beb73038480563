"""A GKE node pool's arguments from its Args: size and placement (autoscaled or a fixed count, compact
placement for a TPU topology), auto-repair and upgrade, and its nodes (machine, scopes, labels, taints, spot,
disks, the accelerator with its driver, Workload Identity's metadata server).
"""

from __future__ import annotations

from typing import Any

from ml_diagnostics.args import GkeNodePoolArgs

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def _node_config(pool: GkeNodePoolArgs, workload_identity: bool) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "machine_type": pool["machine_type"],
        "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
        "labels": dict(pool.get("labels") or {}),
        "taints": [
            {"key": t["key"], "value": t.get("value", ""), "effect": t["effect"]}
            for t in pool.get("taints") or []
        ],
        "spot": pool.get("spot", False),
    }
    if workload_identity:
        cfg["workload_metadata_config"] = {"mode": "GKE_METADATA"}
    for key in ("disk_size_gb", "disk_type", "service_account"):
        if pool.get(key) is not None:
            cfg[key] = pool[key]
    if (acc := pool.get("guest_accelerator")) is not None:
        cfg["guest_accelerators"] = [
            {
                "type": acc["type"],
                "count": acc["count"],
                "gpu_driver_installation_config": {
                    "gpu_driver_version": acc.get("gpu_driver_version", "DEFAULT")
                },
            }
        ]
    return cfg


def node_pool_args(pool: GkeNodePoolArgs, workload_identity: bool) -> dict[str, Any]:
    """A NodePool's size, placement and nodes: autoscaled or a fixed count, auto-repaired and upgraded."""
    scaling = pool.get("autoscaling")
    return {
        "node_count": None if scaling else pool.get("node_count", 1),
        "autoscaling": (
            {
                "min_node_count": scaling.get("min_node_count", 0),
                "max_node_count": scaling["max_node_count"],
            }
            if scaling
            else None
        ),
        "node_locations": pool.get("node_locations") or None,
        "management": {"auto_repair": True, "auto_upgrade": True},
        "placement_policy": (
            {"type": "COMPACT", "tpu_topology": pool["tpu_topology"]} if pool.get("tpu_topology") else None
        ),
        "node_config": _node_config(pool, workload_identity),
    }
