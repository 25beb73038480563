"""Azure Machine Learning extension (`Microsoft.AzureML.Kubernetes`) on an AKS or Arc cluster.

Sends what `az k8s-extension create --extension-type Microsoft.AzureML.Kubernetes` sends: the CLI
derives many settings on the client (cluster ids, locations, per-kind component flags, small-cluster
defaults, the TLS material, and for Arc an Azure Relay) and the chart fails its health checks without them.
"""

from __future__ import annotations

import base64
import hashlib

import pulumi
from pulumi_azure_native import kubernetesconfiguration, relay
from pulumi_azure_native.provider import Provider as AzureProvider

from components import config, lifecycle
from components.targets.azure_ml import AzureClusterRef, AzureMlTarget

EXTENSION_TYPE = "Microsoft.AzureML.Kubernetes"
RELEASE_NAMESPACE = "azureml"
DEFAULT_RELEASE_TRAIN = "stable"
RELAY_AUTH_RULE = "azureml_rw"
RELAY_RIGHTS = ["Manage", "Send", "Listen"]
RELAY_TAGS = {"created_by": "Azure Arc-enabled ML"}


def _flag(value: bool) -> str:
    # The CLI sends Python bools through a str-typed map: "True" / "False".
    return "True" if value else "False"


def relay_namespace_name(cluster_name: str, subscription_id: str, resource_group: str) -> str:
    """The CLI's relay namespace name: the alphanumerics of `<cluster>-<subscription>-<rg>-relay`,
    cut to 44 and suffixed with 6 hex digits of the MD5 of the unfiltered text when over 50."""
    raw = f"{cluster_name}-{subscription_id}-{resource_group}-relay"
    kept = "".join(ch for ch in raw if ch.isalnum())
    if len(kept) <= 50:
        return kept
    return kept[:44] + hashlib.md5(raw.encode("utf8")).hexdigest()[:6]


def configuration_settings(target: AzureMlTarget) -> dict[str, str]:
    """The plain settings the CLI sends, except the relay's (added once the relay exists)."""
    cluster = target.cluster
    inf = target.inference
    s: dict[str, str] = {}

    if inf.enabled:
        s["inferenceRouterServiceType"] = inf.router_service_type or ""
        if inf.internal_load_balancer_provider is not None:
            s["internalLoadBalancerProvider"] = inf.internal_load_balancer_provider
        if inf.allow_insecure_connections is not None:
            s["allowInsecureConnections"] = _flag(inf.allow_insecure_connections)
        if inf.ssl_cname is not None:
            s["sslCname"] = inf.ssl_cname
        if inf.ssl_secret is not None:
            s["sslSecret"] = inf.ssl_secret
        if inf.router_ha is not None:
            s["inferenceRouterHA"] = _flag(inf.router_ha)
    for key, value in sorted(target.node_selector.items()):
        # Settings become Helm values split at '.'; escape the dots inside a label key (kubernetes.io/os).
        s["nodeSelector." + key.replace(".", "\\.")] = value
    for key, value in (
        ("installNvidiaDevicePlugin", target.install_nvidia_device_plugin),
        ("installPromOp", target.install_prom_op),
        ("installVolcano", target.install_volcano),
        ("installDcgmExporter", target.install_dcgm_exporter),
    ):
        if value is not None:
            s[key] = _flag(value)

    if inf.enabled:
        if inf.router_service_type == "NodePort":
            s["scoringFe.serviceType.nodePort"] = _flag(True)
        elif inf.internal_load_balancer_provider == "azure":
            s["scoringFe.serviceType.internalLoadBalancer"] = _flag(True)
        # With insecure connections allowed the CLI skips the TLS setup; PEMs win over sslSecret.
        if (
            not inf.allow_insecure_connections
            and inf.ssl_secret
            and not (inf.ssl_cert_pem and inf.ssl_key_pem)
        ):
            s["scoringFe.sslSecret"] = inf.ssl_secret

    s["enableTraining"] = _flag(target.training)
    s["enableInference"] = _flag(inf.enabled)

    # Small clusters (fewer than 3 nodes): the CLI fills these in unless given, whatever the workload.
    if cluster.small:
        s.setdefault("clusterPurpose", "DevTest")
        s.setdefault("inferenceRouterHA", "false")
    if cluster.openshift:
        s["openshift"] = "true"

    s["cluster_name"] = cluster.resource_id
    # The CLI accepts a domain but then overwrites it (it reads a misspelled key); we send the user's.
    s["domain"] = target.domain or f"{cluster.location}.cloudapp.azure.com"
    s["location"] = cluster.location
    s["jobSchedulerLocation"] = cluster.location
    s["cluster_name_friendly"] = cluster.name
    s["servicebus.enabled"] = "false"
    # AKS talks to the cloud without the relay and gets the nginx ingress; Arc the other way round.
    s["relayserver.enabled"] = "false" if cluster.kind == "aks" else "true"
    s["nginxIngress.enabled"] = "true" if cluster.kind == "aks" else "false"
    s["clusterId"] = s["cluster_name"]
    s["prometheus.prometheusSpec.externalLabels.cluster_name"] = s["cluster_name"]
    return s


def provider_args(cluster: AzureClusterRef) -> dict[str, str]:
    """The azure-native provider inputs that bind a target's resources to its own account scope."""
    args = {"subscription_id": cluster.subscription_id}
    if cluster.tenant_id:
        args["tenant_id"] = cluster.tenant_id
    if cluster.cloud_environment:
        args["environment"] = cluster.cloud_environment
    return args


def _pem_base64(pem: str) -> str:
    # The CLI base64s the file as read in text mode: LF line ends, and a PEM file ends with a newline
    # (config values arrive stripped).
    text = pem.replace("\r\n", "\n").replace("\r", "\n").strip() + "\n"
    return base64.b64encode(text.encode("ascii")).decode()


class AzureMlExtension(pulumi.ComponentResource):
    """The Azure ML extension on one AKS or Arc cluster (plus the Azure Relay an Arc cluster needs)."""

    extension_id: pulumi.Output[str]

    def __init__(self, name: str, target: AzureMlTarget, opts: pulumi.ResourceOptions | None = None):
        super().__init__("mldiag:index:AzureMlExtension", name, None, opts)
        cluster = target.cluster
        inf = target.inference
        settings: dict[str, pulumi.Input[str]] = dict(configuration_settings(target))
        protected: dict[str, pulumi.Input[str]] = {}

        if inf.enabled and not inf.allow_insecure_connections and inf.ssl_cert_pem and inf.ssl_key_pem:
            protected["scoringFe.sslCert"] = config.secret_output(inf.ssl_cert_pem).apply(_pem_base64)
            protected["scoringFe.sslKey"] = config.secret_output(inf.ssl_key_pem).apply(_pem_base64)

        # An explicit provider bound to the target's subscription (and tenant/cloud): without it the extension
        # and relay would land in whatever subscription the deployer's ambient login points at.
        self.provider = AzureProvider(
            f"{name}-provider", **provider_args(cluster), opts=pulumi.ResourceOptions(parent=self)
        )
        child = pulumi.ResourceOptions(parent=self, provider=self.provider)

        def adopted(arm_id: str) -> pulumi.ResourceOptions:
            # What `az k8s-extension create` made: imported by ARM id (harmless once in the state).
            return pulumi.ResourceOptions.merge(
                child, lifecycle.adopt_options(arm_id if target.adopt else None)
            )

        depends_on: list[pulumi.Resource] = []
        self.relay_namespace: relay.Namespace | None = None
        self.hybrid_connection: relay.HybridConnection | None = None
        if cluster.kind == "arc":
            ns_name = relay_namespace_name(cluster.name, cluster.subscription_id, cluster.resource_group)
            ns_id, hc_id, rule_id = lifecycle.azure_relay_ids(
                cluster.subscription_id, cluster.resource_group, ns_name, cluster.name, RELAY_AUTH_RULE
            )
            namespace = relay.Namespace(
                f"{name}-relay",
                namespace_name=ns_name,
                resource_group_name=cluster.resource_group,
                location=cluster.location,
                tags=RELAY_TAGS,
                opts=adopted(ns_id),
            )
            hybrid = relay.HybridConnection(
                f"{name}-relay-hc",
                hybrid_connection_name=cluster.name,
                namespace_name=ns_name,
                resource_group_name=cluster.resource_group,
                requires_client_authorization=True,
                opts=pulumi.ResourceOptions.merge(
                    adopted(hc_id), pulumi.ResourceOptions(depends_on=[namespace])
                ),
            )
            rule = relay.HybridConnectionAuthorizationRule(
                f"{name}-relay-rule",
                authorization_rule_name=RELAY_AUTH_RULE,
                hybrid_connection_name=cluster.name,
                namespace_name=ns_name,
                resource_group_name=cluster.resource_group,
                rights=RELAY_RIGHTS,
                opts=pulumi.ResourceOptions.merge(
                    adopted(rule_id), pulumi.ResourceOptions(depends_on=[hybrid])
                ),
            )
            keys = relay.list_hybrid_connection_keys_output(
                authorization_rule_name=RELAY_AUTH_RULE,
                hybrid_connection_name=cluster.name,
                namespace_name=ns_name,
                resource_group_name=cluster.resource_group,
                opts=pulumi.InvokeOutputOptions(parent=self, provider=self.provider, depends_on=[rule]),
            )
            connection_string = pulumi.Output.secret(keys.primary_connection_string.apply(lambda v: v or ""))
            settings["relayserver.hybridConnectionResourceID"] = hybrid.id
            settings["relayserver.hybridConnectionName"] = cluster.name
            # The CLI's own key and the chart key it is copied to.
            protected["relayServerConnectionString"] = connection_string
            protected["relayserver.relayConnectionString"] = connection_string
            depends_on.append(rule)
            self.relay_namespace, self.hybrid_connection = namespace, hybrid

        ext = kubernetesconfiguration.Extension(
            f"{name}-extension",
            extension_name=target.extension,
            extension_type=EXTENSION_TYPE,
            cluster_rp=cluster.cluster_rp,
            cluster_resource_name=cluster.cluster_type,
            cluster_name=cluster.name,
            resource_group_name=cluster.resource_group,
            scope=kubernetesconfiguration.ScopeArgs(
                cluster=kubernetesconfiguration.ScopeClusterArgs(release_namespace=RELEASE_NAMESPACE)
            ),
            release_train=target.release_train or DEFAULT_RELEASE_TRAIN,
            auto_upgrade_minor_version=target.auto_upgrade_minor_version,
            version=target.version,
            # Arc extensions get a system-assigned identity; the CLI creates none on AKS.
            identity=kubernetesconfiguration.IdentityArgs(type="SystemAssigned")
            if cluster.kind == "arc"
            else None,
            configuration_settings=settings,
            configuration_protected_settings=protected,
            # The SDK does not mark it secret; keep whatever ARM echoes back out of plain state.
            opts=pulumi.ResourceOptions.merge(
                adopted(lifecycle.azure_extension_id(cluster.resource_id, target.extension)),
                pulumi.ResourceOptions(
                    depends_on=depends_on, additional_secret_outputs=["configurationProtectedSettings"]
                ),
            ),
        )
        self.extension = ext
        self.extension_id = ext.id
        self.register_outputs(
            {
                "extensionId": ext.id,
                "clusterResourceId": cluster.resource_id,
                "relayNamespace": self.relay_namespace.name if self.relay_namespace else None,
            }
        )
