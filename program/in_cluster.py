"""Config of what runs inside a cluster (shared by the `gkeClusters` and `kubernetesClusters` kinds).

`InClusterSettings` holds everything the in-cluster component (`ClusterMlDiagnostics`) needs: workload
namespaces, cert-manager, the manual install (injection-webhook, connection-operator) and Diagon.
Targets embed it BY INHERITANCE, so its keys sit flat on the target (`kubernetesClusters[0].diagon.image`,
`gkeClusters[0].diagon.image`): `class GkeClusterTarget(TargetBase, InClusterSettings)`, and the target
itself is passed as `settings` to `ClusterMlDiagnostics`. Its validators are mode-independent; checks that
apply only when the mode resolves to manual come from `manual_install_issues()`.

Example (self-managed):

    kubernetesClusters:
      - name: lab
        kubeconfig: {secure: ...}        # or `context: lab-admin` (ambient kubeconfig), or both
        mode: manual                     # manual | auto (= manual); managed is GKE-only
        workloadNamespaces:
          - {name: ai-workloads, create: true}
          - {name: default}              # existing: labelled by server-side apply
        certManager: {enabled: true}     # false: the cluster already runs cert-manager
        manualInstall: {jaxVersion: "0.8"}
        diagon: {enabled: true, image: ...:v2.1.0}
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import field_validator, model_validator

from ml_diagnostics import compat
from program import validators
from program.config_base import Model, raise_issues, secret_inputs
from program.verify_rbac import VerifyRbacSettings

if TYPE_CHECKING:
    from ml_diagnostics.in_cluster import InClusterArgs

# The policy pack's rules on what runs in a cluster, by environment (the gkeClusters and kubernetesClusters
# kinds both carry them). Options are the pack's (policies/README.md).
POLICY_DEFAULTS: dict[str, dict[str, Any]] = {
    "dev": {
        "k8s-images-pinned": "advisory",
        "helm-cert-manager-crds": "mandatory",
        "helm-mldiagnostics-requires-cert-manager": "mandatory",
    },
    "staging": {
        "k8s-images-pinned": {"enforcementLevel": "mandatory", "requireDigest": False},
        "helm-cert-manager-installcrds-deprecated": "advisory",
    },
    "prod": {
        "k8s-images-pinned": {"enforcementLevel": "mandatory", "requireDigest": False},
        "helm-cert-manager-installcrds-deprecated": "advisory",
    },
}

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class WorkloadNamespace(Model):
    """A namespace whose workloads opt in to the injection-webhook (`managed-mldiagnostics-gke=true`)."""

    name: str
    create: bool = False
    """True: the program creates (and owns) the namespace. False: it exists; only the label is applied."""
    labels: dict[str, str] = {}
    """Extra labels (created namespaces only; an existing namespace keeps its own labels untouched)."""
    adopt: bool = False
    """Take over a namespace made by `kubectl create namespace` + `kubectl label` (needs create: true)."""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return validators.check(validators.namespace_problem, v)

    @model_validator(mode="after")
    def _check(self) -> WorkloadNamespace:
        problems = []
        if self.labels and not self.create:
            problems.append(
                ("labels", "allowed only with create: true (existing namespaces keep their labels)")
            )
        if self.adopt and not self.create:
            problems.append(
                (
                    "adopt",
                    "needs create: true (adopt takes ownership of the namespace; with create: false it is only "
                    "labelled, which needs no adoption)",
                )
            )
        if compat.OPT_IN_LABEL in self.labels:
            problems.append((f"labels.{compat.OPT_IN_LABEL}", 'is set by the program to "true"; remove it'))
        problems += validators.k8s_labels_problems(
            {k: v for k, v in self.labels.items() if k != compat.OPT_IN_LABEL}, "labels"
        )
        raise_issues(problems)
        return self


class CertManagerSettings(Model):
    enabled: bool = True
    """False: the cluster already runs cert-manager (pre-installed); nothing is created and nothing waits on
    it.
    """
    version: str = compat.CERT_MANAGER_DEFAULT_VERSION
    """Chart version; decides the CRD values (installCRDs before v1.15.0, crds.* after)."""
    repository: str = compat.CERT_MANAGER_REPOSITORY
    """Helm repository of the cert-manager chart."""
    values: dict[str, Any] = {}
    """Extra chart values, deep-merged over the defaults (CRD values by version, leader election namespace).
    """
    adopt: bool = False
    """Take over the release of the vendor's `helm install cert-manager ...` (cert-manager/cert-manager)."""

    @model_validator(mode="after")
    def _check(self) -> CertManagerSettings:
        problems = []
        if self.adopt and not self.enabled:
            problems.append(
                ("adopt", "needs enabled: true (with enabled: false nothing is managed to adopt)")
            )
        try:
            compat.parse_semver(self.version)
        except ValueError as e:
            problems.append(("version", str(e)))
        else:
            if p := compat.cert_manager_values_problem(self.version, self.values):
                problems.append(("values", p))
        raise_issues(problems)
        return self


class ChartSettings(Model):
    """Override of one mldiagnostics chart: `chart` is a full oci:// URL or a chart name in `repository`."""

    chart: str | None = None
    """Chart name in `repository`, or a full oci:// URL."""
    version: str | None = None
    """Chart version; default from the version table."""
    repository: str | None = None
    """defaults to MlDiagnosticsManualSettings.repository"""
    values: dict[str, Any] = {}

    @field_validator("version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None:
            compat.parse_semver(v)
        return v


class ConnectionOperatorSettings(ChartSettings):
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


class MlDiagnosticsManualSettings(Model):
    """The manual install (GKE before 1.35.0-gke.3065000, self-managed): injection-webhook + connection-operator."""

    jax_version: str | None = None
    """JAX version of the workloads: picks the connection-operator chart and args. Required for manual mode.
    """
    repository: str = compat.MLDIAGNOSTICS_REPOSITORY
    """Where both charts live: an oci:// registry path or an https Helm repository."""
    injection_webhook: ChartSettings = ChartSettings()
    """Overrides for the injection-webhook chart (default 0.25.0)."""
    connection_operator: ConnectionOperatorSettings = ConnectionOperatorSettings()
    """Overrides for the connection-operator chart (default by JAX version)."""
    adopt: bool = False
    """Take over the vendor's `helm upgrade --install` releases and their gke-mldiagnostics namespace."""

    @model_validator(mode="after")
    def _check(self) -> MlDiagnosticsManualSettings:
        problems = []
        if self.jax_version is not None:
            try:
                compat.connection_operator_defaults(self.jax_version)
            except ValueError as e:
                problems.append(("jaxVersion", str(e)))
            else:
                v = self.connection_operator.version
                if v is not None and (p := compat.connection_operator_chart_problem(self.jax_version, v)):
                    problems.append(("connectionOperator.version", p))
        if not self.repository.startswith(("oci://", "https://", "http://")):
            problems.append(("repository", "must be an oci://, https:// or http:// URL"))
        raise_issues(problems)
        return self


class DiagonSettings(Model):
    """The Diagon profiling DaemonSet (preview)."""

    enabled: bool = False
    namespace: str = compat.DIAGON_DEFAULT_NAMESPACE
    create_namespace: bool = True
    """False: the namespace exists already (e.g. kube-system) and is not created or owned by the program."""
    image: str = compat.DIAGON_DEFAULT_IMAGE
    """Daemon image; pull policy Always only for :latest. Pin a tag or digest outside dev."""
    service_account: str = "diagon-daemon"
    """Kubernetes ServiceAccount the daemon runs as (created)."""
    gcp_service_account: str | None = None
    """GKE Workload Identity: the Google service account the daemon's Kubernetes SA acts as."""
    accelerator_node_labels: list[str] | None = None
    """Runs on nodes carrying any of these labels (node affinity `Exists`); empty list: every node. Unset:
    GKE the GKE accelerator labels (and nvidia.com/gpu.present); self-managed every node (the vendor manifest).
    """
    node_selector: dict[str, str] | None = None
    """Overrides the accelerator affinity: run only on nodes with exactly these labels."""
    max_unavailable: int | str = 1
    """RollingUpdate maxUnavailable (count or percentage)."""
    adopt: bool = False
    """Take over what `kubectl apply -f diagon-daemonset.yaml` made (the DaemonSet, its ServiceAccount and, with
    createNamespace, the namespace); placement then defaults to the manifest's (none)."""

    @field_validator("namespace", "service_account")
    @classmethod
    def _names(cls, v: str) -> str:
        return validators.check(validators.dns_label_problem, v)

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        compat.parse_image(v)
        return v

    @field_validator("gcp_service_account")
    @classmethod
    def _gsa(cls, v: str | None) -> str | None:
        if v is not None:
            validators.check(validators.gcp_service_account_problem, v)
        return v

    @field_validator("max_unavailable")
    @classmethod
    def _max_unavailable(cls, v: int | str) -> int | str:
        if (isinstance(v, int) and v < 1) or (
            isinstance(v, str) and not re.fullmatch(r"([1-9]\d?|100)%", v, re.ASCII)
        ):
            raise ValueError("must be a positive integer or a percentage like 10%")
        return v

    def node_labels(self, self_managed: bool) -> list[str]:
        """The labels of the nodes Diagon runs on (any of them); empty: every node, like the vendor manifest."""
        if self.accelerator_node_labels is not None:
            return list(self.accelerator_node_labels)
        return [] if self_managed or self.adopt else list(compat.ACCELERATOR_NODE_LABELS)

    @model_validator(mode="after")
    def _check(self) -> DiagonSettings:
        problems = []
        if self.create_namespace and self.namespace in SYSTEM_NAMESPACES:
            problems.append(
                (
                    "namespace",
                    f"{self.namespace!r} always exists; set createNamespace: false to deploy into it",
                )
            )
        for i, k in enumerate(self.accelerator_node_labels or ()):
            if p := validators.label_key_problem(k):
                problems.append((f"acceleratorNodeLabels[{i}]", p))
        problems += validators.k8s_labels_problems(self.node_selector or {}, "nodeSelector")
        if self.node_selector is not None and not self.node_selector:
            problems.append(("nodeSelector", "must name at least one label; omit it for accelerator nodes"))
        raise_issues(problems)
        return self


class InClusterSettings(Model):
    """Everything that runs inside one cluster. Embedded by inheritance in the cluster targets."""

    workload_namespaces: list[WorkloadNamespace] = []
    """Namespaces labelled managed-mldiagnostics-gke=true (the webhook's opt-in)."""
    cert_manager: CertManagerSettings = CertManagerSettings()
    """cert-manager, the injection-webhook's prerequisite (manual mode only)."""
    manual_install: MlDiagnosticsManualSettings = MlDiagnosticsManualSettings()
    """injection-webhook and connection-operator releases (manual mode only)."""
    diagon: DiagonSettings = DiagonSettings()
    """The Diagon profiling DaemonSet (preview)."""
    verify_rbac: VerifyRbacSettings = VerifyRbacSettings()
    """Optional read-only role for `python -m mldiag.verify` (README "After `pulumi up`")."""

    @field_validator("workload_namespaces")
    @classmethod
    def _unique(cls, v: list[WorkloadNamespace]) -> list[WorkloadNamespace]:
        seen: dict[str, int] = {}
        problems = []
        for i, ns in enumerate(v):
            if ns.name in seen:
                problems.append(
                    (
                        f"[{i}].name",
                        f"duplicate namespace {ns.name!r} (also workloadNamespaces[{seen[ns.name]}])",
                    )
                )
            seen.setdefault(ns.name, i)
        raise_issues(problems)
        return v

    @model_validator(mode="after")
    def _in_cluster_check(self) -> InClusterSettings:
        problems = []
        # Namespaces the program itself creates in this cluster.
        reserved = {
            compat.MLDIAGNOSTICS_NAMESPACE: "the manual install",
            compat.CERT_MANAGER_NAMESPACE: "cert-manager",
        }
        if self.diagon.enabled and self.diagon.create_namespace:
            reserved[self.diagon.namespace] = "diagon.namespace"
        for i, ns in enumerate(self.workload_namespaces):
            if ns.create and ns.name in reserved:
                problems.append(
                    (
                        f"workloadNamespaces[{i}].name",
                        f"namespace {ns.name!r} is already created by {reserved[ns.name]}; use create: false or another name",
                    )
                )
        raise_issues(problems)
        return self


def _chart_args(c: ChartSettings) -> dict[str, Any]:
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
            "max_unavailable": str(d.max_unavailable),
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


def manual_install_issues(settings: InClusterSettings) -> list[tuple[str, str]]:
    """Problems (relative path, message) that apply only when the mode resolves to manual."""
    if settings.manual_install.jax_version is None:
        return [
            (
                "manualInstall.jaxVersion",
                f"required for the manual install (it picks the connection-operator chart and args); supported: {compat.SUPPORTED_JAX}",
            )
        ]
    return []
