"""Typed arguments of the Model Development Cluster (generated: ml_diagnostics.args), kept importable here."""

from ml_diagnostics.args import (
    BootDiskArgs,
    ConfidentialInstanceConfigArgs,
    LustreExportConfigArgs,
    MachineSpecArgs,
    ModelDevelopmentClusterArgs,
    NetworkArgs,
    NodePoolArgs,
    NodeSetArgs,
    OrchestratorSpecArgs,
    PartitionArgs,
    ReservationAffinityArgs,
    RuntimeSpecArgs,
    ScalingSpecArgs,
    SlurmSpecArgs,
    TimeOfDayArgs,
)

__all__ = [
    "BootDiskArgs",
    "ConfidentialInstanceConfigArgs",
    "LustreExportConfigArgs",
    "MachineSpecArgs",
    "ModelDevelopmentClusterArgs",
    "NetworkArgs",
    "NodePoolArgs",
    "NodeSetArgs",
    "OrchestratorSpecArgs",
    "PartitionArgs",
    "ReservationAffinityArgs",
    "RuntimeSpecArgs",
    "ScalingSpecArgs",
    "SlurmSpecArgs",
    "TimeOfDayArgs",
]
