"""cert-manager (prerequisite of the injection-webhook): Helm release `cert-manager` from charts.jetstack.io.

Mirrors the vendor's `helm install cert-manager jetstack/cert-manager --namespace cert-manager --create-namespace
--version v1.13.0 --set installCRDs=true --set global.leaderElection.namespace=cert-manager --timeout 10m`.
The namespace is created by Helm (as `--create-namespace`), so the release is the first link of the chain.
`adopt: True` imports the release that command made (`cert-manager/cert-manager`).
"""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi_kubernetes.helm.v3 import Release

from ml_diagnostics import compat, lifecycle, verify_record
from ml_diagnostics.args import CertManagerArgs
from ml_diagnostics.cert_manager_schema import cert_manager_values
from ml_diagnostics.component import Component
from ml_diagnostics.parts import Part
from ml_diagnostics.rules.in_cluster import CertManagerSpec


class CertManager(Component[CertManagerSpec]):
    """Installs cert-manager. Dependents `depends_on` the `release` (which awaits hooks and readiness)."""

    release_name: pulumi.Output[str | None]
    """The Helm release's name (cert-manager)."""
    version: pulumi.Output[str]
    """The chart version."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:CertManager"
    _SPEC = CertManagerSpec

    def __init__(
        self,
        name: str,
        args: CertManagerArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        release_after: Sequence[pulumi.Resource] = (),
    ):
        """`release_after`: resources the release must wait for besides the cluster (e.g. node pools)."""
        super().__init__(name, args, opts, release_after=release_after)

    def _build(
        self, name: str, spec: CertManagerSpec, *, release_after: Sequence[pulumi.Resource] = (), **_: Any
    ) -> None:
        version = spec.version
        if compat.cert_manager_installcrds_deprecated(version, spec.values):
            pulumi.log.warn(
                f"cert-manager {version}: installCRDs is deprecated (still honoured); set crds.enabled: true "
                "and crds.keep: true instead",
                resource=self,
            )
        self.release = Release(
            f"{name}-release",
            name=compat.CERT_MANAGER_RELEASE,
            chart=compat.CERT_MANAGER_CHART,
            version=version,
            repository_opts={"repo": spec.repository},
            namespace=compat.CERT_MANAGER_NAMESPACE,
            create_namespace=True,
            values=cert_manager_values(version, spec.values),
            timeout=compat.CERT_MANAGER_TIMEOUT_SECONDS,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(release_after),
                import_=lifecycle.k8s_id(compat.CERT_MANAGER_NAMESPACE, compat.CERT_MANAGER_RELEASE)
                if spec.adopt
                else None,
            ),
        )
        self.release_name = self.release.name
        record = verify_record.record(
            inCluster={"releases": [verify_record.dump(verify_record.cert_manager_release(version))]}
        )
        self._known(version=version, verify_record=record)
        self.register_outputs(
            {verify_record.OUTPUT: record, "releaseName": self.release.name, "version": version}
        )


PART = Part(order=20, component="CertManager", spec=CertManagerSpec, exports=("CertManagerArgs",))


__all__ = ["CertManager", "CertManagerArgs", "cert_manager_values"]
