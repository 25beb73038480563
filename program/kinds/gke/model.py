"""Config of `gkeClusters` targets: GKE clusters the program creates (`create: true`) or adopts.

The in-cluster keys (workloadNamespaces, certManager, manualInstall, diagon) come from
`InClusterSettings` and sit flat on the target. Example:

    gkeClusters:
      - name: train
        create: true
        project: acme-ml-dev
        location: us-central1
        releaseChannel: RAPID
        minMasterVersion: 1.35.1-gke.1396000
        mode: auto                         # managed | manual | auto (by version)
        nodePools:
          - {name: system, machineType: e2-standard-4, nodeCount: 1}
          - name: tpu
            machineType: ct5lp-hightpu-4t
            tpuTopology: 2x4
            autoscaling: {minNodeCount: 0, maxNodeCount: 2}
            taints: [{key: google.com/tpu, value: present, effect: NO_SCHEDULE}]
      - name: legacy                       # adopted: the program does not own the cluster
        project: acme-ml-staging
        location: us-central1-a
        clusterName: legacy-train
        currentVersion: 1.35.1-gke.1396000
"""

from __future__ import annotations

from pydantic import model_validator

from ml_diagnostics.rules.gke import (
    CREATE_ONLY,
    NODE_POOL_LABEL,
    GkeClusterRules,
    GkeGuestAcceleratorSpec,
    GkeNodePoolSpec,
    GkeTaintSpec,
)
from program.clouds.google import TargetGoogleApi
from program.config_base import TargetBase
from program.in_cluster import InClusterSettings

__all__ = ["CREATE_ONLY", "NODE_POOL_LABEL", "GkeClusterTarget", "GuestAccelerator", "NodePool", "Taint"]

# The library's Specs under the names the program's modules use.
NodePool = GkeNodePoolSpec
Taint = GkeTaintSpec
GuestAccelerator = GkeGuestAcceleratorSpec


class GkeClusterTarget(TargetBase, InClusterSettings, GkeClusterRules):
    """A gkeClusters target: the library's GkeCluster keys and rules, with the stack file's own keys."""

    cluster_name: str | None = None
    """The GKE cluster's name; defaults to the target name."""
    google_api: TargetGoogleApi | None = None
    """Per-target Google credentials/retry settings (override the stack's googleApi keys)."""

    @property
    def gke_name(self) -> str:
        return self.cluster_name or self.name

    @model_validator(mode="after")
    def _rename_check(self) -> GkeClusterTarget:
        self.named_after_target("cluster_name", "the GKE cluster", "cluster")
        return self
