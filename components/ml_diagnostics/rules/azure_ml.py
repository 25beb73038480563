"""Rules of the Azure Machine Learning extension (`AzureMlExtension`) on an AKS or Arc cluster.

They are the ones `az k8s-extension create --extension-type Microsoft.AzureML.Kubernetes` enforces on the
client (partner_extensions/AzureMLKubernetes.py and custom.py of the k8s-extension CLI), plus the Azure ML extension docs'
limits. `AzureMlExtensionRules` holds every key a stack file's azureMl target has too; `AzureMlExtensionSpec`
adds what only a program passes (how the verify role reaches the cluster).

The cluster it goes on is rules/azure_cluster.py (named here too).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import field_validator, model_validator

from ml_diagnostics.rules import names
from ml_diagnostics.rules.azure_cluster import MIN_HA_NODES, AzureClusterSpec
from ml_diagnostics.rules.base import (
    Input,
    Path,
    Spec,
    check,
    checked,
    key,
    phrase,
    raise_issues,
)
from ml_diagnostics.rules.verify_rbac import VerifyRbacSpec

ROUTER_SERVICE_TYPES = ("LoadBalancer", "NodePort", "ClusterIP")
_ROUTER_BY_LOWER = {t.lower(): t for t in ROUTER_SERVICE_TYPES}
_ROUTER_ALLOWED = "'LoadBalancer', 'NodePort' or 'ClusterIP'"
_KEY_LABELS = ("PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY")

# The extension name becomes the Helm release name (and prefixes e.g. `<name>-kube-state-metrics`).
_EXTENSION_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?")
_RELEASE_TRAIN = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_DNS_NAME = re.compile(
    r"(\*\.)?([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
)
# nginxIngress.controller: an IngressClass controller value, <domain>/<path> (the chart default k8s.io/ingress-nginx)
_INGRESS_CONTROLLER = re.compile(
    r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[A-Za-z0-9][-A-Za-z0-9_./]{0,62}", re.ASCII
)
NGINX_DEFAULT_CONTROLLER = "k8s.io/ingress-nginx"


def _secret_name_problem(name: str) -> str | None:
    return names.dns_subdomain_problem(name, "a Kubernetes secret name")


VERIFY_ACCESS = phrase(
    stack="verifyAccess (a kubeconfig secret, or aksUserCredentials on AKS)",
    args="kubeconfig (a secret), or aks_user_credentials on AKS",
)

_PEM_LABEL = re.compile(r"[A-Z0-9 ]{1,40}")
_PEM_BODY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=:,- \t\r\n")


def _pem_labels(text: str) -> list[str]:
    """Labels of the complete PEM blocks in `text`: one left-to-right scan with str.find (linear; a regex
    with a lazy body and a backreference was quadratic on a header followed by many spaces)."""
    labels, pos = [], 0
    while (start := text.find("-----BEGIN ", pos)) != -1:
        head_end = text.find("-----", start + 11)
        if head_end == -1:
            break
        label = text[start + 11 : head_end]
        end_marker = f"-----END {label}-----"
        end = text.find(end_marker, head_end + 5)
        body = text[head_end + 5 : end] if end != -1 else ""
        if end != -1 and _PEM_LABEL.fullmatch(label) and body.strip() and set(body) <= _PEM_BODY:
            labels.append(label)
            pos = end + len(end_marker)
        else:
            pos = head_end + 5
    return labels


def pem_problem(text: str, want: Literal["certificate", "private key"]) -> str | None:
    """Why PEM text is unusable for the extension (None when fine)."""
    if not text.isascii():
        return "must be ASCII PEM text (the CLI reads PEM files as ASCII)"
    # Checked before the shape: an encrypted key is a PEM, just one the extension cannot use.
    if "ENCRYPTED" in text:
        return (
            "passphrase-protected (ENCRYPTED) PEM is not supported by the Azure ML extension; "
            "provide the unencrypted PEM (e.g. `openssl pkey -in key.pem -out plain.pem`)"
        )
    labels = _pem_labels(text)
    if want == "certificate" and "CERTIFICATE" not in labels:
        return (
            "must be PEM text with a '-----BEGIN CERTIFICATE-----' block (the certificate itself, not a path)"
        )
    if want == "private key" and not any(label in _KEY_LABELS for label in labels):
        return (
            "must be PEM text with a '-----BEGIN PRIVATE KEY-----' (or RSA/EC PRIVATE KEY) block "
            "(the key itself, not a path)"
        )
    return None


class InferenceSpec(Spec):
    """Inference settings of the extension (the CLI's --config inference keys)."""

    enabled: bool = False
    """Enable inference (enableInference)."""
    router_service_type: str | None = None
    """inferenceRouterServiceType: LoadBalancer, NodePort or ClusterIP, any case in; the canonical spelling out."""
    internal_load_balancer_provider: Literal["azure"] | None = None
    """AKS only: `azure` puts the router behind an internal load balancer."""
    allow_insecure_connections: bool | None = None
    """HTTP inference endpoints (dev/test only); refused in prod by policy."""
    ssl_cname: str | None = None
    """CNAME of the HTTPS inference endpoint; required unless insecure."""
    ssl_secret: Annotated[str | None, checked(_secret_name_problem)] = None
    """Name of a Kubernetes secret in the `azureml` namespace holding cert.pem and key.pem."""
    ssl_cert_pem: Input[str] | None = None
    """TLS certificate: PEM text (not a path), a secret; sent base64-encoded as a protected setting."""
    ssl_key_pem: Input[str] | None = None
    """TLS private key: PEM text (unencrypted), a secret; sent base64-encoded as a protected setting."""
    router_ha: bool | None = None
    """inferenceRouterHA: 3 router replicas (needs at least 3 nodes); unset: derived from the node count like
    the CLI."""

    @field_validator("router_service_type")
    @classmethod
    def _router_service_type(cls, v: str | None) -> str | None:
        if v is None:
            return None
        canonical = _ROUTER_BY_LOWER.get(v.lower())
        if canonical is None:
            raise ValueError(f"must be one of {_ROUTER_ALLOWED} (any case)")
        return canonical

    @field_validator("ssl_cname")
    @classmethod
    def _ssl_cname(cls, v: str | None) -> str | None:
        if v is not None and not _DNS_NAME.fullmatch(v):
            raise ValueError("must be a DNS name such as ml.example.com")
        return v

    @field_validator("ssl_cert_pem")
    @classmethod
    def _cert_pem(cls, v: Any) -> Any:
        if isinstance(v, str) and (p := pem_problem(v, "certificate")):
            raise ValueError(p)
        return v

    @field_validator("ssl_key_pem")
    @classmethod
    def _key_pem(cls, v: Any) -> Any:
        if isinstance(v, str) and (p := pem_problem(v, "private key")):
            raise ValueError(p)
        return v

    @property
    def https_material(self) -> bool:
        """True when the CLI would consider SSL enabled: both PEMs or an sslSecret."""
        return bool((self.ssl_cert_pem and self.ssl_key_pem) or self.ssl_secret)


class AzureMlExtensionRules(Spec):
    """The Azure Machine Learning extension on one cluster: every key a stack file's azureMl target has too."""

    cluster: AzureClusterSpec
    """The cluster."""
    extension_name: str | None
    """ARM extension name (also the Helm release name)."""
    training: bool = False
    """enableTraining: training jobs and batch scoring."""
    inference: InferenceSpec = InferenceSpec()
    """Inference settings."""
    node_selector: dict[str, str] = {}
    """Restrict the extension and ML workloads to nodes with these labels."""
    install_nvidia_device_plugin: bool | None = None
    """Install the NVIDIA device plugin (default false)."""
    install_prom_op: bool | None = None
    """Install the Prometheus operator (default true). Set false when the cluster already runs one: two
    operators clash (health check E45002 PROMETHEUS_CONFLICT); the existing one must then watch the azureml
    namespace (troubleshooting guide, Prometheus operator)."""
    install_volcano: bool | None = None
    """Install the Volcano scheduler (default true). Set false when the cluster already runs Volcano: its CRDs
    (jobs.batch.volcano.sh, ...) then belong to another release and the install fails with "invalid ownership
    metadata" (troubleshooting guide, Volcano Scheduler); the existing one needs the extension's scheduler config."""
    install_dcgm_exporter: bool | None = None
    """Install dcgm-exporter for GPU metrics (default false)."""
    version: str | None = None
    """Pin the extension version (needs autoUpgradeMinorVersion false; prod requires a pin, policy
    azureml-version-pinned). `az k8s-extension extension-types list-versions-by-cluster` lists the versions a
    cluster offers; one it does not fails with "Chart path not found"."""
    auto_upgrade_minor_version: bool | None = None
    """Let Azure upgrade minor versions (default true)."""
    release_train: str | None = None
    """Release train (default stable)."""
    domain: str | None = None
    """The extension's `domain` setting, sent as given; unset: `<cluster.location>.cloudapp.azure.com` with the
    location as sent (`eastus.cloudapp.azure.com` for `East US`)."""
    nginx_ingress_controller: str | None = None
    """AKS: the controller class of the extension's nginx ingress (nginxIngress.controller, default
    k8s.io/ingress-nginx). Set another one, e.g. k8s.io/amlarc-ingress-nginx, when the cluster already runs an
    nginx ingress controller of the default class: two would clash (troubleshooting guide, Ingress Nginx
    controller)."""
    verify_rbac: VerifyRbacSpec | None = None
    """A read-only role holding exactly what verify reads in the cluster (created through the verify access)."""
    adopt: bool = False
    """Take over what `az k8s-extension create` made: the extension and, on Arc, its relay resources."""

    @field_validator("nginx_ingress_controller")
    @classmethod
    def _nginx_controller(cls, v: str | None) -> str | None:
        if v is not None and not _INGRESS_CONTROLLER.fullmatch(v):
            raise ValueError(
                "must be an ingress controller class <domain>/<name>, e.g. k8s.io/amlarc-ingress-nginx"
            )
        return v

    @field_validator("domain")
    @classmethod
    def _domain(cls, v: str | None) -> str | None:
        if v is not None and (v.startswith("*") or not _DNS_NAME.fullmatch(v)):
            raise ValueError("must be a DNS name such as contoso.internal (no scheme, no wildcard)")
        return v

    @field_validator("extension_name")
    @classmethod
    def _extension_name(cls, v: str | None) -> str | None:
        if v is not None and not _EXTENSION_NAME.fullmatch(v):
            raise ValueError(
                "must be 1-53 characters of lowercase letters, digits and '-', starting and ending with a "
                "letter or digit (it becomes the Helm release name)"
            )
        return v

    @field_validator("version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        return v if v is None else check(names.extension_version_problem, v)

    @field_validator("release_train")
    @classmethod
    def _release_train(cls, v: str | None) -> str | None:
        if v is not None and not _RELEASE_TRAIN.fullmatch(v):
            raise ValueError("must be a release train name such as stable or preview")
        return v

    @field_validator("node_selector")
    @classmethod
    def _node_selector(cls, v: dict[str, str]) -> dict[str, str]:
        raise_issues(names.k8s_labels_problems(v, ()))
        return v

    # How the verify role reaches the cluster: flat keys of a program's Args, `verifyAccess` in a stack file.
    def verify_access_given(self) -> bool:
        raise NotImplementedError

    def aks_user_credentials_at(self) -> Path | None:
        """Where AKS user credentials are asked for (None: they are not)."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _rules(self) -> AzureMlExtensionRules:
        problems: list[tuple[Path, str]] = []
        inf = self.inference
        cluster = self.cluster
        if not (self.training or inf.enabled):
            problems.append(
                (
                    ("training",),
                    f"either {key('training')} or {key('inference', 'enabled')} must be true (the extension is "
                    "installed for training, inference or both)",
                )
            )
        if inf.enabled:
            problems += self._inference_rules()
        else:
            stray = [
                key(name)
                for name in InferenceSpec.model_fields
                if name != "enabled" and getattr(inf, name) is not None
            ]
            if stray:
                problems.append(
                    (
                        ("inference",),
                        f"{', '.join(stray)} only apply when {key('inference', 'enabled')} is true; "
                        f"set {key('inference', 'enabled')}: true or remove them",
                    )
                )
        if self.version is not None and self.auto_upgrade_minor_version is not False:
            problems.append(
                (
                    ("auto_upgrade_minor_version",),
                    f"must be false to pin version {self.version!r} "
                    f"(set {key('auto_upgrade_minor_version')}: false, or remove version to follow the release "
                    "train)",
                )
            )
        if cluster.openshift and cluster.kind != "arc":
            problems.append(
                (
                    ("cluster", "openshift"),
                    "only for kind arc (OpenShift and ARO clusters are connected through Azure Arc); "
                    "allowed for kind aks: false",
                )
            )
        if self.nginx_ingress_controller is not None and cluster.kind != "aks":
            problems.append(
                (
                    ("nginx_ingress_controller",),
                    "only for kind aks: the extension installs its nginx ingress on AKS, not on Arc",
                )
            )
        at = self.aks_user_credentials_at()
        if at is not None and cluster.kind != "aks":
            problems.append((at, "only for kind aks; an Arc cluster needs a kubeconfig secret"))
        if self.verify_rbac is not None and self.verify_rbac.enabled and not self.verify_access_given():
            problems.append((("verify_rbac",), f"needs {VERIFY_ACCESS}: the role is created through it"))
        if cluster.kind == "arc" and not cluster.name[0].isalpha():
            problems.append(
                (
                    ("cluster", "name"),
                    "must start with a letter for kind arc (the Azure Relay namespace name is derived from it)",
                )
            )
        raise_issues(problems)
        return self

    def _inference_rules(self) -> list[tuple[Path, str]]:
        inf = self.inference
        problems: list[tuple[Path, str]] = []
        if inf.router_service_type is None:
            problems.append(
                (
                    ("inference", "router_service_type"),
                    f"required when {key('inference', 'enabled')} is true; allowed: {_ROUTER_ALLOWED}",
                )
            )
        if bool(inf.ssl_cert_pem) != bool(inf.ssl_key_pem):
            missing, given = (
                ("ssl_key_pem", "ssl_cert_pem") if inf.ssl_cert_pem else ("ssl_cert_pem", "ssl_key_pem")
            )
            problems.append(
                (("inference", missing), f"required when {key(given)} is set (give both PEMs or neither)")
            )
        elif inf.ssl_cert_pem and inf.ssl_secret:
            problems.append(
                (
                    ("inference", "ssl_secret"),
                    f"set either {key('ssl_secret')} or {key('ssl_cert_pem')} and {key('ssl_key_pem')}, not both",
                )
            )
        elif not inf.https_material and not inf.allow_insecure_connections:
            problems.append(
                (
                    ("inference",),
                    f"HTTPS (the default) needs {key('ssl_cname')} and either {key('ssl_secret')} or both "
                    f"{key('ssl_cert_pem')} and {key('ssl_key_pem')}; for an HTTP endpoint (dev/test only) set "
                    f"{key('allow_insecure_connections')}: true",
                )
            )
        if inf.https_material and not inf.ssl_cname:
            problems.append(
                (
                    ("inference", "ssl_cname"),
                    f"required when HTTPS is configured ({key('ssl_secret')} or {key('ssl_cert_pem')} and "
                    f"{key('ssl_key_pem')})",
                )
            )
        if inf.internal_load_balancer_provider is not None:
            if self.cluster.kind != "aks":
                problems.append(
                    (
                        ("inference", "internal_load_balancer_provider"),
                        f"only allowed on AKS clusters ({key('cluster', 'kind')}: aks); remove it for kind arc",
                    )
                )
            elif inf.router_service_type == "NodePort":
                problems.append(
                    (
                        ("inference", "internal_load_balancer_provider"),
                        f"not allowed with {key('router_service_type')} NodePort; allowed with LoadBalancer or "
                        "ClusterIP",
                    )
                )
        if inf.router_ha and self.cluster.small:
            problems.append(
                (
                    ("inference", "router_ha"),
                    f"true needs at least {MIN_HA_NODES} nodes ({key('cluster', 'node_count')} is "
                    f"{self.cluster.node_count}); set {key('router_ha')}: false or leave it unset",
                )
            )
        return problems


class AzureMlExtensionSpec(AzureMlExtensionRules):
    """The Azure Machine Learning extension on one cluster, with what `az k8s-extension create` sends."""

    extension_name: str
    """ARM extension name (also the Helm release name)."""
    kubeconfig: Input[str] | None = None
    """Kubeconfig (a secret) the verify role is created through."""
    kubeconfig_context: str | None = None
    """Context of that kubeconfig (default: its current context)."""
    aks_user_credentials: bool | None = None
    """AKS: create the verify role through the cluster user credentials ARM lists (listClusterUserCredential)."""

    def verify_access_given(self) -> bool:
        return self.kubeconfig is not None or bool(self.aks_user_credentials)

    def aks_user_credentials_at(self) -> Path | None:
        return ("aks_user_credentials",) if self.aks_user_credentials else None

    @model_validator(mode="after")
    def _access(self) -> AzureMlExtensionSpec:
        problems: list[tuple[Path, str]] = []
        if self.kubeconfig is not None and self.aks_user_credentials:
            problems.append(
                (
                    ("aks_user_credentials",),
                    f"give either {key('kubeconfig')} or {key('aks_user_credentials')}, not both",
                )
            )
        if self.kubeconfig_context is not None and self.kubeconfig is None:
            problems.append((("kubeconfig_context",), f"only with {key('kubeconfig')}"))
        if (self.kubeconfig is not None or self.aks_user_credentials) and self.verify_rbac is None:
            problems.append(
                (
                    ("verify_rbac",),
                    f"{key('kubeconfig')} and {key('aks_user_credentials')} are how the verify role is created: "
                    f"give {key('verify_rbac')} too, or remove them",
                )
            )
        raise_issues(problems)
        return self
