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

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ml_diagnostics import compat
from program import validators
from program.config_base import Model, TargetBase, raise_issues
from program.google_api import TargetGoogleApi
from program.in_cluster import InClusterSettings, manual_install_issues

# Cloud TPU machine types on GKE: ct4p-, ct5lp-, ct5p-, ct6e-, tpu7x-...
_TPU_MACHINE = re.compile(r"(ct\d+[a-z]*|tpu\d+[a-z]*)-[a-z0-9-]+", re.ASCII)
# Machine types with built-in GPUs (A2, A3, A4, G2, G4).
_GPU_MACHINE = re.compile(r"(a2|a3|a4|a4x|g2|g4)-[a-z0-9-]+")
_TOPOLOGY = re.compile(r"\d+x\d+(x\d+)?", re.ASCII)
# GKE: at most 1,000 nodes per node pool per zone.
MAX_POOL_NODES = 1000
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"

CREATE_ONLY = (
    "releaseChannel",
    "minMasterVersion",
    "network",
    "subnetwork",
    "nodePools",
    "workloadIdentity",
    "deletionProtection",
    "deletionPolicy",
)


class Taint(Model):
    key: str
    value: str = ""
    effect: Literal["NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"]


class GuestAccelerator(Model):
    """GPUs attached to each node (N1 machine types, or to size the GPUs of A2/A3/G2 types)."""

    type: str
    """e.g. nvidia-l4, nvidia-tesla-a100, nvidia-h100-80gb"""
    count: int = Field(ge=1, le=16)
    """GPUs per node (1-16, the most any machine type takes)."""
    gpu_driver_version: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = "DEFAULT"

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        return validators.check(validators.gcp_name_problem, v)


class Autoscaling(Model):
    min_node_count: int = Field(default=0, le=MAX_POOL_NODES)
    max_node_count: int = Field(le=MAX_POOL_NODES)

    @model_validator(mode="after")
    def _check(self) -> Autoscaling:
        problems = []
        if self.min_node_count < 0:
            problems.append(("minNodeCount", "must be 0 or more"))
        if self.max_node_count < max(1, self.min_node_count):
            problems.append(("maxNodeCount", "must be at least 1 and at least minNodeCount"))
        raise_issues(problems)
        return self


class NodePool(Model):
    name: str
    machine_type: str
    node_count: int | None = Field(default=None, le=MAX_POOL_NODES)
    """Fixed size per zone; or `autoscaling`. Neither: 1 node per zone."""
    autoscaling: Autoscaling | None = None
    node_locations: list[str] = []
    """Zones of the pool (default: the cluster's)."""
    spot: bool = False
    """Spot VMs."""
    disk_size_gb: int | None = Field(default=None, le=65536)
    disk_type: str | None = None
    service_account: str | None = None
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    guest_accelerator: GuestAccelerator | None = None
    tpu_topology: str | None = None
    """Multi-host TPU slice shape, e.g. 2x4 (TPU machine types only): COMPACT placement with this topology."""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return validators.check(validators.short_name_problem, v)

    @field_validator("machine_type")
    @classmethod
    def _machine_type(cls, v: str) -> str:
        return validators.check(validators.gcp_machine_type_problem, v)

    @field_validator("node_locations")
    @classmethod
    def _zones(cls, v: list[str]) -> list[str]:
        raise_issues([(f"[{i}]", p) for i, z in enumerate(v) if (p := validators.gcp_zone_problem(z))])
        return v

    @field_validator("disk_type")
    @classmethod
    def _disk_type(cls, v: str | None) -> str | None:
        return v if v is None else validators.check(validators.gcp_name_problem, v)

    @field_validator("service_account")
    @classmethod
    def _service_account(cls, v: str | None) -> str | None:
        return v if v is None else validators.check(validators.gcp_service_account_problem, v)

    @property
    def accelerator(self) -> Literal["tpu", "gpu"] | None:
        if _TPU_MACHINE.fullmatch(self.machine_type):
            return "tpu"
        if self.guest_accelerator is not None or _GPU_MACHINE.fullmatch(self.machine_type):
            return "gpu"
        return None

    @model_validator(mode="after")
    def _check(self) -> NodePool:
        problems = []
        if self.node_count is not None and self.autoscaling is not None:
            problems.append(("nodeCount", "give nodeCount or autoscaling, not both"))
        if self.node_count is not None and self.node_count < 0:
            problems.append(("nodeCount", "must be 0 or more"))
        if self.disk_size_gb is not None and self.disk_size_gb < 10:
            problems.append(("diskSizeGb", "must be at least 10"))
        problems += validators.k8s_labels_problems(self.labels, "labels")
        for k in self.labels:
            if k.startswith(("cloud.google.com/", "kubernetes.io/", "k8s.io/")):
                problems.append(
                    (f"labels.{k}", "is reserved (set by GKE or Kubernetes); use your own prefix")
                )
        for i, t in enumerate(self.taints):
            if p := validators.label_key_problem(t.key) or validators.label_value_problem(t.value):
                problems.append((f"taints[{i}]", p))
        if self.tpu_topology is not None:
            if self.accelerator != "tpu":
                problems.append(
                    (
                        "tpuTopology",
                        f"only for TPU machine types (ct5lp-..., ct6e-...), not {self.machine_type!r}",
                    )
                )
            elif not _TOPOLOGY.fullmatch(self.tpu_topology):
                problems.append(("tpuTopology", "must look like 2x4 or 4x4x4"))
        if self.guest_accelerator is not None and _TPU_MACHINE.fullmatch(self.machine_type):
            problems.append(("guestAccelerator", "TPU machine types take no GPUs; remove guestAccelerator"))
        raise_issues(problems)
        return self


class GkeClusterTarget(TargetBase, InClusterSettings):
    project: str
    location: str
    """region (regional cluster) or zone (zonal cluster)"""
    create: bool = False
    """True: the program creates and owns the cluster. False: it adopts an existing one."""
    cluster_name: str | None = None
    """The GKE cluster's name; defaults to the target name."""
    mode: Literal["managed", "manual", "auto"] = "auto"
    """managed (GKE >= 1.35.0-gke.3065000), manual (cert-manager + webhook + operator), auto (by version)."""
    current_version: str | None = None
    """Adopted clusters: the cluster's current master version (declared; it decides the mode)."""
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "UNSPECIFIED"] | None = None
    """Created clusters: the release channel (unset: GKE's default)."""
    min_master_version: str | None = None
    """Created clusters: minimum master version, e.g. 1.35.1-gke.1396000 (decides `auto`)."""
    network: str | None = None
    """Created clusters: VPC network (default network when unset)."""
    subnetwork: str | None = None
    """Created clusters: subnetwork."""
    workload_identity: bool = True
    """Created clusters: Workload Identity (PROJECT.svc.id.goog)."""
    deletion_protection: bool = True
    """Created clusters: refuse `pulumi destroy` of the cluster."""
    node_pools: list[NodePool] = []
    """Created clusters: node pools (the default pool is removed)."""
    google_api: TargetGoogleApi | None = None
    """Per-target Google credentials/retry settings (override the stack's googleApi keys)."""
    deletion_policy: Literal["DELETE", "ABANDON", "PREVENT"] | None = None
    """Created clusters: DELETE, ABANDON (retainOnDelete) or PREVENT (protect); unset: PREVENT in prod."""

    @property
    def gke_name(self) -> str:
        return self.cluster_name or self.name

    @property
    def version(self) -> str | None:
        """The version the mode is decided by: minMasterVersion (created) or currentVersion (adopted)."""
        return self.min_master_version if self.create else self.current_version

    @property
    def resolved_mode(self) -> compat.ResolvedMode:
        return compat.resolve_mode(self.mode, self.version, self_managed=False)

    @property
    def workload_monitoring(self) -> bool:
        return compat.supports_workload_monitoring(self.version)

    @model_validator(mode="after")
    def _target_check(self) -> GkeClusterTarget:
        problems: list[tuple[str, str]] = []
        if self.cluster_name is not None and (p := validators.short_name_problem(self.cluster_name)):
            problems.append(("clusterName", p))
        if p := validators.gcp_location_problem(self.location):
            problems.append(("location", p))
        if p := validators.gcp_project_problem(self.project):
            problems.append(("project", p))
        for key, value in (("network", self.network), ("subnetwork", self.subnetwork)):
            if value is not None and (p := validators.gcp_network_problem(value)):
                problems.append((key, p))
        version_key = "minMasterVersion" if self.create else "currentVersion"
        version_ok = True
        if self.version is not None:
            try:
                compat.GkeVersion.parse(self.version)
            except ValueError as e:
                problems.append((version_key, str(e)))
                version_ok = False

        if self.previous_name and self.cluster_name is None:
            problems.append(
                (
                    "clusterName",
                    f"required with previousName: the GKE cluster is named after the target; set clusterName: "
                    f"{self.previous_name} to keep the cluster it names",
                )
            )
        if self.create:
            problems += self._created_issues()
        else:
            problems += self._adopted_issues()

        resolved = None
        # mode auto without a version is reported above (minMasterVersion / currentVersion required)
        if version_ok and (self.version is not None or self.mode != "auto"):
            try:
                resolved = self.resolved_mode
            except ValueError as e:
                at = "mode" if self.version is not None else version_key
                problems.append((at, str(e)))
        if resolved == "manual":
            problems += manual_install_issues(self)
        problems += self._diagon_issues()
        raise_issues(problems)
        return self

    def _created_issues(self) -> list[tuple[str, str]]:
        problems = []
        if self.current_version is not None:
            problems.append(
                (
                    "currentVersion",
                    "only for adopted clusters (create: false); a created cluster's version is minMasterVersion",
                )
            )
        if not self.node_pools:
            problems.append(
                ("nodePools", "a created cluster needs at least one node pool (its default pool is removed)")
            )
        seen: dict[str, int] = {}
        for i, pool in enumerate(self.node_pools):
            if pool.name in seen:
                problems.append(
                    (
                        f"nodePools[{i}].name",
                        f"duplicate node pool {pool.name!r} (also nodePools[{seen[pool.name]}])",
                    )
                )
            seen.setdefault(pool.name, i)
        if self.mode == "auto" and self.min_master_version is None:
            problems.append(
                (
                    "minMasterVersion",
                    f"required with mode auto (the version decides: managed from {compat.MANAGED_MIN_VERSION}, "
                    "manual before); or set mode managed or manual",
                )
            )
        if self.diagon.gcp_service_account and not self.workload_identity:
            problems.append(("diagon.gcpServiceAccount", "needs workloadIdentity: true"))
        return problems

    def _adopted_issues(self) -> list[tuple[str, str]]:
        problems = []
        set_keys = {type(self).model_fields[n].alias or n for n in self.model_fields_set}
        for key in CREATE_ONLY:
            if key in set_keys:
                problems.append((key, "only for clusters the program creates (create: true)"))
        if self.current_version is None:
            problems.append(
                (
                    "currentVersion",
                    "required for an adopted cluster (create: false): its current GKE version, e.g. "
                    "1.35.1-gke.1396000 (it decides the mode and what the cluster supports)",
                )
            )
        return problems

    def _diagon_issues(self) -> list[tuple[str, str]]:
        if not (self.create and self.diagon.enabled):
            return []
        pools = {p.name for p in self.node_pools}
        selector = self.diagon.node_selector
        if selector is not None:
            pool = selector.get(NODE_POOL_LABEL)
            if pool is not None and pool not in pools:
                allowed = ", ".join(sorted(pools)) or "none"
                return [
                    (
                        f"diagon.nodeSelector.{NODE_POOL_LABEL}",
                        f"no node pool {pool!r}; node pools: {allowed}",
                    )
                ]
            return []
        if self.diagon.node_labels(self_managed=False) and not any(p.accelerator for p in self.node_pools):
            return [
                (
                    "diagon.enabled",
                    "Diagon runs on GPU/TPU nodes and the cluster has no accelerator node pool; add one "
                    "(TPU machine type or guestAccelerator) or set diagon.nodeSelector",
                )
            ]
        return []
