"""The one schema of a Vertex AI Model Development Cluster, shared by the stack config and the provider.

Pydantic models in snake_case (camelCase aliases, which are also the REST API's JSON names), shaped like
the Terraform beta resource `google_vertex_ai_model_development_cluster`. The config target model
inherits `ClusterSpec`; the dynamic provider walks a plain tree derived from the same models
(`API_SCHEMA`) to convert engine inputs to REST bodies and back. This module imports no config model and
no provider.

`UPDATE_MASK_PATHS` is the only list of fields an update may name: the Model Development Cluster docs', plus `display_name` and
`lustre_export_config`, which Google's API definition (magic-modules ModelDevelopmentCluster) leaves
mutable and the Terraform beta resource sends in `updateMask`. Every other API field is immutable: changing
it replaces the cluster.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pulumi.runtime.rpc import UNKNOWN
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel, to_snake

from ml_diagnostics.nested import holds
from ml_diagnostics.rules.base import Input

API_VERSION = "v1beta1"
DEFAULT_OPERATION_TIMEOUT_MINUTES = 120
UPDATE_MODES = ("USER_AND_SERVICE", "USER_ONLY")
DELETION_POLICIES = ("DELETE", "ABANDON", "PREVENT")
CLUSTER_ID_SLURM = re.compile(r"[a-z][a-z0-9]{0,9}")
__all__ = ["UNKNOWN", "to_camel", "to_snake"]

# The fields `updateMask` may name, in the order a mask lists them (the Model Development Cluster docs). Nothing else is ever sent.
SLURM_PREFIX = "orchestrator_spec.slurm_spec."
UPDATE_MASK_PATHS: tuple[str, ...] = (
    "display_name",
    "labels",
    "node_pools",
    *(
        SLURM_PREFIX + f
        for f in (
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
    ),
    "lustre_export_config",
)
# Maps are cleared by naming them in the mask and sending them empty (lists: by leaving them out).
CLEAR_AS_EMPTY_MAP = ("labels", SLURM_PREFIX + "config")
# Node pool fields the service fills in: an unset input never differs from them.
NODE_POOL_SERVER_FILLED = ("boot_disk", "node_image", "provisioning_model", "flex_start_max_duration")
# Node pool fields the service refuses to change in place (node_pools is updatable as a whole).
NODE_POOL_IMMUTABLE = ("machine_spec", "provisioning_model", "confidential_instance_config")


class SpecModel(BaseModel):
    """camelCase keys (the API's JSON names), unknown keys rejected, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        str_strip_whitespace=True,
        hide_input_in_errors=True,
        # no coercion: "3", 3.0 and true are not the integer 3; the provider normalizes engine numbers itself
        strict=True,
    )


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
# Filestore's and Managed Lustre's instance names have one form.
InstanceName = Annotated[
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


class ReservationAffinity(SpecModel):
    reservation_affinity_type: Literal["NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION"]
    values: list[str] = []


class MachineSpec(SpecModel):
    machine_type: str
    accelerator_type: str | None = None
    accelerator_count: int | None = Field(default=None, ge=1)
    reservation_affinity: ReservationAffinity | None = None


class ScalingSpec(SpecModel):
    min_node_count: int = Field(ge=0)
    max_node_count: int = Field(ge=0)


class BootDisk(SpecModel):
    boot_disk_type: Literal["pd-ssd", "pd-standard", "hyperdisk-balanced"] | None = None
    boot_disk_size_gb: int | None = Field(default=None, ge=10, le=65536)


class ConfidentialInstanceConfig(SpecModel):
    confidential_instance_type: Literal["SEV", "SEV_SNP", "TDX"]


class NodePool(SpecModel):
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


class Partition(SpecModel):
    id: PartitionId
    node_pool_ids: list[str]
    config: dict[str, str] = {}


class NodeSet(SpecModel):
    node_pool_id: str
    config: dict[str, str] = {}


class SlurmSpec(SpecModel):
    home_directory_storage: InstanceName
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


class OrchestratorSpec(SpecModel):
    slurm_spec: SlurmSpec


class Network(SpecModel):
    network: NetworkName
    subnetwork: SubnetworkName | None = None


class RuntimeSpec(SpecModel):
    service_account: str


class TimeOfDay(SpecModel):
    hours: int = Field(default=0, ge=0, le=23)
    """Hour of the day, 0-23."""
    minutes: int = Field(default=0, ge=0, le=59)
    """Minute of the hour, 0-59."""


class LustreExportConfig(SpecModel):
    """Backups of the Managed Lustre instances attached to the cluster to a Cloud Storage bucket."""

    destination_bucket: str
    """The Cloud Storage bucket the backups go to, without gs://."""
    days_of_week: list[
        Literal["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]
    ] = []
    """Days a backup runs, each at most once; empty: every day."""
    lustres: list[InstanceName] = []
    """Instances to back up (projects/P/locations/ZONE/instances/NAME, attached to a node pool); empty: all."""
    start_time: TimeOfDay | None = None
    """Time of day the backup starts."""


class ClusterSpec(SpecModel):
    """A cluster: identity, API fields and the provider's local settings."""

    project: str
    region: str
    model_development_cluster_id: str
    display_name: Input[str] | None = None
    """Display name; a change is an in-place update (updateMask displayName), never a replacement."""
    labels: dict[str, str] = {}
    network: Network
    node_pools: list[NodePool]
    orchestrator_spec: OrchestratorSpec
    runtime_spec: RuntimeSpec | None = None
    lustre_export_config: LustreExportConfig | None = None
    """Backups of the attached Managed Lustre instances (settable and updatable)."""
    update_mode: Literal["USER_AND_SERVICE", "USER_ONLY"] = "USER_AND_SERVICE"
    """USER_ONLY keeps unpinned node images and service-managed fields as they are."""
    deletion_policy: Literal["DELETE", "ABANDON", "PREVENT"] = "DELETE"
    """DELETE; ABANDON (leave the cluster); PREVENT (refuse to delete or replace)."""
    operation_timeout_minutes: Input[int] = Field(default=DEFAULT_OPERATION_TIMEOUT_MINUTES, ge=1, le=1440)
    """Deadline for each long-running operation."""


# ---------------------------------------------------------------------------------------------------------
# The plain tree the provider walks, derived from the models above. Leaves: STR/INT/BOOL/LIST (of scalars);
# MAP: string map whose keys are kept verbatim; OPAQUE: passed through unchanged (legacy scheduling/accounting).
STR, INT, BOOL, LIST, MAP, OPAQUE = "str", "int", "bool", "list", "map", "opaque"
IDENTITY_KEYS = ("project", "region", "model_development_cluster_id")
# Inputs that never reach the API body: ClusterSpec's own settings plus the REST client settings.
LOCAL_KEYS = (
    "update_mode",
    "deletion_policy",
    "operation_timeout_minutes",
    "api_endpoint",
    "quota_project",
    "impersonate_service_account",
    "iam_endpoint",
    "emulator",
    "retry",
)
# Read by create only, never compared: `adopt` makes create take over the existing cluster (a Python dynamic
# provider cannot be imported: the engine's import calls Read without the pickled provider).
CREATE_ONLY_KEYS = ("adopt",)
OUTPUT_KEYS = ("name", "state", "create_time", "update_time")


def _tree(annotation: Any) -> Any:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _tree(args[0])
    if origin in (typing.Union, types.UnionType):
        return _tree(args[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {name: _tree(f.annotation) for name, f in annotation.model_fields.items()}
    if origin is list:
        inner = _tree(args[0])
        return [inner] if isinstance(inner, dict) else LIST
    if origin is dict:
        return MAP if args[1] is str else OPAQUE
    if annotation is bool:
        return BOOL
    if annotation is int:
        return INT
    return STR


_FULL = _tree(ClusterSpec)
API_SCHEMA: dict[str, Any] = {k: v for k, v in _FULL.items() if k not in (*IDENTITY_KEYS, *LOCAL_KEYS)}
NODE_POOL: dict[str, Any] = API_SCHEMA["node_pools"][0]


def norm_scalar(v: Any, kind: str) -> Any:
    if v is None:
        return None
    if kind == INT:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str) and re.fullmatch(r"-?\d+", v, re.ASCII):  # proto JSON may send int64 as string
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
            conv = _convert(value.get(in_key_fn(name)), sub, key_fn, in_key_fn)
            if conv is not None:
                out[key_fn(name)] = conv
        return out
    if schema == LIST:
        return list(value) if isinstance(value, (list, tuple)) else value
    if schema in (MAP, OPAQUE):
        return dict(value) if isinstance(value, Mapping) else value
    return norm_scalar(value, schema)


def _same_key(k: str) -> str:
    return k


def to_rest(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Input dict (snake_case) -> the API's JSON body (lowerCamelCase), API fields only."""
    return _convert(spec, API_SCHEMA, to_camel, _same_key)


def from_rest(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """API JSON -> input-shaped dict (known fields only)."""
    return _convert(cluster, API_SCHEMA, _same_key, to_camel)


def normalize(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs as the engine hands them (numbers as floats, Nones) -> canonical input dict."""
    out = _convert(spec, API_SCHEMA, _same_key, _same_key)
    for k in (*IDENTITY_KEYS, *LOCAL_KEYS, *CREATE_ONLY_KEYS):
        v = spec.get(k)
        if v is not None:
            out[k] = norm_scalar(v, INT) if k == "operation_timeout_minutes" else v
    return out


def slurm_of(spec: Mapping[str, Any]) -> dict[str, Any]:
    return (spec.get("orchestrator_spec") or {}).get("slurm_spec") or {}


def cluster_path(spec: Mapping[str, Any]) -> str:
    return (
        f"projects/{spec['project']}/locations/{spec['region']}/modelDevelopmentClusters/"
        f"{spec['model_development_cluster_id']}"
    )


def is_unknown(v: Any) -> bool:
    """Whether a value is (or contains) the engine's placeholder for a value not known during preview."""
    return holds(v, lambda x: x == UNKNOWN)
