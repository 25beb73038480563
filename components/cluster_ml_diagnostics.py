"""Everything ML Diagnostics runs inside one cluster, given a Kubernetes provider and a resolved mode.

- manual: cert-manager (unless pre-installed) -> injection-webhook and connection-operator (in parallel).
- managed (GKE >= 1.35.0-gke.3065000 with the managed flag): no releases, GKE provides them.
- both: workload namespace opt-in labels, and Diagon when enabled (independent of the releases).

Callers resolve the mode with `compat.resolve_mode` (GKE: by version; self-managed: always manual).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pulumi

from components import compat
from components.cert_manager import CertManager
from components.diagon import Diagon
from components.mldiagnostics_manual import MlDiagnosticsManual
from components.targets.kubernetes import InClusterSettings
from components.verify_rbac import VerifyRbac
from components.workload_opt_in import WorkloadOptIn


class ClusterMlDiagnostics(pulumi.ComponentResource):
    """Outputs: mode, certManager ("release" | "preinstalled" | None on managed), workloadNamespaces,
    diagonNamespace (None when disabled), workloadMonitoring (GKE >= 1.36.4-gke.1247000 only)."""

    cert_manager: CertManager | None = None
    manual: MlDiagnosticsManual | None = None
    diagon: Diagon | None = None
    verify_rbac: VerifyRbac | None = None

    def __init__(
        self,
        name: str,
        settings: InClusterSettings,
        mode: Literal["managed", "manual"],
        provider: pulumi.ProviderResource,
        opts: pulumi.ResourceOptions | None = None,
        *,
        gke_version: str | None = None,
        releases_after: Sequence[pulumi.Resource] = (),
        self_managed: bool = False,
    ):
        """`gke_version`: the cluster's GKE version when known (None for self-managed); used for outputs only.
        `releases_after`: what the Helm releases wait for (they await pod readiness, so e.g. the node pools);
        namespaces, labels and Diagon need only the API server and do not wait.
        `self_managed`: not GKE (Diagon's default node placement follows the vendor manifest)."""
        if mode not in ("managed", "manual"):
            raise ValueError(
                f"mode must be resolved to managed or manual (compat.resolve_mode), got {mode!r}"
            )
        super().__init__(
            "mldiag:index:ClusterMlDiagnostics",
            name,
            None,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers=[provider])),
        )
        child = pulumi.ResourceOptions(parent=self)
        cert_manager_state = None
        if mode == "manual":
            release = None
            if settings.cert_manager.enabled:
                self.cert_manager = CertManager(
                    f"{name}-cert-manager", settings.cert_manager, opts=child, release_after=releases_after
                )
                release = self.cert_manager.release
            cert_manager_state = "release" if release is not None else "preinstalled"
            self.manual = MlDiagnosticsManual(
                f"{name}-manual", settings.manual_install, release, opts=child, release_after=releases_after
            )
        self.opt_in = WorkloadOptIn(f"{name}-opt-in", list(settings.workload_namespaces), opts=child)
        if settings.diagon.enabled:
            self.diagon = Diagon(f"{name}-diagon", settings.diagon, opts=child, self_managed=self_managed)
        if settings.verify_rbac.enabled:
            # Roles go into the namespaces the releases and Diagon create, so they wait for those.
            creators = [c for c in (self.cert_manager, self.manual, self.diagon) if c is not None]
            self.verify_rbac = VerifyRbac(f"{name}-verify-rbac", settings, mode, opts=child, after=creators)

        self.mode = pulumi.Output.from_input(mode)
        self.workload_monitoring = pulumi.Output.from_input(
            compat.supports_workload_monitoring(gke_version, self_managed=gke_version is None)
        )
        self.register_outputs(
            {
                "mode": mode,
                "certManager": cert_manager_state,
                "workloadNamespaces": [ns.name for ns in settings.workload_namespaces],
                "diagonNamespace": settings.diagon.namespace if settings.diagon.enabled else None,
                "diagonImage": settings.diagon.image if settings.diagon.enabled else None,
                "workloadMonitoring": self.workload_monitoring,
            }
        )
