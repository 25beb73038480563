"""The sections of the verify record (ml_diagnostics.verify_record) of this library's components, and the
base of the record itself. The record's fields, one per section, are generated from the parts that declare
a section (`PART.record`, ml_diagnostics/parts.py) into `_record.py` by `python -m dev.gen.args --write`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from ml_diagnostics.rules.azure_cluster import AzureClusterSpec
from ml_diagnostics.rules.base import Spec, alias_of
from ml_diagnostics.rules.google_api import GoogleApiSpec

OUTPUT = "verifyRecord"
"""The output every component records its verify record under."""
VERSION = 1


class ReleaseRecord(Spec):
    """A Helm release the component deployed: verify reads Helm's own release Secrets."""

    release: str
    namespace: str
    chart_version: str
    """Empty: any version (the chart's default, resolved when it was installed)."""


class DiagonRecord(Spec):
    namespace: str
    image: str


class InClusterRecord(Spec):
    """What runs inside one cluster."""

    releases: list[ReleaseRecord] = []
    webhook: bool = False
    """The injection-webhook's MutatingWebhookConfiguration must exist with its CA injected (manual mode)."""
    preinstalled_cert_manager: bool = False
    """Manual mode on a cluster that already runs cert-manager: its Deployments must be available."""
    workload_namespaces: list[str] = []
    """Each must carry the opt-in label."""
    diagon: DiagonRecord | None = None


class GkeRecord(Spec):
    project: str
    location: str
    cluster_name: str
    mode: Literal["managed", "manual"]
    google_api: GoogleApiSpec = GoogleApiSpec()
    in_cluster: InClusterRecord


class AzureMlRecord(Spec):
    cluster: AzureClusterSpec
    extension_name: str
    version: str | None = None
    """The pinned extension version (unset: whatever ARM runs)."""
    training: bool = False
    inference: bool = False
    install_prom_op: bool | None = None
    install_volcano: bool | None = None
    install_dcgm_exporter: bool | None = None
    install_nvidia_device_plugin: bool | None = None
    """The install flags as given (unset: the extension's default)."""
    nginx_ingress_controller: str | None = None


class ModelDevelopmentRecord(Spec):
    project: str
    region: str
    cluster_id: str
    google_api: GoogleApiSpec = GoogleApiSpec()


class RecordBase(Spec):
    """One component's record: its version and exactly one section (the fields of its generated subclass,
    `VerifyRecord`, after the version)."""

    version: int

    @model_validator(mode="after")
    def _one_section(self) -> RecordBase:
        if self.version > VERSION:
            raise ValueError(
                f"recorded by a newer ml-diagnostics (record version {self.version}; this one reads up to "
                f"{VERSION}): upgrade mldiag"
            )
        sections = self.sections()
        given = [name for name in sections if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"must hold exactly one of {', '.join(alias_of(n) for n in sections)}")
        return self

    @classmethod
    def sections(cls) -> tuple[str, ...]:
        """The sections a record may hold: every field but its version."""
        return tuple(name for name in cls.model_fields if name != "version")

    @property
    def section(self) -> str:
        """The section's name (its field: in_cluster, gke, azure_ml, model_development, ...)."""
        return next(name for name in self.sections() if getattr(self, name) is not None)


__all__ = [
    "OUTPUT",
    "VERSION",
    "AzureMlRecord",
    "DiagonRecord",
    "GkeRecord",
    "InClusterRecord",
    "ModelDevelopmentRecord",
    "RecordBase",
    "ReleaseRecord",
]
