"""Config of what runs inside a cluster (shared by the `gkeClusters` and `kubernetesClusters` kinds).

`InClusterSettings` holds everything the in-cluster component (`ClusterMlDiagnostics`) needs: workload
namespaces, cert-manager, the manual install (injection-webhook, connection-operator) and Diagon.
Targets embed it BY INHERITANCE, so its keys sit flat on the target (`kubernetesClusters[0].diagon.image`,
`gkeClusters[0].diagon.image`): `class GkeClusterTarget(TargetBase, InClusterSettings)`, and the target
itself is passed as `settings` to `ClusterMlDiagnostics`. Its keys and rules are the library's
(`ml_diagnostics.rules.in_cluster`), with the stack file's defaults: Diagon and the verify role off unless
enabled; the rules that apply only when the mode resolves to manual come from `manual_install_problems()`.

A target's example is in its kind's model (program/kinds/kubernetes/model.py, program/kinds/gke/model.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ml_diagnostics.rules.diagon import DiagonSpec
from ml_diagnostics.rules.in_cluster import (
    CertManagerSpec,
    ChartSpec,
    InClusterSpec,
    MlDiagnosticsManualSpec,
    WorkloadNamespaceSpec,
)
from ml_diagnostics.rules.verify_rbac import VerifyRbacSpec
from program.config_base import secret_inputs
from program.costly import Costly

if TYPE_CHECKING:
    from ml_diagnostics.args import InClusterArgs, VerifyRbacArgs


class DiagonSettings(DiagonSpec):
    """The Diagon profiling DaemonSet (preview); off unless `enabled: true`."""

    enabled: bool = False
    """Deploy the daemon."""


class VerifyRbacSettings(VerifyRbacSpec):
    """A ClusterRole and Roles holding exactly the reads `mldiag verify` makes, bound to `subjects`; off unless
    `enabled: true`."""

    enabled: bool = False
    """Create the role and its bindings (docs/verify.md, "Permissions verify needs", lists the rules)."""

    def to_args(self) -> VerifyRbacArgs:
        """As the library's VerifyRbacArgs."""
        return {
            "name": self.name,
            "subjects": [
                {"kind": x.kind, "name": x.name, **({"namespace": x.namespace} if x.namespace else {})}  # type: ignore[typeddict-item]
                for x in self.subjects
            ],
        }


class InClusterSettings(InClusterSpec):
    """Everything that runs inside one cluster. Embedded by inheritance in the cluster targets."""

    manual_install: MlDiagnosticsManualSpec = MlDiagnosticsManualSpec()
    """injection-webhook and connection-operator releases (manual mode only)."""
    diagon: DiagonSettings = DiagonSettings()
    """The Diagon profiling DaemonSet (preview)."""
    verify_rbac: VerifyRbacSettings = VerifyRbacSettings()
    """Optional read-only role for `mldiag verify` (docs/verify.md, "Permissions verify needs")."""


# The library's Specs under the names the program's modules use.
WorkloadNamespace = WorkloadNamespaceSpec
CertManagerSettings = CertManagerSpec
ChartSettings = ChartSpec
MlDiagnosticsManualSettings = MlDiagnosticsManualSpec


def _chart_args(c: ChartSpec) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: v for k, v in (("chart", c.chart), ("version", c.version), ("repository", c.repository)) if v
    }
    if c.values:
        out["values"] = secret_inputs(c.values)
    return out


def in_cluster_args(s: InClusterSettings) -> InClusterArgs:
    """The in-cluster settings as the library's arguments (secret leaves of chart values become secrets)."""
    cm = s.cert_manager
    cert_manager: dict[str, Any] = {
        "enabled": cm.enabled,
        "version": cm.version,
        "repository": cm.repository,
        "values": secret_inputs(cm.values),
        "adopt": cm.adopt,
    }
    out: dict[str, Any] = {
        "workload_namespaces": [
            {"name": ns.name, "create": ns.create, "labels": dict(ns.labels), "adopt": ns.adopt}
            for ns in s.workload_namespaces
        ],
        "cert_manager": cert_manager,
    }
    mi = s.manual_install
    if mi.jax_version is not None:
        operator = _chart_args(mi.connection_operator)
        if mi.connection_operator.args is not None:
            operator["args"] = list(mi.connection_operator.args)
        out["manual_install"] = {
            "jax_version": mi.jax_version,
            "repository": mi.repository,
            "injection_webhook": _chart_args(mi.injection_webhook),
            "connection_operator": operator,
            "adopt": mi.adopt,
        }
    d = s.diagon
    if d.enabled:
        diagon: dict[str, Any] = {
            "namespace": d.namespace,
            "create_namespace": d.create_namespace,
            "image": d.image,
            "service_account": d.service_account,
            "max_unavailable": d.max_unavailable,
            "adopt": d.adopt,
        }
        for key, value in (
            ("gcp_service_account", d.gcp_service_account),
            ("accelerator_node_labels", d.accelerator_node_labels),
            ("node_selector", d.node_selector),
        ):
            if value is not None:
                diagon[key] = value
        out["diagon"] = diagon
    rb = s.verify_rbac
    if rb.enabled:
        out["verify_rbac"] = rb.to_args()
    return out  # type: ignore[return-value]


# What runs in a cluster, for the offline diff (both cluster kinds carry these in their entries): deleting a
# namespace the program creates deletes everything in it; a Helm release is replaced when its name or
# namespace changes.
NAMESPACE_PARENTS = ("mldiag:index:WorkloadOptIn", "mldiag:index:Diagon", "mldiag:index:MlDiagnosticsManual")
COSTLY = (
    Costly(
        "kubernetes:core/v1:Namespace",
        "namespace",
        "namespaces",
        parents=NAMESPACE_PARENTS,
        name_path="metadata.name",
    ),
)
# Helm v3 Release: helm_release.go forceNewFields.
FORCE_NEW: dict[str, tuple[str, ...]] = {"kubernetes:helm.sh/v3:Release": ("name", "namespace")}
