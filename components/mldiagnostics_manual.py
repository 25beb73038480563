"""The manual ML diagnostics install: injection-webhook and connection-operator Helm releases.

For GKE before 1.35.0-gke.3065000 and self-managed clusters. Release names are the vendor's
(`mldiagnostics-injection-webhook`, `mldiagnostics-connection-operator`): its uninstall steps assume them.
Both releases go to the `gke-mldiagnostics` Namespace created here, and each `depends_on` the cert-manager
release (when this program installs it), not on each other. `adopt: true` imports the two releases
(`gke-mldiagnostics/<release>`) and the namespace the vendor's `helm upgrade --install` made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi_kubernetes.core import v1 as core
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs, RepositoryOptsArgs
from pulumi_kubernetes.meta.v1 import ObjectMetaArgs

from components import compat, lifecycle
from components.config_base import secret_inputs
from components.targets.kubernetes import ChartSettings, MlDiagnosticsManualSettings


def chart_source(default_chart: str, repository: str, chart: ChartSettings) -> tuple[str, str | None]:
    """(chart input, repository for repository_opts or None). OCI charts are a full oci:// URL, no repository."""
    name = chart.chart or default_chart
    repo = chart.repository or repository
    if name.startswith("oci://"):
        return name, None
    if repo.startswith("oci://"):
        return f"{repo.rstrip('/')}/{name}", None
    return name, repo


def connection_operator_values(settings: MlDiagnosticsManualSettings) -> tuple[str, dict[str, Any]]:
    """(chart version, values) for the connection-operator: JAX defaults, then user values, then explicit args."""
    if settings.jax_version is None:
        raise ValueError("manualInstall.jaxVersion is required for the manual install")
    default_version, default_args = compat.connection_operator_defaults(settings.jax_version)
    op = settings.connection_operator
    values: dict[str, Any] = {}
    if default_args is not None:
        values = _at(compat.CONNECTION_OPERATOR_ARGS_PATH, default_args)
    values = compat.deep_merge(values, op.values)
    if op.args is not None:
        values = compat.deep_merge(values, _at(compat.CONNECTION_OPERATOR_ARGS_PATH, list(op.args)))
    return op.version or default_version, values


def _release_id(release: str, adopt: bool) -> str | None:
    return lifecycle.k8s_id(compat.MLDIAGNOSTICS_NAMESPACE, release) if adopt else None


def _at(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(path):
        out = {key: out}
    return out


class MlDiagnosticsManual(pulumi.ComponentResource):
    namespace: core.Namespace
    injection_webhook: Release
    connection_operator: Release

    def __init__(
        self,
        name: str,
        settings: MlDiagnosticsManualSettings,
        cert_manager: Release | None,
        opts: pulumi.ResourceOptions | None = None,
        *,
        release_after: Sequence[pulumi.Resource] = (),
    ):
        """`cert_manager`: the cert-manager release to wait for; None when the cluster already runs cert-manager.
        `release_after`: what the releases must wait for besides cert-manager (e.g. node pools)."""
        super().__init__("mldiag:index:MlDiagnosticsManual", name, None, opts)
        adopt = settings.adopt
        # Adopted: the namespace `helm --create-namespace` made has no annotations; only the mark the policy
        # pack reads (cert-manager pre-installed) is added by the update that follows the import.
        mark = "preinstalled" if cert_manager is None else None if adopt else "release"
        self.namespace = core.Namespace(
            f"{name}-namespace",
            metadata=ObjectMetaArgs(
                name=compat.MLDIAGNOSTICS_NAMESPACE,
                annotations={compat.CERT_MANAGER_ANNOTATION: mark} if mark else None,
            ),
            opts=pulumi.ResourceOptions(
                parent=self, import_=compat.MLDIAGNOSTICS_NAMESPACE if adopt else None
            ),
        )
        after_cert_manager = [cert_manager] if cert_manager is not None else list(release_after)

        wh = settings.injection_webhook
        self.injection_webhook = self._release(
            name,
            "injection-webhook",
            compat.INJECTION_WEBHOOK_RELEASE,
            compat.INJECTION_WEBHOOK_CHART,
            settings.repository,
            wh,
            wh.version or compat.INJECTION_WEBHOOK_DEFAULT_VERSION,
            wh.values,
            after_cert_manager,
            adopt,
        )
        version, values = connection_operator_values(settings)
        self.connection_operator = self._release(
            name,
            "connection-operator",
            compat.CONNECTION_OPERATOR_RELEASE,
            compat.CONNECTION_OPERATOR_CHART,
            settings.repository,
            settings.connection_operator,
            version,
            values,
            after_cert_manager,
            adopt,
        )
        self.register_outputs(
            {
                "namespace": self.namespace.metadata.name,
                "injectionWebhookVersion": self.injection_webhook.version,
                "connectionOperatorVersion": self.connection_operator.version,
            }
        )

    def _release(
        self,
        name: str,
        part: str,
        release: str,
        default_chart: str,
        repository: str,
        chart_settings: ChartSettings,
        version: str,
        values: dict[str, Any],
        depends_on: list[pulumi.Resource],
        adopt: bool,
    ) -> Release:
        chart, repo = chart_source(default_chart, repository, chart_settings)
        return Release(
            f"{name}-{part}",
            ReleaseArgs(
                name=release,
                chart=chart,
                repository_opts=RepositoryOptsArgs(repo=repo) if repo else None,
                version=version,
                namespace=self.namespace.metadata.name,
                values=secret_inputs(values),
            ),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=depends_on, import_=_release_id(release, adopt)
            ),
        )
