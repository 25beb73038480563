"""Rules of a GKE cluster created or adopted (`GkeCluster`), its node pools and the mode it runs in.

`GkeClusterRules` holds every key a stack file's gkeClusters target has too; `GkeClusterSpec` adds what only
a program passes (the resolved Google API settings, the mode of the last deployment).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ml_diagnostics import compat
from ml_diagnostics.lifecycle import DeletionPolicy
from ml_diagnostics.rules import names
from ml_diagnostics.rules.base import (
    Input,
    MapKey,
    Path,
    Spec,
    check,
    checked,
    enum_of,
    key,
    phrase,
    raise_issues,
)
from ml_diagnostics.rules.google_api import GoogleApiSpec
from ml_diagnostics.rules.in_cluster import InClusterSpec, MlDiagnosticsMode, Mode

# Cloud TPU machine types on GKE: ct4p-, ct5lp-, ct5p-, ct6e-, tpu7x-...
_TPU_MACHINE = re.compile(r"(ct\d+[a-z]*|tpu\d+[a-z]*)-[a-z0-9-]+", re.ASCII)
# Machine types with built-in GPUs (A2, A3, A4, G2, G4).
_GPU_MACHINE = re.compile(r"(a2|a3|a4|a4x|g2|g4)-[a-z0-9-]+")
_TOPOLOGY = re.compile(r"\d+x\d+(x\d+)?", re.ASCII)
# GKE: at most 1,000 nodes per node pool per zone.
MAX_POOL_NODES = 1000
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
RESERVED_LABEL_PREFIXES = ("cloud.google.com/", "kubernetes.io/", "k8s.io/")

# Keys that only a created cluster takes.
CREATE_ONLY = (
    "release_channel",
    "min_master_version",
    "network",
    "subnetwork",
    "node_pools",
    "workload_identity",
    "deletion_protection",
    "deletion_policy",
)
if TYPE_CHECKING:
    DeletionPolicyField = DeletionPolicy
else:
    DeletionPolicyField = enum_of(DeletionPolicy)  # also "DELETE", "ABANDON", "PREVENT"
CREATED_HERE = phrase(stack="the program creates", args="the component creates")


class GkeTaintSpec(Spec):
    """A Kubernetes taint of the pool's nodes."""

    key: str
    """Taint key."""
    value: str = ""
    """Taint value."""
    effect: Literal["NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"]
    """NO_SCHEDULE, PREFER_NO_SCHEDULE or NO_EXECUTE."""


class GkeGuestAcceleratorSpec(Spec):
    """GPUs attached to each node (N1 machine types, or to size the GPUs of A2/A3/G2 types)."""

    type: Annotated[str, checked(names.gcp_name_problem)]
    """e.g. nvidia-l4, nvidia-tesla-a100, nvidia-h100-80gb"""
    count: int = Field(ge=1, le=16)
    """GPUs per node (1-16, the most any machine type takes)."""
    gpu_driver_version: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = "DEFAULT"
    """DEFAULT, LATEST or INSTALLATION_DISABLED."""


class GkeAutoscalingSpec(Spec):
    """Autoscaling bounds of a pool, per zone."""

    min_node_count: int = Field(default=0, le=MAX_POOL_NODES)
    """Fewest nodes per zone."""
    max_node_count: int = Field(le=MAX_POOL_NODES)
    """Most nodes per zone."""

    @model_validator(mode="after")
    def _check(self) -> GkeAutoscalingSpec:
        problems: list[tuple[Path, str]] = []
        if self.min_node_count < 0:
            problems.append((("min_node_count",), "must be 0 or more"))
        if self.max_node_count < max(1, self.min_node_count):
            problems.append((("max_node_count",), f"must be at least 1 and at least {key('min_node_count')}"))
        raise_issues(problems)
        return self


class GkeNodePoolSpec(Spec):
    """A node pool of a cluster created here."""

    name: Annotated[str, checked(names.short_name_problem)]
    """Pool name (part of the child resource's name)."""
    machine_type: Annotated[str, checked(names.gcp_machine_type_problem)]
    """Compute Engine machine type, e.g. ct5lp-hightpu-4t or a3-highgpu-8g."""
    node_count: int | None = Field(default=None, le=MAX_POOL_NODES)
    """Fixed size per zone; or `autoscaling`. Neither: 1 node per zone."""
    autoscaling: GkeAutoscalingSpec | None = None
    """Autoscaling bounds per zone."""
    node_locations: list[str] = []
    """Zones of the pool (default: the cluster's)."""
    spot: bool = False
    """Spot VMs."""
    disk_size_gb: int | None = Field(default=None, le=65536)
    """Boot disk size."""
    disk_type: Annotated[str | None, checked(names.gcp_name_problem)] = None
    """Boot disk type."""
    service_account: Annotated[str | None, checked(names.gcp_service_account_problem)] = None
    """The nodes' Google service account."""
    labels: dict[str, str] = {}
    """Kubernetes labels of the nodes."""
    taints: list[GkeTaintSpec] = []
    """Kubernetes taints of the nodes."""
    guest_accelerator: GkeGuestAcceleratorSpec | None = None
    """GPUs per node."""
    tpu_topology: str | None = None
    """Multi-host TPU slice shape, e.g. 2x4 (TPU machine types only): COMPACT placement with this topology."""

    @field_validator("node_locations")
    @classmethod
    def _zones(cls, v: list[str]) -> list[str]:
        raise_issues([((i,), p) for i, z in enumerate(v) if (p := names.gcp_zone_problem(z))])
        return v

    @property
    def accelerator(self) -> Literal["tpu", "gpu"] | None:
        if _TPU_MACHINE.fullmatch(self.machine_type):
            return "tpu"
        if self.guest_accelerator is not None or _GPU_MACHINE.fullmatch(self.machine_type):
            return "gpu"
        return None

    @model_validator(mode="after")
    def _check(self) -> GkeNodePoolSpec:
        problems: list[tuple[Path, str]] = []
        if self.node_count is not None and self.autoscaling is not None:
            problems.append((("node_count",), f"give {key('node_count')} or {key('autoscaling')}, not both"))
        if self.node_count is not None and self.node_count < 0:
            problems.append((("node_count",), "must be 0 or more"))
        if self.disk_size_gb is not None and self.disk_size_gb < 10:
            problems.append((("disk_size_gb",), "must be at least 10"))
        problems += names.k8s_labels_problems(self.labels, ("labels",))
        for k in self.labels:
            if k.startswith(RESERVED_LABEL_PREFIXES):
                problems.append(
                    (("labels", MapKey(k)), "is reserved (set by GKE or Kubernetes); use your own prefix")
                )
        for i, t in enumerate(self.taints):
            if p := names.label_key_problem(t.key) or names.label_value_problem(t.value):
                problems.append((("taints", i), p))
        if self.tpu_topology is not None:
            if self.accelerator != "tpu":
                problems.append(
                    (
                        ("tpu_topology",),
                        f"only for TPU machine types (ct5lp-..., ct6e-...), not {self.machine_type!r}",
                    )
                )
            elif not _TOPOLOGY.fullmatch(self.tpu_topology):
                problems.append((("tpu_topology",), "must look like 2x4 or 4x4x4"))
        if self.guest_accelerator is not None and _TPU_MACHINE.fullmatch(self.machine_type):
            problems.append(
                (("guest_accelerator",), f"TPU machine types take no GPUs; remove {key('guest_accelerator')}")
            )
        raise_issues(problems)
        return self


class GkeClusterRules(InClusterSpec):
    """A GKE cluster created here (`create: true`) or adopted, and ML Diagnostics in it: every key a stack
    file's target has too."""

    project: Annotated[str, checked(names.gcp_project_problem)]
    """The cluster's project."""
    location: Annotated[str, checked(names.gcp_location_problem)]
    """Region (regional cluster) or zone (zonal cluster)."""
    cluster_name: str | None
    """The GKE cluster's name."""
    mode: Mode = MlDiagnosticsMode.AUTO
    """managed (GKE >= 1.35.0-gke.3065000), manual (cert-manager + webhook + operator), auto (by version)."""
    create: bool = False
    """True: create and own the cluster. False: adopt an existing one."""
    current_version: str | None = None
    """Adopted clusters: the cluster's current master version (declared; it decides the mode)."""
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED", "UNSPECIFIED"] | None = None
    """Created clusters: the release channel (unset: GKE's default)."""
    min_master_version: str | None = None
    """Created clusters: minimum master version, e.g. 1.35.1-gke.1396000 (decides `auto`)."""
    network: Annotated[str | None, checked(names.gcp_network_problem)] = None
    """Created clusters: VPC network (default network when unset)."""
    subnetwork: Annotated[str | None, checked(names.gcp_network_problem)] = None
    """Created clusters: subnetwork."""
    workload_identity: bool = True
    """Created clusters: Workload Identity (PROJECT.svc.id.goog)."""
    deletion_protection: bool = True
    """Created clusters: GKE's own guard against deletion (refuses `pulumi destroy` of the cluster)."""
    node_pools: list[GkeNodePoolSpec] = []
    """Created clusters: node pools (the default pool is removed)."""
    deletion_policy: DeletionPolicyField | None = None
    """Created clusters: DELETE (default), ABANDON (retainOnDelete) or PREVENT (protect)."""

    @property
    def version(self) -> str | None:
        """The version the mode is decided by: min_master_version (created) or current_version (adopted)."""
        return self.min_master_version if self.create else self.current_version

    @property
    def resolved_mode(self) -> compat.ResolvedMode:
        return compat.resolve_mode(MlDiagnosticsMode(self.mode).value, self.version, self_managed=False)

    @property
    def workload_monitoring(self) -> bool:
        return compat.supports_workload_monitoring(self.version)

    # a validator, not `checked`: the stack file's model declares the field again (optional, its default the
    # target's name), and a field's own annotation is not inherited by a field declared again
    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, v: str | None) -> str | None:
        return v if v is None else check(names.short_name_problem, v)

    @field_validator("current_version", "min_master_version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None:
            compat.GkeVersion.parse(v)
        return v

    @model_validator(mode="after")
    def _cluster_check(self) -> GkeClusterRules:
        problems: list[tuple[Path, str]] = []
        version_key = "min_master_version" if self.create else "current_version"
        problems += self._created_problems() if self.create else self._adopted_problems()
        resolved = None
        # mode auto without a version is reported above (min_master_version / current_version required)
        if self.version is not None or self.mode != MlDiagnosticsMode.AUTO:
            try:
                resolved = self.resolved_mode
            except ValueError as e:
                problems.append((("mode",) if self.version is not None else (version_key,), str(e)))
        if resolved == "manual":
            problems += self.manual_install_problems()
        problems += self._diagon_problems()
        region = names.gcp_region_of(self.location)
        for i, pool in enumerate(self.node_pools):
            for j, zone in enumerate(pool.node_locations):
                if p := names.zone_in_region_problem(zone, region, f"the region of {key('location')}"):
                    problems.append((("node_pools", i, "node_locations", j), p))
        raise_issues(problems)
        return self

    def _created_problems(self) -> list[tuple[Path, str]]:
        problems: list[tuple[Path, str]] = []
        if self.current_version is not None:
            problems.append(
                (
                    ("current_version",),
                    f"only for adopted clusters ({key('create')}: false); a created cluster's version is "
                    f"{key('min_master_version')}",
                )
            )
        if not self.node_pools:
            problems.append(
                (
                    ("node_pools",),
                    "a created cluster needs at least one node pool (its default pool is removed)",
                )
            )
        seen: dict[str, int] = {}
        for i, pool in enumerate(self.node_pools):
            if pool.name in seen:
                problems.append(
                    (
                        ("node_pools", i, "name"),
                        f"duplicate node pool {pool.name!r} (also {key('node_pools')}[{seen[pool.name]}])",
                    )
                )
            seen.setdefault(pool.name, i)
        if self.mode == MlDiagnosticsMode.AUTO and self.min_master_version is None:
            problems.append(
                (
                    ("min_master_version",),
                    f"required with mode auto (the version decides: managed from {compat.MANAGED_MIN_VERSION}, "
                    "manual before); or set mode managed or manual",
                )
            )
        if self.diagon is not None and self.diagon.gcp_service_account and not self.workload_identity:
            problems.append((("diagon", "gcp_service_account"), f"needs {key('workload_identity')}: true"))
        return problems

    def _adopted_problems(self) -> list[tuple[Path, str]]:
        problems: list[tuple[Path, str]] = []
        given = self.set_keys()
        for field in CREATE_ONLY:
            if field in given:
                problems.append(((field,), f"only for clusters {CREATED_HERE} ({key('create')}: true)"))
        if self.current_version is None:
            problems.append(
                (
                    ("current_version",),
                    f"required for an adopted cluster ({key('create')}: false): its current GKE version, e.g. "
                    "1.35.1-gke.1396000 (it decides the mode and what the cluster supports)",
                )
            )
        return problems

    def _diagon_problems(self) -> list[tuple[Path, str]]:
        d = self.diagon_on
        if not (self.create and d is not None):
            return []
        pools = {p.name for p in self.node_pools}
        if d.node_selector is not None:
            pool = d.node_selector.get(NODE_POOL_LABEL)
            if pool is not None and pool not in pools:
                allowed = ", ".join(sorted(pools)) or "none"
                return [
                    (
                        ("diagon", "node_selector", MapKey(NODE_POOL_LABEL)),
                        f"no node pool {pool!r}; node pools: {allowed}",
                    )
                ]
            return []
        if d.node_labels(self_managed=False) and not any(p.accelerator for p in self.node_pools):
            return [
                (
                    ("diagon", "enabled"),
                    "Diagon runs on GPU/TPU nodes and the cluster has no accelerator node pool; add one "
                    f"(TPU machine type or {key('guest_accelerator')}) or set {key('diagon', 'node_selector')}",
                )
            ]
        return []


class GkeClusterSpec(GkeClusterRules):
    """A GKE cluster the component creates (`create: True`) or adopts, and ML Diagnostics in it."""

    cluster_name: str
    """The GKE cluster's name."""
    google_api: GoogleApiSpec | None = None
    """How the gcp provider, the auth plugin and the REST client call Google."""
    previous_mode: Input[str] | None = None
    """The mode the last deployment ran in (e.g. from a StackReference); a switch from manual to managed then
    takes two updates (the releases are deleted first, the flag goes on in the next)."""
