"""Config of `modelDevelopmentClusters` targets (Vertex AI Model Development Cluster, Slurm).

Shaped like the Terraform beta resource `google_vertex_ai_model_development_cluster` (camelCase here,
snake_case as dynamic resource inputs). Every rule of the provider's check runs here too, so a bad stack
file fails before any resource is registered, with the key path.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from components.config_base import Model, TargetBase, raise_issues
from components.providers.model_development_cluster import DEFAULT_OPERATION_TIMEOUT_MINUTES, validate_spec
from components.targets.google_api import TargetGoogleApi


def _shaped(pattern: str, shape: str) -> AfterValidator:
    def check(v: str) -> str:
        if not re.fullmatch(pattern, v):
            raise ValueError(f"must look like {shape}")
        return v

    return AfterValidator(check)


NetworkName = Annotated[
    str, _shaped(r"projects/[^/]+/global/networks/[^/]+", "projects/PROJECT/global/networks/NETWORK")
]
SubnetworkName = Annotated[
    str,
    _shaped(
        r"projects/[^/]+/regions/[^/]+/subnetworks/[^/]+",
        "projects/PROJECT/regions/REGION/subnetworks/SUBNET",
    ),
]
FilestoreName = Annotated[
    str,
    _shaped(
        r"projects/[^/]+/locations/[^/]+/instances/[^/]+", "projects/PROJECT/locations/ZONE/instances/NAME"
    ),
]
PoolId = Annotated[
    str, _shaped(r"[a-z][a-z0-9-]{0,62}", "1-63 lowercase letters, digits or '-', starting with a letter")
]
PartitionId = Annotated[
    str, _shaped(r"[a-z][a-z0-9]{0,29}", "1-30 lowercase letters or digits, starting with a letter")
]


class ReservationAffinity(Model):
    reservation_affinity_type: Literal["NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION"]
    values: list[str] = []


class MachineSpec(Model):
    machine_type: str
    accelerator_type: str | None = None
    accelerator_count: int | None = Field(default=None, ge=1)
    reservation_affinity: ReservationAffinity | None = None


class ScalingSpec(Model):
    min_node_count: int = Field(ge=0)
    max_node_count: int = Field(ge=0)


class BootDisk(Model):
    boot_disk_type: Literal["pd-ssd", "pd-standard", "hyperdisk-balanced"] | None = None
    boot_disk_size_gb: int | None = Field(default=None, ge=10, le=65536)


class ConfidentialInstanceConfig(Model):
    confidential_instance_type: Literal["SEV", "SEV_SNP", "TDX"]


class NodePool(Model):
    id: PoolId
    machine_spec: MachineSpec
    scaling_spec: ScalingSpec
    zone: str
    enable_public_ips: bool | None = None
    boot_disk: BootDisk | None = None
    node_image: str | None = None
    """Unset: the service picks the machine type's current default image (see updateMode)."""
    provisioning_model: Literal["ON_DEMAND", "RESERVATION", "SPOT", "FLEX_START"] | None = None
    confidential_instance_config: ConfidentialInstanceConfig | None = None
    flex_start_max_duration: str | None = None
    filestores: list[str] = []
    lustres: list[str] = []
    startup_script: str | None = None
    labels: dict[str, str] = {}


class Partition(Model):
    id: PartitionId
    node_pool_ids: list[str]
    config: dict[str, str] = {}


class NodeSet(Model):
    node_pool_id: str
    config: dict[str, str] = {}


class SlurmSpec(Model):
    home_directory_storage: FilestoreName
    partitions: list[Partition]
    login_node_pool_id: str
    default_partition_id: str | None = None
    """Partition jobs go to by default; must exist."""
    config: dict[str, str] = {}
    """Cluster-wide slurm.conf settings (slurm.conf names). Replaces the legacy scheduling/accounting."""
    scheduling: dict[str, Any] | None = None
    """Legacy; use `config` instead (not both)."""
    accounting: dict[str, Any] | None = None
    """Legacy; use `config` instead (not both)."""
    node_sets: list[NodeSet] = []
    """Per-node-pool slurm.conf settings."""
    prolog_bash_scripts: list[str] = []
    """Slurm prolog scripts (the list is replaced whole)."""
    epilog_bash_scripts: list[str] = []
    """Slurm epilog scripts (the list is replaced whole)."""


class OrchestratorSpec(Model):
    slurm_spec: SlurmSpec


class Network(Model):
    network: NetworkName
    subnetwork: SubnetworkName | None = None


class RuntimeSpec(Model):
    service_account: str


class ModelDevelopmentClusterTarget(TargetBase):
    project: str
    region: str
    model_development_cluster_id: str
    display_name: str | None = None
    """Display name (updated in place)."""
    labels: dict[str, str] = {}
    network: Network
    node_pools: list[NodePool]
    orchestrator_spec: OrchestratorSpec
    runtime_spec: RuntimeSpec | None = None
    update_mode: Literal["USER_AND_SERVICE", "USER_ONLY"] = "USER_AND_SERVICE"
    """USER_ONLY keeps unpinned node images and service-managed fields as they are."""
    deletion_policy: Literal["DELETE", "ABANDON", "PREVENT"] = "DELETE"
    """DELETE; ABANDON (leave the cluster); PREVENT (refuse to delete or replace)."""
    adopt: bool = False
    """Take over a cluster created with the REST API (curl): imported by its full resource name."""
    operation_timeout_minutes: int = Field(default=DEFAULT_OPERATION_TIMEOUT_MINUTES, ge=1, le=1440)
    """Deadline for each long-running operation."""
    google_api: TargetGoogleApi | None = None
    """Per-target Google credentials/retry settings (override the stack's googleApi keys)."""

    @model_validator(mode="after")
    def _rules(self) -> ModelDevelopmentClusterTarget:
        raise_issues(validate_spec(self.spec(), camel=True))
        return self

    def spec(self) -> dict[str, Any]:
        """The dynamic resource's inputs (snake_case, unset fields left out)."""
        return _strip_empty(
            self.model_dump(exclude={"name", "google_api", "previous_name", "adopt"}, exclude_none=True)
        )


def _strip_empty(v: Any) -> Any:
    """Drops empty lists and maps (unset = empty for the API) so the plan shows only what is set."""
    if isinstance(v, dict):
        return {k: _strip_empty(x) for k, x in v.items() if x != [] and x != {}}
    if isinstance(v, list):
        return [_strip_empty(x) for x in v]
    return v
