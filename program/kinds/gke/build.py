"""gkeClusters target -> `ml_diagnostics.GkeCluster`."""

from __future__ import annotations

from typing import Any

from ml_diagnostics import lifecycle
from ml_diagnostics.gke_cluster import GkeCluster, GkeClusterArgs
from ml_diagnostics.rules.gke import GkeClusterSpec
from program.clouds.google import GOOGLE
from program.in_cluster import in_cluster_args
from program.kinds.base import BuildContext
from program.kinds.gke.model import GkeClusterTarget, NodePool


def _pool(pool: NodePool) -> dict[str, Any]:
    out: dict[str, Any] = pool.model_dump(
        exclude_none=True, exclude={"autoscaling", "guest_accelerator", "taints"}
    )
    if pool.autoscaling is not None:
        out["autoscaling"] = pool.autoscaling.model_dump()
    if pool.guest_accelerator is not None:
        out["guest_accelerator"] = pool.guest_accelerator.model_dump()
    out["taints"] = [t.model_dump() for t in pool.taints]
    return out


def args(target: GkeClusterTarget, ctx: BuildContext) -> GkeClusterArgs:
    t = target
    out: dict[str, Any] = {
        **in_cluster_args(t),
        "project": t.project,
        "location": t.location,
        "cluster_name": t.gke_name,
        "mode": t.resolved_mode,
        "create": t.create,
        "google_api": ctx.settings_of(GOOGLE).for_target(t.google_api).to_args(),
    }
    if t.create:
        out.update(
            workload_identity=t.workload_identity,
            deletion_protection=t.deletion_protection,
            node_pools=[_pool(p) for p in t.node_pools],
            # Created clusters are expensive and stateful: protected in prod unless the config says otherwise.
            deletion_policy=lifecycle.effective_policy(t.deletion_policy, ctx.environment, expensive=True),
        )
        for key in ("min_master_version", "release_channel", "network", "subnetwork"):
            if getattr(t, key) is not None:
                out[key] = getattr(t, key)
    elif t.current_version is not None:
        out["current_version"] = t.current_version
    if t.resolved_mode == "managed":
        # What the last deployment exported for this target (under its old name after a rename): a switch
        # from manual takes two updates (ml_diagnostics.gke_cluster.managed_flag).
        previous = ctx.previous.output(f"gkeCluster:{t.previous_name or t.name}")
        out["previous_mode"] = previous.apply(lambda p: p.get("mode") if isinstance(p, dict) else None)
    return out  # type: ignore[return-value]


def build(target: GkeClusterTarget, ctx: BuildContext) -> Any:
    gke = ctx.component(GkeCluster, "gke", target, GkeClusterSpec.trusted(args(target, ctx)))
    ctx.pending_steps.append(gke.pending_step)
    return {
        "endpoint": gke.endpoint,
        "mode": gke.mode,
        "managedFlag": gke.managed_flag_on,
        "workloadMonitoring": gke.workload_monitoring,
    }
