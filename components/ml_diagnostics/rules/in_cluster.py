"""Rules of what runs inside one cluster: workload namespaces, cert-manager, the manual install (injection
webhook and connection operator), Diagon and the verify role; and of `ClusterMlDiagnostics` as a whole.

The stack file's cluster targets (gkeClusters, kubernetesClusters) carry these keys flat on the target, so
the program's models are these Specs with the program's defaults (Diagon and the verify role off unless
enabled, the manual install's settings always there).

Diagon's own rules are rules/diagon.py, the verify role's rules/verify_rbac.py (both named here too).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import field_validator, model_validator

from ml_diagnostics import compat
from ml_diagnostics.rules import names
from ml_diagnostics.rules.base import (
    Input,
    Issues,
    MapKey,
    Path,
    Spec,
    check,
    enum_of,
    key,
    raise_issues,
)
from ml_diagnostics.rules.chart_values import cert_manager_values_problems
from ml_diagnostics.rules.diagon import DiagonSpec
from ml_diagnostics.rules.verify_rbac import VerifyRbacSpec


class MlDiagnosticsMode(StrEnum):
    """How ML Diagnostics reaches a cluster."""

    MANAGED = "managed"
    """GKE >= 1.35.0-gke.3065000 with the managed flag: GKE runs the webhook and operator."""
    MANUAL = "manual"
    """cert-manager, the injection-webhook and the connection-operator as Helm releases."""
    AUTO = "auto"
    """By the cluster's GKE version: managed from 1.35.0-gke.3065000, manual before and on self-managed
    clusters."""


if TYPE_CHECKING:
    Mode = MlDiagnosticsMode
else:
    Mode = enum_of(MlDiagnosticsMode)  # also "managed", "manual", "auto"


class WorkloadNamespaceSpec(Spec):
    """A namespace whose workloads opt in to the injection-webhook (`managed-mldiagnostics-gke=true`)."""

    name: str
    """The namespace's name (part of the child resource's name)."""
    create: bool = False
    """True: it is created and owned here. False: it exists; only the opt-in label is applied, by server-side
    apply, and its other labels stay untouched."""
    labels: dict[str, Input[str]] = {}
    """Extra labels (created namespaces only; an existing namespace keeps its own labels untouched)."""
    adopt: bool = False
    """Take over a namespace made by `kubectl create namespace` + `kubectl label` (needs create: true)."""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check(names.namespace_problem, v)

    @model_validator(mode="after")
    def _check(self) -> WorkloadNamespaceSpec:
        problems: list[tuple[Path, str]] = []
        if self.labels and not self.create:
            problems.append(
                (
                    ("labels",),
                    f"allowed only with {key('create')}: true (existing namespaces keep their labels)",
                )
            )
        if self.adopt and not self.create:
            problems.append(
                (
                    ("adopt",),
                    f"needs {key('create')}: true (adopt takes ownership of the namespace; with create: false it "
                    "is only labelled, which needs no adoption)",
                )
            )
        if compat.OPT_IN_LABEL in self.labels:
            problems.append(
                (("labels", MapKey(compat.OPT_IN_LABEL)), 'is set to "true" by the component; remove it')
            )
        problems += names.k8s_labels_problems(
            {k: v for k, v in self.labels.items() if k != compat.OPT_IN_LABEL}, ("labels",)
        )
        raise_issues(problems)
        return self


def unique_namespaces(namespaces: list[WorkloadNamespaceSpec], where: str) -> list[tuple[Path, str]]:
    seen: dict[str, int] = {}
    problems: list[tuple[Path, str]] = []
    for i, ns in enumerate(namespaces):
        if ns.name in seen:
            problems.append(
                ((i, "name"), f"duplicate namespace {ns.name!r} (also {key(where)}[{seen[ns.name]}])")
            )
        seen.setdefault(ns.name, i)
    return problems


class WorkloadOptInSpec(Spec):
    """Namespaces labelled managed-mldiagnostics-gke=true (the webhook's opt-in)."""

    namespaces: list[WorkloadNamespaceSpec]
    """The namespaces to label `managed-mldiagnostics-gke=true`."""

    @field_validator("namespaces")
    @classmethod
    def _unique(cls, v: list[WorkloadNamespaceSpec]) -> list[WorkloadNamespaceSpec]:
        raise_issues(unique_namespaces(v, "namespaces"))
        return v


class CertManagerSpec(Spec):
    """cert-manager, the injection-webhook's prerequisite (manual mode only)."""

    enabled: bool = True
    """False: the cluster already runs cert-manager (pre-installed); nothing is created and nothing waits on
    it."""
    version: str = compat.CERT_MANAGER_DEFAULT_VERSION
    """Chart version; decides the CRD values (installCRDs before v1.15.0, crds.* after)."""
    repository: str = compat.CERT_MANAGER_REPOSITORY
    """Helm repository of the cert-manager chart."""
    values: dict[str, Any] = {}
    """Extra chart values, deep-merged over the defaults (CRD values by version, leader election namespace);
    checked against the chart version's values.schema.json (from v1.16.0; docs/constraints.md)."""
    adopt: bool = False
    """Take over the release of the vendor's `helm install cert-manager ...` (cert-manager/cert-manager)."""

    @model_validator(mode="after")
    def _check(self) -> CertManagerSpec:
        problems: list[tuple[Path, str]] = []
        if self.adopt and not self.enabled:
            problems.append(
                (
                    ("adopt",),
                    f"needs {key('enabled')}: true (with enabled: false nothing is managed to adopt)",
                )
            )
        if p := names.helm_repository_problem(self.repository):
            problems.append((("repository",), p))
        try:
            compat.parse_semver(self.version)
        except ValueError as e:
            problems.append((("version",), str(e)))
        else:
            if p := compat.cert_manager_values_problem(self.version, self.values):
                problems.append((("values",), p))
            problems += cert_manager_values_problems(self.version, self.values)
        raise_issues(problems)
        return self


class ChartSpec(Spec):
    """Override of one mldiagnostics chart: `chart` is a full oci:// URL or a chart name in `repository`."""

    chart: str | None = None
    """Chart name in `repository`, or a full oci:// URL."""
    version: str | None = None
    """Chart version; default from the version table."""
    repository: str | None = None
    """Defaults to the manual install's `repository`."""
    values: dict[str, Any] = {}
    """Extra chart values."""

    @field_validator("version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None:
            compat.parse_semver(v)
        return v

    @field_validator("repository")
    @classmethod
    def _repository(cls, v: str | None) -> str | None:
        return v if v is None else check(names.helm_repository_problem, v)

    @field_validator("chart")
    @classmethod
    def _chart(cls, v: str | None) -> str | None:
        if v is not None and "://" in v and not v.startswith("oci://"):
            raise ValueError("must be a chart name in repository, or a full oci:// URL")
        return v


class ConnectionOperatorSpec(ChartSpec):
    """Override of the connection-operator chart (default version by JAX version)."""

    args: list[str] | None = None
    """Controller args; replaces the chart's default args. Default: by JAX version (only 0.8.x sets them)."""

    @field_validator("args")
    @classmethod
    def _args(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or any(not a.startswith("-") for a in v)):
            raise ValueError(
                "must be a non-empty list of flags like --sidecar-timeout=65m (it replaces the chart's args)"
            )
        return v


class MlDiagnosticsManualSpec(Spec):
    """The manual install (GKE before 1.35.0-gke.3065000, self-managed): injection-webhook + connection-operator."""

    jax_version: str | None = None
    """JAX version of the workloads: picks the connection-operator chart and args. Required for manual mode."""
    repository: str = compat.MLDIAGNOSTICS_REPOSITORY
    """Where both charts live: an oci:// registry path or an https Helm repository."""
    injection_webhook: ChartSpec = ChartSpec()
    """Overrides for the injection-webhook chart (default 0.25.0)."""
    connection_operator: ConnectionOperatorSpec = ConnectionOperatorSpec()
    """Overrides for the connection-operator chart (default by JAX version)."""
    adopt: bool = False
    """Take over the vendor's `helm upgrade --install` releases and their gke-mldiagnostics namespace."""

    @model_validator(mode="after")
    def _check(self) -> MlDiagnosticsManualSpec:
        problems: list[tuple[Path, str]] = []
        if self.jax_version is not None:
            try:
                compat.connection_operator_defaults(self.jax_version)
            except ValueError as e:
                problems.append((("jax_version",), str(e)))
            else:
                v = self.connection_operator.version
                if v is not None and (p := compat.connection_operator_chart_problem(self.jax_version, v)):
                    problems.append((("connection_operator", "version"), p))
        if p := names.helm_repository_problem(self.repository):
            problems.append((("repository",), p))
        raise_issues(problems)
        return self


class InClusterSpec(Spec):
    """Everything that runs inside one cluster besides the mode."""

    workload_namespaces: list[WorkloadNamespaceSpec] = []
    """Namespaces labelled managed-mldiagnostics-gke=true (the webhook's opt-in)."""
    cert_manager: CertManagerSpec = CertManagerSpec()
    """cert-manager, the injection-webhook's prerequisite (manual mode only)."""
    manual_install: MlDiagnosticsManualSpec | None = None
    """injection-webhook and connection-operator releases (manual mode only; required there)."""
    diagon: DiagonSpec | None = None
    """The Diagon profiling DaemonSet (preview); deployed when given (and enabled)."""
    verify_rbac: VerifyRbacSpec | None = None
    """A read-only role for `mldiag verify`; created when given (and enabled)."""

    @field_validator("workload_namespaces")
    @classmethod
    def _unique(cls, v: list[WorkloadNamespaceSpec]) -> list[WorkloadNamespaceSpec]:
        raise_issues(unique_namespaces(v, "workload_namespaces"))
        return v

    @property
    def diagon_on(self) -> DiagonSpec | None:
        return self.diagon if self.diagon is not None and self.diagon.enabled else None

    @property
    def verify_rbac_on(self) -> VerifyRbacSpec | None:
        return self.verify_rbac if self.verify_rbac is not None and self.verify_rbac.enabled else None

    @model_validator(mode="after")
    def _in_cluster_check(self) -> InClusterSpec:
        problems: list[tuple[Path, str]] = []
        # Namespaces this cluster's own parts create.
        reserved = {
            compat.MLDIAGNOSTICS_NAMESPACE: "the manual install",
            compat.CERT_MANAGER_NAMESPACE: "cert-manager",
        }
        if (d := self.diagon_on) is not None and d.create_namespace:
            reserved[d.namespace] = key("diagon", "namespace")
        for i, ns in enumerate(self.workload_namespaces):
            if ns.create and ns.name in reserved:
                problems.append(
                    (
                        ("workload_namespaces", i, "name"),
                        f"namespace {ns.name!r} is already created by {reserved[ns.name]}; use create: false or "
                        "another name",
                    )
                )
        raise_issues(problems)
        return self

    def manual_install_problems(self) -> list[tuple[Path, str]]:
        """Problems that apply only when the mode resolves to manual."""
        if self.manual_install is None or self.manual_install.jax_version is None:
            return [
                (
                    ("manual_install", "jax_version"),
                    "required for the manual install (it picks the connection-operator chart and args); "
                    f"supported: {compat.SUPPORTED_JAX}",
                )
            ]
        return []


class ClusterMlDiagnosticsSpec(InClusterSpec):
    """ML Diagnostics inside one cluster: managed (GKE runs it) or manual (Helm releases)."""

    mode: Mode
    """managed (GKE >= 1.35.0-gke.3065000 with the cluster's managed flag on), manual, or auto (by
    `gke_version`: managed from 1.35.0-gke.3065000; manual before it and with `self_managed`)."""
    kubeconfig: Input[str] | None = None
    """Kubeconfig of the cluster (a secret). Unset: the `providers` option's Kubernetes provider is used."""
    context: Input[str] | None = None
    """Kubeconfig context (with `kubeconfig`, or of the ambient kubeconfig)."""
    gke_version: str | None = None
    """The cluster's GKE version when known; decides `auto` and the `workloadMonitoring` output."""
    self_managed: bool = False
    """Not GKE: Diagon's default placement is every node, no automatic workload monitoring, never managed."""

    @field_validator("gke_version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None:
            compat.GkeVersion.parse(v)
        return v

    @property
    def resolved_mode(self) -> MlDiagnosticsMode:
        return MlDiagnosticsMode(compat.resolve_mode(self.mode.value, self.gke_version, self.self_managed))

    @model_validator(mode="after")
    def _mode_check(self) -> ClusterMlDiagnosticsSpec:
        try:
            resolved = self.resolved_mode
        except ValueError as e:
            raise Issues([(("mode",), str(e))]) from None
        raise_issues(self.manual_install_problems() if resolved is MlDiagnosticsMode.MANUAL else [])
        return self
