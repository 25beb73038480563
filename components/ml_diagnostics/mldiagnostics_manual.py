"""The manual ML diagnostics install: injection-webhook and connection-operator Helm releases.

For GKE before 1.35.0-gke.3065000 and self-managed clusters. Release names are the vendor's
(`mldiagnostics-injection-webhook`, `mldiagnostics-connection-operator`): its uninstall steps assume them.
Both releases go to the `gke-mldiagnostics` Namespace created here, and each `depends_on` the cert-manager
release (when this program installs it), not on each other. `adopt: True` imports the two releases
(`gke-mldiagnostics/<release>`) and the namespace the vendor's `helm upgrade --install` made.
"""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi_kubernetes.core import v1 as core
from pulumi_kubernetes.helm.v3 import Release
from pulumi_kubernetes.meta.v1 import ObjectMetaArgsDict

from ml_diagnostics import compat, lifecycle, rules, verify_record
from ml_diagnostics.args import ChartArgs, ConnectionOperatorArgs, MlDiagnosticsManualArgs
from ml_diagnostics.component import Component
from ml_diagnostics.parts import Part
from ml_diagnostics.rules.in_cluster import ChartSpec, MlDiagnosticsManualSpec


def chart_source(
    default_chart: str, repository: str, chart: ChartArgs | ConnectionOperatorArgs
) -> tuple[str, str | None]:
    """(chart input, repository for repository_opts or None). OCI charts are a full oci:// URL, no repository."""
    name = chart.get("chart") or default_chart
    repo = chart.get("repository") or repository
    if name.startswith("oci://"):
        return name, None
    if repo.startswith("oci://"):
        return f"{repo.rstrip('/')}/{name}", None
    return name, repo


def connection_operator_values(args: MlDiagnosticsManualArgs) -> tuple[str, dict[str, Any]]:
    """(chart version, values) for the connection-operator: JAX defaults, then user values, then explicit args."""
    jax = args.get("jax_version")
    if not jax:
        raise ValueError("manual_install.jax_version is required for the manual install")
    default_version, default_args = compat.connection_operator_defaults(jax)
    op: ConnectionOperatorArgs = args.get("connection_operator") or {}
    values: dict[str, Any] = {}
    if default_args is not None:
        values = _at(compat.CONNECTION_OPERATOR_ARGS_PATH, default_args)
    values = compat.deep_merge(values, op.get("values") or {})
    if op.get("args") is not None:
        values = compat.deep_merge(values, _at(compat.CONNECTION_OPERATOR_ARGS_PATH, list(op["args"])))
    return op.get("version") or default_version, values


def _release_id(release: str, adopt: bool) -> str | None:
    return lifecycle.k8s_id(compat.MLDIAGNOSTICS_NAMESPACE, release) if adopt else None


def _at(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(path):
        out = {key: out}
    return out


class MlDiagnosticsManual(Component[MlDiagnosticsManualSpec]):
    """The injection-webhook and connection-operator releases in their gke-mldiagnostics namespace."""

    namespace: pulumi.Output[str]
    """The release namespace (gke-mldiagnostics)."""
    injection_webhook_version: pulumi.Output[str | None]
    """The injection-webhook chart version."""
    connection_operator_version: pulumi.Output[str | None]
    """The connection-operator chart version."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:MlDiagnosticsManual"
    _SPEC = MlDiagnosticsManualSpec

    def __init__(
        self,
        name: str,
        args: MlDiagnosticsManualArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cert_manager: Release | None = None,
        release_after: Sequence[pulumi.Resource] = (),
    ):
        """`cert_manager`: the cert-manager release to wait for; None when the cluster already runs cert-manager.
        `release_after`: what the releases must wait for besides cert-manager (e.g. node pools)."""
        super().__init__(name, args, opts, cert_manager=cert_manager, release_after=release_after)

    @classmethod
    def checked(cls, name: str, args: Any) -> MlDiagnosticsManualSpec:
        spec = super().checked(name, args)
        if not spec.jax_version:
            raise rules.InvalidArgsError(
                "MlDiagnosticsManual",
                name,
                [
                    "MlDiagnosticsManualArgs.jax_version: required for the manual install (it picks the connection-operator chart and args)"
                ],
            )
        return spec

    def _build(
        self,
        name: str,
        spec: MlDiagnosticsManualSpec,
        *,
        cert_manager: Release | None = None,
        release_after: Sequence[pulumi.Resource] = (),
        **_: Any,
    ) -> None:
        self._namespace = self._make_namespace(name, spec, preinstalled=cert_manager is None)
        after_cert_manager: list[pulumi.Resource] = (
            [cert_manager] if cert_manager is not None else list(release_after)
        )
        wh = spec.injection_webhook
        self.injection_webhook = self._release(
            name,
            "injection-webhook",
            compat.INJECTION_WEBHOOK_RELEASE,
            compat.INJECTION_WEBHOOK_CHART,
            spec.repository,
            wh,
            wh.version or compat.INJECTION_WEBHOOK_DEFAULT_VERSION,
            wh.values,
            after_cert_manager,
            spec.adopt,
        )
        version, values = _operator_values(spec)
        self.connection_operator = self._release(
            name,
            "connection-operator",
            compat.CONNECTION_OPERATOR_RELEASE,
            compat.CONNECTION_OPERATOR_CHART,
            spec.repository,
            spec.connection_operator,
            version,
            values,
            after_cert_manager,
            spec.adopt,
        )
        self.namespace = self._namespace.metadata.name
        self.injection_webhook_version = self.injection_webhook.version
        self.connection_operator_version = self.connection_operator.version
        inside = {
            "releases": [verify_record.dump(r) for r in verify_record.manual_releases(spec)],
            "webhook": True,
            "preinstalledCertManager": cert_manager is None,
        }
        record = verify_record.record(inCluster=inside)
        self._known(verify_record=record)
        self.register_outputs(
            {
                verify_record.OUTPUT: record,
                "namespace": self._namespace.metadata.name,
                "injectionWebhookVersion": self.injection_webhook.version,
                "connectionOperatorVersion": self.connection_operator.version,
            }
        )

    def _make_namespace(
        self, name: str, spec: MlDiagnosticsManualSpec, *, preinstalled: bool
    ) -> core.Namespace:
        """The releases' namespace, marked with where cert-manager comes from (the policy pack reads it)."""
        # Adopted: the namespace `helm --create-namespace` made has no annotations; only the mark the policy
        # pack reads (cert-manager pre-installed) is added by the update that follows the import.
        mark = "preinstalled" if preinstalled else None if spec.adopt else "release"
        metadata: ObjectMetaArgsDict = {"name": compat.MLDIAGNOSTICS_NAMESPACE}
        if mark:
            metadata["annotations"] = {compat.CERT_MANAGER_ANNOTATION: mark}
        return core.Namespace(
            f"{name}-namespace",
            metadata=metadata,
            opts=pulumi.ResourceOptions(
                parent=self, import_=compat.MLDIAGNOSTICS_NAMESPACE if spec.adopt else None
            ),
        )

    def _release(
        self,
        name: str,
        part: str,
        release: str,
        default_chart: str,
        repository: str,
        chart_spec: ChartSpec,
        version: str,
        values: dict[str, Any],
        depends_on: list[pulumi.Resource],
        adopt: bool,
    ) -> Release:
        given: ChartArgs = {}
        if chart_spec.chart is not None:
            given["chart"] = chart_spec.chart
        if chart_spec.repository is not None:
            given["repository"] = chart_spec.repository
        chart, repo = chart_source(default_chart, repository, given)
        return Release(
            f"{name}-{part}",
            name=release,
            chart=chart,
            repository_opts={"repo": repo} if repo else None,
            version=version,
            namespace=self._namespace.metadata.name,
            values=values,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=depends_on, import_=_release_id(release, adopt)
            ),
        )


def _operator_values(spec: MlDiagnosticsManualSpec) -> tuple[str, dict[str, Any]]:
    op = spec.connection_operator
    args: dict[str, Any] = {"jax_version": spec.jax_version, "connection_operator": {"values": op.values}}
    if op.version is not None:
        args["connection_operator"]["version"] = op.version
    if op.args is not None:
        args["connection_operator"]["args"] = op.args
    return connection_operator_values(args)  # type: ignore[arg-type]


PART = Part(
    order=30,
    component="MlDiagnosticsManual",
    spec=MlDiagnosticsManualSpec,
    exports=("MlDiagnosticsManualArgs", "ChartArgs", "ConnectionOperatorArgs"),
)


__all__ = [
    "ChartArgs",
    "ConnectionOperatorArgs",
    "MlDiagnosticsManual",
    "MlDiagnosticsManualArgs",
    "chart_source",
    "connection_operator_values",
]
