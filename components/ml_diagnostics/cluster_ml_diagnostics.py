"""Everything ML Diagnostics runs inside one cluster, given a Kubernetes provider and a resolved mode.

- manual: cert-manager (unless pre-installed) -> injection-webhook and connection-operator (in parallel).
- managed (GKE >= 1.35.0-gke.3065000 with the managed flag): no releases, GKE provides them.
- both: workload namespace opt-in labels, and Diagon when given (independent of the releases).

The Kubernetes provider comes from the caller's `providers` option (or `kubeconfig`: one is then made).
The mode is resolved by the caller (`compat.resolve_mode`: GKE by version; self-managed always manual).
"""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi_kubernetes.provider import Provider as KubernetesProvider

from ml_diagnostics import compat, docs, verify_record
from ml_diagnostics.args import ClusterMlDiagnosticsArgs
from ml_diagnostics.cert_manager import CertManager
from ml_diagnostics.component import Component
from ml_diagnostics.diagon import Diagon
from ml_diagnostics.mldiagnostics_manual import MlDiagnosticsManual
from ml_diagnostics.parts import Part
from ml_diagnostics.records import InClusterRecord
from ml_diagnostics.rules.in_cluster import ClusterMlDiagnosticsSpec, MlDiagnosticsMode, WorkloadOptInSpec
from ml_diagnostics.rules.verify_rbac import VerifyRbacSpec
from ml_diagnostics.verify_rbac import VerifyRbac
from ml_diagnostics.workload_opt_in import WorkloadOptIn


class ClusterMlDiagnostics(Component[ClusterMlDiagnosticsSpec]):
    """ML Diagnostics inside one cluster: opt-in labels, Diagon, and in manual mode cert-manager, the
    injection-webhook and the connection-operator."""

    mode: pulumi.Output[str]
    """The mode: managed or manual."""
    cert_manager_source: pulumi.Output[str | None]
    """Manual mode: release (installed here) or preinstalled; unset in managed mode."""
    workload_namespaces: pulumi.Output[list[str]]
    """The opted-in namespaces."""
    diagon_namespace: pulumi.Output[str | None]
    """Diagon's namespace, when Diagon is deployed."""
    workload_monitoring: pulumi.Output[bool]
    """Automatic workload monitoring (GKE >= 1.36.4-gke.1247000 only)."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:ClusterMlDiagnostics"
    _SPEC = ClusterMlDiagnosticsSpec

    def __init__(
        self,
        name: str,
        args: ClusterMlDiagnosticsArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        releases_after: Sequence[pulumi.Resource] = (),
    ):
        """`releases_after`: what the Helm releases wait for (they await pod readiness, so e.g. the node pools);
        namespaces, labels and Diagon need only the API server and do not wait."""
        super().__init__(name, args, opts, releases_after=releases_after)

    def _build(
        self,
        name: str,
        spec: ClusterMlDiagnosticsSpec,
        *,
        releases_after: Sequence[pulumi.Resource] = (),
        **_: Any,
    ) -> None:
        mode = spec.resolved_mode
        child = self._child_options(name, spec)
        self.cert_manager: CertManager | None = None
        self.manual: MlDiagnosticsManual | None = None
        self.diagon: Diagon | None = None
        self.verify_rbac: VerifyRbac | None = None
        if mode is MlDiagnosticsMode.MANUAL:
            self._manual_install(name, spec, child, releases_after)
        self.opt_in = WorkloadOptIn.from_spec(
            f"{name}-opt-in", WorkloadOptInSpec.trusted({"namespaces": spec.workload_namespaces}), opts=child
        )
        diagon = spec.diagon_on
        if diagon is not None:
            self.diagon = Diagon.from_spec(
                f"{name}-diagon", diagon.model_copy(update={"self_managed": spec.self_managed}), opts=child
            )
        if (rbac := spec.verify_rbac_on) is not None:
            self._verify_role(name, spec, rbac, mode, child)
        self._publish(spec, mode)

    def _child_options(self, name: str, spec: ClusterMlDiagnosticsSpec) -> pulumi.ResourceOptions:
        """The children's options: a provider of the given kubeconfig, else the `providers` option's."""
        if spec.kubeconfig is None:
            return pulumi.ResourceOptions(parent=self)
        provider = KubernetesProvider(
            f"{name}-provider",
            kubeconfig=pulumi.Output.secret(spec.kubeconfig),
            context=spec.context,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return pulumi.ResourceOptions(parent=self, providers=[provider])

    def _manual_install(
        self,
        name: str,
        spec: ClusterMlDiagnosticsSpec,
        child: pulumi.ResourceOptions,
        releases_after: Sequence[pulumi.Resource],
    ) -> None:
        """cert-manager (unless pre-installed), then the injection-webhook and connection-operator."""
        release = None
        if spec.cert_manager.enabled:
            self.cert_manager = CertManager.from_spec(
                f"{name}-cert-manager", spec.cert_manager, opts=child, release_after=releases_after
            )
            release = self.cert_manager.release
        assert spec.manual_install is not None  # the Spec requires it in manual mode
        self.manual = MlDiagnosticsManual.from_spec(
            f"{name}-manual",
            spec.manual_install,
            opts=child,
            cert_manager=release,
            release_after=releases_after,
        )

    def _verify_role(
        self,
        name: str,
        spec: ClusterMlDiagnosticsSpec,
        rbac: VerifyRbacSpec,
        mode: MlDiagnosticsMode,
        child: pulumi.ResourceOptions,
    ) -> None:
        """The read-only role of verify; its Roles go into the namespaces the releases and Diagon create."""
        creators = [c for c in (self.cert_manager, self.manual, self.diagon) if c is not None]
        diagon = spec.diagon_on
        in_cluster: dict[str, Any] = {
            "workload_namespaces": [{"name": ns.name} for ns in spec.workload_namespaces],
            "cert_manager": {"enabled": spec.cert_manager.enabled},
        }
        if diagon is not None:
            in_cluster["diagon"] = {"namespace": diagon.namespace}
        self.verify_rbac = VerifyRbac(
            f"{name}-verify-rbac",
            rbac.model_dump(),  # type: ignore[arg-type]
            opts=child,
            in_cluster=in_cluster,  # type: ignore[arg-type]
            mode=mode,
            after=creators,
        )

    def _publish(self, spec: ClusterMlDiagnosticsSpec, mode: MlDiagnosticsMode) -> None:
        """The outputs and the verify record."""
        cert_manager_state = None
        if mode is MlDiagnosticsMode.MANUAL:
            cert_manager_state = "release" if self.cert_manager is not None else "preinstalled"
        diagon = spec.diagon_on
        names = [ns.name for ns in spec.workload_namespaces]
        diagon_ns = diagon.namespace if diagon is not None else None
        monitoring = compat.supports_workload_monitoring(
            spec.gke_version, self_managed=spec.gke_version is None
        )
        record = verify_record.record(inCluster=verify_record.in_cluster(spec, mode.value))
        self._known(
            mode=mode.value,
            cert_manager_source=cert_manager_state,
            workload_namespaces=names,
            diagon_namespace=diagon_ns,
            workload_monitoring=monitoring,
            verify_record=record,
        )
        self.register_outputs(
            {
                verify_record.OUTPUT: record,
                "mode": mode.value,
                "certManager": cert_manager_state,
                "workloadNamespaces": names,
                "diagonNamespace": diagon_ns,
                "diagonImage": diagon.image if diagon is not None else None,
                "workloadMonitoring": monitoring,
            }
        )


docs.document(ClusterMlDiagnostics, ClusterMlDiagnosticsArgs)

PART = Part(
    order=70,
    component="ClusterMlDiagnostics",
    spec=ClusterMlDiagnosticsSpec,
    exports=("ClusterMlDiagnostics", "ClusterMlDiagnosticsArgs"),
    record=InClusterRecord,
    section="in_cluster",
    readme=(
        "`ClusterMlDiagnostics`",
        "ML Diagnostics inside one Kubernetes cluster: managed (GKE runs it) or manual (cert-manager, the "
        "injection-webhook and the connection-operator as Helm releases), the `managed-mldiagnostics-gke=true` "
        "namespace opt-in and the Diagon profiling DaemonSet",
    ),
)


__all__ = ["ClusterMlDiagnostics", "ClusterMlDiagnosticsArgs"]
