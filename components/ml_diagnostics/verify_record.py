"""What `mldiag verify` needs to check a component, recorded in the component's outputs (`verifyRecord`).

Every component records it, whatever program and language registered it, so verify can check a stack from
its state alone (`mldiag verify --stack ORG/PROJECT/STACK`) and never guesses from resource names; a stack of
this repository's program builds the same record from its config (`mldiag verify STACK`), and both routes
run the same checks on it. A record holds no secret: no kubeconfig, no PEM, no chart values. Its one section
says which checks apply:

- `inCluster`: the Helm releases (name, namespace, chart version) and whether cert-manager is pre-installed,
  the injection-webhook's CA, the opted-in namespaces, Diagon's namespace and image;
- `gke`: the cluster's identity and mode, how its API is called, and its `inCluster` section;
- `azureMl`: the extension's identity, pin and the workloads it runs;
- `modelDevelopment`: the cluster's full resource name and how the API is called.

A component module declares its section (`PART.record`, ml_diagnostics/parts.py); `VerifyRecord` and
`SECTIONS` are generated from those (`_record.py`), the section classes live in `records.py`.
"""

from __future__ import annotations

from typing import Any

from ml_diagnostics import compat
from ml_diagnostics._record import SECTIONS, VerifyRecord
from ml_diagnostics.records import (
    OUTPUT,
    VERSION,
    AzureMlRecord,
    DiagonRecord,
    GkeRecord,
    InClusterRecord,
    ModelDevelopmentRecord,
    ReleaseRecord,
)
from ml_diagnostics.rules.azure_cluster import AzureClusterSpec
from ml_diagnostics.rules.azure_ml import AzureMlExtensionRules
from ml_diagnostics.rules.base import Spec
from ml_diagnostics.rules.google_api import GoogleApiSpec
from ml_diagnostics.rules.in_cluster import InClusterSpec, MlDiagnosticsManualSpec


def manual_releases(manual: MlDiagnosticsManualSpec) -> list[ReleaseRecord]:
    """The injection-webhook's and the connection-operator's releases, at the versions the install uses."""
    webhook = manual.injection_webhook.version or compat.INJECTION_WEBHOOK_DEFAULT_VERSION
    operator = manual.connection_operator.version
    if operator is None and manual.jax_version is not None:
        operator = compat.connection_operator_defaults(manual.jax_version)[0]
    return [
        ReleaseRecord(
            release=compat.INJECTION_WEBHOOK_RELEASE,
            namespace=compat.MLDIAGNOSTICS_NAMESPACE,
            chart_version=webhook,
        ),
        ReleaseRecord(
            release=compat.CONNECTION_OPERATOR_RELEASE,
            namespace=compat.MLDIAGNOSTICS_NAMESPACE,
            chart_version=operator or "",
        ),
    ]


def cert_manager_release(version: str) -> ReleaseRecord:
    return ReleaseRecord(
        release=compat.CERT_MANAGER_RELEASE, namespace=compat.CERT_MANAGER_NAMESPACE, chart_version=version
    )


def diagon_record(namespace: str, image: Any) -> dict[str, Any]:
    return {"namespace": namespace, "image": image}


def in_cluster(spec: InClusterSpec, mode: str) -> dict[str, Any]:
    """The `inCluster` section of in-cluster settings in a resolved mode (an Output image kept as it is)."""
    out: dict[str, Any] = {"workloadNamespaces": [ns.name for ns in spec.workload_namespaces]}
    if mode == "manual":
        releases = [cert_manager_release(spec.cert_manager.version)] if spec.cert_manager.enabled else []
        releases += manual_releases(spec.manual_install or MlDiagnosticsManualSpec())
        out |= {
            "releases": [dump(r) for r in releases],
            "webhook": True,
            "preinstalledCertManager": not spec.cert_manager.enabled,
        }
    d = spec.diagon
    if d is not None and d.enabled:
        out["diagon"] = diagon_record(d.namespace, d.image)
    return out


def gke(
    project: str,
    location: str,
    cluster_name: str,
    mode: str,
    google_api: GoogleApiSpec | None,
    inside: dict[str, Any],
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "project": project,
        "location": location,
        "clusterName": cluster_name,
        "mode": mode,
        "inCluster": inside,
    }
    if google_api is not None:
        out["googleApi"] = dump(google_api)
    return out


def azure_ml(spec: AzureMlExtensionRules, extension_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cluster": spec.cluster.model_dump(
            include=set(AzureClusterSpec.model_fields), by_alias=True, exclude_none=True
        ),
        "extensionName": extension_name,
        "training": spec.training,
        "inference": spec.inference.enabled,
    }
    for field in (
        "version",
        "install_prom_op",
        "install_volcano",
        "install_dcgm_exporter",
        "install_nvidia_device_plugin",
        "nginx_ingress_controller",
    ):
        if (value := getattr(spec, field)) is not None:
            out[AzureMlRecord.model_fields[field].alias or field] = value
    return out


def model_development(
    project: str, region: str, cluster_id: str, google_api: GoogleApiSpec | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"project": project, "region": region, "clusterId": cluster_id}
    if google_api is not None:
        out["googleApi"] = dump(google_api)
    return out


def record(**section: dict[str, Any]) -> dict[str, Any]:
    """The output value: `record(inCluster=...)`, `record(gke=...)`, ..."""
    (name,) = section
    return {"version": VERSION, name: section[name]}


def dump(spec: Spec) -> dict[str, Any]:
    return spec.model_dump(mode="python", by_alias=True, exclude_unset=False, exclude_none=True)


def read(value: Any) -> VerifyRecord:
    """A recorded value, checked (raises pydantic's ValidationError for a record of another shape)."""
    return VerifyRecord.model_validate(value)


__all__ = [
    "OUTPUT",
    "VERSION",
    "AzureMlRecord",
    "DiagonRecord",
    "GkeRecord",
    "InClusterRecord",
    "ModelDevelopmentRecord",
    "ReleaseRecord",
    "SECTIONS",
    "VerifyRecord",
    "read",
    "record",
]
