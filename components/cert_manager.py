"""cert-manager (prerequisite of the injection-webhook): Helm release `cert-manager` from charts.jetstack.io.

Mirrors the vendor's `helm install cert-manager jetstack/cert-manager --namespace cert-manager --create-namespace
--version v1.13.0 --set installCRDs=true --set global.leaderElection.namespace=cert-manager --timeout 10m`.
The namespace is created by Helm (as `--create-namespace`), so the release is the first link of the chain.
`adopt: true` imports the release that command made (`cert-manager/cert-manager`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs, RepositoryOptsArgs

from components import compat, lifecycle
from components.config_base import secret_inputs
from components.targets.kubernetes import CertManagerSettings


def cert_manager_values(settings: CertManagerSettings) -> dict[str, Any]:
    base = compat.deep_merge(
        compat.cert_manager_crd_values(settings.version),
        {"global": {"leaderElection": {"namespace": compat.CERT_MANAGER_NAMESPACE}}},
    )
    return compat.deep_merge(base, settings.values)


class CertManager(pulumi.ComponentResource):
    """Installs cert-manager. Dependents `depends_on` the `release` (which awaits hooks and readiness)."""

    release: Release

    def __init__(
        self,
        name: str,
        settings: CertManagerSettings,
        opts: pulumi.ResourceOptions | None = None,
        *,
        release_after: Sequence[pulumi.Resource] = (),
    ):
        """`release_after`: resources the release must wait for besides the cluster (e.g. node pools)."""
        super().__init__("mldiag:index:CertManager", name, None, opts)
        self.release = Release(
            f"{name}-release",
            ReleaseArgs(
                name=compat.CERT_MANAGER_RELEASE,
                chart=compat.CERT_MANAGER_CHART,
                version=settings.version,
                repository_opts=RepositoryOptsArgs(repo=settings.repository),
                namespace=compat.CERT_MANAGER_NAMESPACE,
                create_namespace=True,
                values=secret_inputs(cert_manager_values(settings)),
                timeout=compat.CERT_MANAGER_TIMEOUT_SECONDS,
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(release_after),
                import_=lifecycle.k8s_id(compat.CERT_MANAGER_NAMESPACE, compat.CERT_MANAGER_RELEASE)
                if settings.adopt
                else None,
            ),
        )
        self.register_outputs({"releaseName": self.release.name, "version": settings.version})
