"""Config of `azureMl` targets (Azure Machine Learning extension on AKS or Arc).

The rules here are the ones `az k8s-extension create --extension-type Microsoft.AzureML.Kubernetes`
enforces on the client (partner_extensions/AzureMLKubernetes.py and custom.py of the k8s-extension CLI)
plus the seed's limits, checked before any resource is registered. It is longer than the house's ~400 lines
because it keeps every client-side rule of that one command together, next to the models they validate.

    - name: aks-prod                      # target name (resource names)
      extensionName: azureml              # ARM extension name = Helm release name; default: name
      cluster:                            # the cluster's ARM id and facts come from here, never looked up
        kind: aks                         # aks (managedClusters) | arc (connectedClusters)
        subscriptionId: <guid>
        resourceGroup: rg-ml              # Arc: the Azure Relay goes here too
        name: aks-ml
        location: koreacentral            # any form ARM takes: KoreaCentral, Korea Central; sent koreacentral
        tenantId: <guid>                  # optional: the subscription's tenant (explicit provider)
        cloudEnvironment: public          # optional: public | usgovernment | china
        nodeCount: 5                      # < 3: clusterPurpose=DevTest, inferenceRouterHA=false (as the CLI)
        vmSize: Standard_D4s_v3           # optional: sizing preflight by environment (preflight.py)
        openshift: false                  # arc only
      training: true                      # enableTraining
      inference:
        enabled: true                     # enableInference
        routerServiceType: LoadBalancer   # LoadBalancer | NodePort | ClusterIP (any case)
        internalLoadBalancerProvider: azure   # aks only, not with NodePort
        allowInsecureConnections: false   # true: HTTP endpoint (dev/test)
        sslCname: ml.example.com          # required with sslSecret or the PEMs
        sslSecret: azureml-tls            # k8s secret in `azureml`, or else both PEMs (secret config, PEM text)
        sslCertPem: {secure: ...}
        sslKeyPem: {secure: ...}          # not passphrase-protected
        routerHA: true                    # true needs nodeCount >= 3; unset: derived
      nodeSelector: {pool: gpu}           # nodeSelector.<key>
      installNvidiaDevicePlugin / installPromOp / installVolcano / installDcgmExporter: bool
      version: 1.1.39                     # needs autoUpgradeMinorVersion: false; prod requires a pin
      autoUpgradeMinorVersion: false
      nginxIngressController: k8s.io/amlarc-ingress-nginx   # aks only: when the cluster runs its own nginx
      verifyAccess: {aksUserCredentials: true}   # or {kubeconfig: {secure: ...}}: verify's in-cluster checks
      verifyRbac: {enabled: true, subjects: [...]}   # the read-only role for them (access.py)
      releaseTrain: stable                # default stable
      scope: cluster                      # the only scope allowed
      domain: ml.contoso.internal         # default: <location>.cloudapp.azure.com
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from program import validators
from program.config_base import Model, SecretText, TargetBase, is_placeholder, raise_issues
from program.kinds.azure_ml.access import AzureVerifyAccess, NodeResources
from program.verify_rbac import VerifyRbacSettings

ROUTER_SERVICE_TYPES = ("LoadBalancer", "NodePort", "ClusterIP")
_ROUTER_BY_LOWER = {t.lower(): t for t in ROUTER_SERVICE_TYPES}
_ROUTER_ALLOWED = "'LoadBalancer', 'NodePort' or 'ClusterIP'"
_KEY_LABELS = ("PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY")
# The CLI derives a small-cluster setup (clusterPurpose=DevTest, one inference router) below this many nodes.
MIN_HA_NODES = 3

# The extension name becomes the Helm release name (and prefixes e.g. `<name>-kube-state-metrics`).
_EXTENSION_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?")
_RELEASE_TRAIN = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_DNS_NAME = re.compile(
    r"(\*\.)?([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
)

_VM_SIZE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{1,63}", re.ASCII)
# nginxIngress.controller: an IngressClass controller value, <domain>/<path> (the chart default k8s.io/ingress-nginx)
_INGRESS_CONTROLLER = re.compile(
    r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[A-Za-z0-9][-A-Za-z0-9_./]{0,62}", re.ASCII
)
NGINX_DEFAULT_CONTROLLER = "k8s.io/ingress-nginx"

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


def _pem_problem(value: SecretStr | None, want: str) -> str | None:
    """Why a PEM secret is unusable (None when fine). `want` is "certificate" or "private key"."""
    if value is None:
        return None
    if is_placeholder(value):
        return None
    text = value.get_secret_value()
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


class AzureClusterRef(Model):
    """The AKS or Arc cluster the extension goes on: its ARM id and facts are built from this, never looked up."""

    kind: Literal["aks", "arc"]
    subscription_id: str
    resource_group: str
    name: str
    location: str
    """The cluster's Azure region in any form ARM takes: any case, with or without spaces (`eastus`, `EastUS`,
    `East US`). Sent as `az k8s-extension create` sends it, lowercase without spaces (`eastus`): the
    extension's `location`, `jobSchedulerLocation` and default `domain`, and on Arc the relay's location."""
    node_count: int = Field(ge=1, le=5000)
    """Total nodes (AKS: sum of agent pool counts; Arc: totalNodeCount), as the CLI reads it from ARM."""
    openshift: bool = False
    """Arc-connected OpenShift (OCP/ARO); the CLI sends `openshift=true` for that distribution."""
    tenant_id: str | None = None
    """Entra tenant of the subscription (the target's azure-native provider authenticates there); unset: ambient."""
    cloud_environment: Literal["public", "usgovernment", "china"] | None = None
    """Azure cloud of the subscription (the provider's `environment`); unset: public."""
    vm_size: str | None = None
    """The nodes' VM size (the smallest pool's), e.g. Standard_D4s_v3: checked against the extension's
    recommended sizes (reference-kubernetes.md) for the stack's environment; never sent anywhere."""
    node_resources: NodeResources | None = None
    """{vcpus, memoryGiB} of one node, for a vmSize the built-in table does not know (or instead of it)."""

    @field_validator("vm_size")
    @classmethod
    def _vm_size(cls, v: str | None) -> str | None:
        if v is not None and not _VM_SIZE.fullmatch(v):
            raise ValueError("must be an Azure VM size name such as Standard_D4s_v3")
        return v

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, v: str | None) -> str | None:
        if v is not None:
            validators.check(lambda x: validators.azure_guid_problem(x, "tenant"), v)
        return v.lower() if v else v

    @field_validator("subscription_id")
    @classmethod
    def _subscription(cls, v: str) -> str:
        return validators.check(validators.azure_subscription_problem, v).lower()

    @field_validator("resource_group")
    @classmethod
    def _resource_group(cls, v: str) -> str:
        return validators.check(validators.azure_resource_group_problem, v)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return validators.check(validators.azure_cluster_name_problem, v)

    @field_validator("location")
    @classmethod
    def _location(cls, v: str) -> str:
        return validators.arm_location(validators.check(validators.azure_location_problem, v))

    @property
    def cluster_rp(self) -> str:
        return "Microsoft.ContainerService" if self.kind == "aks" else "Microsoft.Kubernetes"

    @property
    def cluster_type(self) -> str:
        return "managedClusters" if self.kind == "aks" else "connectedClusters"

    @property
    def resource_id(self) -> str:
        return (
            f"/subscriptions/{self.subscription_id}/resourceGroups/{self.resource_group}"
            f"/providers/{self.cluster_rp}/{self.cluster_type}/{self.name}"
        )

    @property
    def small(self) -> bool:
        return self.node_count < MIN_HA_NODES


class InferenceSettings(Model):
    enabled: bool = False
    router_service_type: str | None = None
    """LoadBalancer | NodePort | ClusterIP, any case in; the canonical spelling out."""
    internal_load_balancer_provider: Literal["azure"] | None = None
    """AKS only: `azure` puts the router behind an internal load balancer."""
    allow_insecure_connections: bool | None = None
    """HTTP inference endpoints (dev/test only); refused in prod by policy."""
    ssl_cname: str | None = None
    """CNAME of the HTTPS inference endpoint; required unless insecure."""
    ssl_secret: str | None = None
    """Name of a Kubernetes secret in the `azureml` namespace holding cert.pem and key.pem."""
    ssl_cert_pem: SecretText | None = None
    """PEM text (not a path), set with `pulumi config set --secret --path`."""
    ssl_key_pem: SecretText | None = None
    """PEM private key text (unencrypted), set with --secret."""
    router_ha: bool | None = Field(default=None, alias="routerHA")
    """3 router replicas; unset: derived from nodeCount like the CLI."""

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

    @field_validator("ssl_secret")
    @classmethod
    def _ssl_secret(cls, v: str | None) -> str | None:
        if v is not None:
            validators.check(lambda s: validators.dns_subdomain_problem(s, "a Kubernetes secret name"), v)
        return v

    @field_validator("ssl_cert_pem")
    @classmethod
    def _cert_pem(cls, v: SecretStr | None) -> SecretStr | None:
        problem = _pem_problem(v, "certificate")
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("ssl_key_pem")
    @classmethod
    def _key_pem(cls, v: SecretStr | None) -> SecretStr | None:
        problem = _pem_problem(v, "private key")
        if problem:
            raise ValueError(problem)
        return v

    @property
    def https_material(self) -> bool:
        """True when the CLI would consider SSL enabled: both PEMs or an sslSecret."""
        return bool((self.ssl_cert_pem and self.ssl_key_pem) or self.ssl_secret)


class AzureMlTarget(TargetBase):
    cluster: AzureClusterRef
    extension_name: str | None = None
    """The extension's ARM name (= Helm release name); defaults to the target name."""
    training: bool = False
    """enableTraining: training jobs and batch scoring."""
    inference: InferenceSettings = InferenceSettings()
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
    nginx_ingress_controller: str | None = None
    """AKS: the controller class of the extension's nginx ingress (nginxIngress.controller, default
    k8s.io/ingress-nginx). Set another one, e.g. k8s.io/amlarc-ingress-nginx, when the cluster already runs an
    nginx ingress controller of the default class: two would clash (troubleshooting guide, Ingress Nginx
    controller)."""
    install_dcgm_exporter: bool | None = None
    """Install dcgm-exporter for GPU metrics (default false)."""
    version: str | None = None
    """Pin the extension version (needs autoUpgradeMinorVersion: false; prod requires a pin, policy
    azureml-version-pinned). `az k8s-extension extension-types list-versions-by-cluster` lists the versions a
    cluster offers; one it does not fails with "Chart path not found"."""
    auto_upgrade_minor_version: bool | None = None
    """Let Azure upgrade minor versions (default true)."""
    release_train: str | None = None
    """Release train (default stable)."""
    scope: str = "cluster"
    """Only `cluster` is supported by the Azure ML extension."""
    domain: str | None = None
    """The extension's `domain` setting, sent as given; unset: `<cluster.location>.cloudapp.azure.com` with the
    location as sent (`eastus.cloudapp.azure.com` for `East US`)."""
    adopt: bool = False
    """Take over what `az k8s-extension create` made: the extension and, on Arc, its relay resources."""
    verify_access: AzureVerifyAccess | None = None
    """How `mldiag verify` reads inside the cluster (health report, pods, clashes); unset: ARM checks only."""
    verify_rbac: VerifyRbacSettings = VerifyRbacSettings()
    """A read-only role holding exactly what verify reads in the cluster, created through verifyAccess."""

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
        return v if v is None else validators.check(validators.extension_version_problem, v)

    @field_validator("release_train")
    @classmethod
    def _release_train(cls, v: str | None) -> str | None:
        if v is not None and not _RELEASE_TRAIN.fullmatch(v):
            raise ValueError("must be a release train name such as stable or preview")
        return v

    @field_validator("scope")
    @classmethod
    def _scope(cls, v: str) -> str:
        if v != "cluster":
            raise ValueError(
                f"{validators.quote(v)} is not allowed: the Azure ML extension installs only at cluster scope; allowed: cluster"
            )
        return v

    @field_validator("node_selector")
    @classmethod
    def _node_selector(cls, v: dict[str, str]) -> dict[str, str]:
        raise_issues(validators.k8s_labels_problems(v, ""))
        return v

    @property
    def extension(self) -> str:
        return self.extension_name or self.name

    @model_validator(mode="after")
    def _rules(self) -> AzureMlTarget:
        problems: list[tuple[str, str]] = []
        inf = self.inference
        cluster = self.cluster

        if not (self.training or inf.enabled):
            problems.append(
                (
                    "training",
                    "either training or inference.enabled must be true (the extension is installed for "
                    "training, inference or both)",
                )
            )

        if inf.enabled:
            problems += self._inference_rules()
        else:
            stray = [
                field.alias or name
                for name, field in InferenceSettings.model_fields.items()
                if name != "enabled" and getattr(inf, name) is not None
            ]
            if stray:
                problems.append(
                    (
                        "inference",
                        f"{', '.join(stray)} only apply when inference.enabled is true; "
                        "set inference.enabled: true or remove them",
                    )
                )

        if self.version is not None and self.auto_upgrade_minor_version is not False:
            problems.append(
                (
                    "autoUpgradeMinorVersion",
                    f"must be false to pin version {self.version!r} "
                    "(set autoUpgradeMinorVersion: false, or remove version to follow the release train)",
                )
            )

        if self.previous_name and self.extension_name is None:
            problems.append(
                (
                    "extensionName",
                    f"required with previousName: the extension is named after the target; set extensionName: "
                    f"{self.previous_name} to keep the extension it names",
                )
            )

        if cluster.openshift and cluster.kind != "arc":
            problems.append(
                (
                    "cluster.openshift",
                    "only for kind arc (OpenShift and ARO clusters are connected through Azure Arc); "
                    "allowed for kind aks: false",
                )
            )

        if self.nginx_ingress_controller is not None and cluster.kind != "aks":
            problems.append(
                (
                    "nginxIngressController",
                    "only for kind aks: the extension installs its nginx ingress on AKS, not on Arc",
                )
            )
        access = self.verify_access
        if access is not None and access.aks_user_credentials and cluster.kind != "aks":
            problems.append(
                (
                    "verifyAccess.aksUserCredentials",
                    "only for kind aks; an Arc cluster needs a kubeconfig secret",
                )
            )
        if self.verify_rbac.enabled and access is None:
            problems.append(
                (
                    "verifyRbac",
                    "needs verifyAccess (a kubeconfig secret, or aksUserCredentials on AKS): the role is created "
                    "through it",
                )
            )

        if cluster.kind == "arc" and not cluster.name[0].isalpha():
            problems.append(
                (
                    "cluster.name",
                    "must start with a letter for kind arc (the Azure Relay namespace name is derived from it)",
                )
            )

        raise_issues(problems)
        return self

    def _inference_rules(self) -> list[tuple[str, str]]:
        inf = self.inference
        problems: list[tuple[str, str]] = []
        if inf.router_service_type is None:
            problems.append(
                (
                    "inference.routerServiceType",
                    f"required when inference.enabled is true; allowed: {_ROUTER_ALLOWED}",
                )
            )

        if bool(inf.ssl_cert_pem) != bool(inf.ssl_key_pem):
            missing, given = ("sslKeyPem", "sslCertPem") if inf.ssl_cert_pem else ("sslCertPem", "sslKeyPem")
            problems.append(
                (f"inference.{missing}", f"required when {given} is set (give both PEMs or neither)")
            )
        elif inf.ssl_cert_pem and inf.ssl_secret:
            problems.append(
                (
                    "inference.sslSecret",
                    "set either sslSecret or sslCertPem and sslKeyPem, not both",
                )
            )
        elif not inf.https_material and not inf.allow_insecure_connections:
            problems.append(
                (
                    "inference",
                    "HTTPS (the default) needs sslCname and either sslSecret or both sslCertPem and sslKeyPem; "
                    "for an HTTP endpoint (dev/test only) set allowInsecureConnections: true",
                )
            )
        if inf.https_material and not inf.ssl_cname:
            problems.append(
                (
                    "inference.sslCname",
                    "required when HTTPS is configured (sslSecret or sslCertPem and sslKeyPem)",
                )
            )

        if inf.internal_load_balancer_provider is not None:
            if self.cluster.kind != "aks":
                problems.append(
                    (
                        "inference.internalLoadBalancerProvider",
                        "only allowed on AKS clusters (cluster.kind: aks); remove it for kind arc",
                    )
                )
            elif inf.router_service_type == "NodePort":
                problems.append(
                    (
                        "inference.internalLoadBalancerProvider",
                        "not allowed with routerServiceType NodePort; allowed with LoadBalancer or ClusterIP",
                    )
                )

        if inf.router_ha and self.cluster.small:
            problems.append(
                (
                    "inference.routerHA",
                    f"true needs at least {MIN_HA_NODES} nodes (cluster.nodeCount is {self.cluster.node_count}); "
                    "set routerHA: false or leave it unset",
                )
            )
        return problems
