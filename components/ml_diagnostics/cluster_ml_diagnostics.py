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

from ml_diagnostics import compat, docs, rules, verify_record
from ml_diagnostics.args import ClusterMlDiagnosticsArgs
from ml_diagnostics.cert_manager import CertManager
from ml_diagnostics.diagon import Diagon
from ml_diagnostics.mldiagnostics_manual import MlDiagnosticsManual
from ml_diagnostics.rules.in_cluster import ClusterMlDiagnosticsSpec, MlDiagnosticsMode
from ml_diagnostics.verify_rbac import VerifyRbac
from ml_diagnostics.workload_opt_in import WorkloadOptIn


class ClusterMlDiagnostics(pulumi.ComponentResource):
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
        spec = rules.check(
            ClusterMlDiagnosticsSpec,
            args,
            component="ClusterMlDiagnostics",
            name=name,
            owner="ClusterMlDiagnosticsArgs",
        )
        mode = spec.resolved_mode
        args = enabled_parts(spec)  # type: ignore[assignment]
        super().__init__("mldiag:index:ClusterMlDiagnostics", name, None, opts)
        if args.get("kubeconfig") is not None:
            provider = KubernetesProvider(
                f"{name}-provider",
                kubeconfig=pulumi.Output.secret(args["kubeconfig"]),
                context=args.get("context"),
                opts=pulumi.ResourceOptions(parent=self),
            )
            child = pulumi.ResourceOptions(parent=self, providers=[provider])
        else:
            child = pulumi.ResourceOptions(parent=self)
        self_managed = args.get("self_managed", False)
        self.cert_manager: CertManager | None = None
        self.manual: MlDiagnosticsManual | None = None
        self.diagon: Diagon | None = None
        self.verify_rbac: VerifyRbac | None = None
        cert_manager_state = None
        if mode is MlDiagnosticsMode.MANUAL:
            cm = args.get("cert_manager") or {}
            release = None
            if cm.get("enabled", True):
                self.cert_manager = CertManager(
                    f"{name}-cert-manager", cm, opts=child, release_after=releases_after
                )
                release = self.cert_manager.release
            cert_manager_state = "release" if release is not None else "preinstalled"
            self.manual = MlDiagnosticsManual(
                f"{name}-manual",
                args["manual_install"],
                opts=child,
                cert_manager=release,
                release_after=releases_after,
            )
        namespaces = list(args.get("workload_namespaces") or [])
        self.opt_in = WorkloadOptIn(f"{name}-opt-in", {"namespaces": namespaces}, opts=child)
        diagon = args.get("diagon")
        if diagon is not None:
            self.diagon = Diagon(f"{name}-diagon", {**diagon, "self_managed": self_managed}, opts=child)
        if args.get("verify_rbac") is not None:
            # Roles go into the namespaces the releases and Diagon create, so they wait for those.
            creators = [c for c in (self.cert_manager, self.manual, self.diagon) if c is not None]
            self.verify_rbac = VerifyRbac(
                f"{name}-verify-rbac",
                args["verify_rbac"],
                opts=child,
                in_cluster=args,
                mode=mode,
                after=creators,
            )

        gke_version = args.get("gke_version")
        diagon_ns = diagon.get("namespace", compat.DIAGON_DEFAULT_NAMESPACE) if diagon is not None else None
        self.mode = pulumi.Output.from_input(mode.value)
        self.cert_manager_source = pulumi.Output.from_input(cert_manager_state)
        self.workload_namespaces = pulumi.Output.from_input([ns["name"] for ns in namespaces])
        self.diagon_namespace = pulumi.Output.from_input(diagon_ns)
        self.workload_monitoring = pulumi.Output.from_input(
            compat.supports_workload_monitoring(gke_version, self_managed=gke_version is None)
        )
        self.verify_record = pulumi.Output.from_input(
            verify_record.record(inCluster=verify_record.in_cluster(spec, mode.value))
        )
        self.register_outputs(
            {
                verify_record.OUTPUT: self.verify_record,
                "mode": mode.value,
                "certManager": cert_manager_state,
                "workloadNamespaces": [ns["name"] for ns in namespaces],
                "diagonNamespace": diagon_ns,
                "diagonImage": diagon.get("image", compat.DIAGON_DEFAULT_IMAGE)
                if diagon is not None
                else None,
                "workloadMonitoring": self.workload_monitoring,
            }
        )


def enabled_parts(spec: ClusterMlDiagnosticsSpec) -> dict[str, Any]:
    """The checked Args, without Diagon or the verify role when they are given but not enabled."""
    out = spec.model_dump(exclude_unset=True, warnings=False)
    for part in ("diagon", "verify_rbac"):
        if part in out and not out[part].get("enabled", True):
            del out[part]
    return out


docs.document(ClusterMlDiagnostics, ClusterMlDiagnosticsArgs)

__all__ = ["ClusterMlDiagnostics", "ClusterMlDiagnosticsArgs"]
