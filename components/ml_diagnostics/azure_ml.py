"""Azure Machine Learning extension (`Microsoft.AzureML.Kubernetes`) on an AKS or Arc cluster.

Sends what `az k8s-extension create --extension-type Microsoft.AzureML.Kubernetes` sends: the CLI
derives many settings on the client (cluster ids, locations, per-kind component flags, small-cluster
defaults, the TLS material, and for Arc an Azure Relay) and the chart fails its health checks without them.
"""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
import base64
import hashlib
from typing import Any, NamedTuple

import pulumi
from pulumi_azure_native import kubernetesconfiguration, relay
from pulumi_azure_native.provider import Provider as AzureProvider

from ml_diagnostics import docs, lifecycle, verify_record
from ml_diagnostics.args import AzureClusterArgs, AzureMlExtensionArgs, InferenceArgs
from ml_diagnostics.compat import arm_location
from ml_diagnostics.component import Component, known
from ml_diagnostics.parts import Part
from ml_diagnostics.records import AzureMlRecord
from ml_diagnostics.rules.azure_cluster import MIN_HA_NODES
from ml_diagnostics.rules.azure_ml import AzureMlExtensionSpec

EXTENSION_TYPE = "Microsoft.AzureML.Kubernetes"
RELEASE_NAMESPACE = "azureml"
DEFAULT_RELEASE_TRAIN = "stable"
RELAY_AUTH_RULE = "azureml_rw"
RELAY_RIGHTS = ["Manage", "Send", "Listen"]
RELAY_TAGS = {"created_by": "Azure Arc-enabled ML"}


def cluster_rp(cluster: AzureClusterArgs) -> str:
    return "Microsoft.ContainerService" if cluster["kind"] == "aks" else "Microsoft.Kubernetes"


def cluster_type(cluster: AzureClusterArgs) -> str:
    return "managedClusters" if cluster["kind"] == "aks" else "connectedClusters"


def cluster_resource_id(cluster: AzureClusterArgs) -> str:
    return (
        f"/subscriptions/{cluster['subscription_id']}/resourceGroups/{cluster['resource_group']}"
        f"/providers/{cluster_rp(cluster)}/{cluster_type(cluster)}/{cluster['name']}"
    )


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


def configuration_settings(args: AzureMlExtensionArgs) -> dict[str, str]:
    """The plain settings the CLI sends, except the relay's (added once the relay exists)."""
    cluster = args["cluster"]
    inf: InferenceArgs = args.get("inference") or {}
    enabled = inf.get("enabled", False)
    s: dict[str, str] = {}

    if enabled:
        s["inferenceRouterServiceType"] = inf.get("router_service_type") or ""
        if inf.get("internal_load_balancer_provider") is not None:
            s["internalLoadBalancerProvider"] = inf["internal_load_balancer_provider"]
        if inf.get("allow_insecure_connections") is not None:
            s["allowInsecureConnections"] = _flag(inf["allow_insecure_connections"])
        if inf.get("ssl_cname") is not None:
            s["sslCname"] = inf["ssl_cname"]
        if inf.get("ssl_secret") is not None:
            s["sslSecret"] = inf["ssl_secret"]
        if inf.get("router_ha") is not None:
            s["inferenceRouterHA"] = _flag(inf["router_ha"])
    for key, value in sorted((args.get("node_selector") or {}).items()):
        # Settings become Helm values split at '.'; escape the dots inside a label key (kubernetes.io/os).
        s["nodeSelector." + key.replace(".", "\\.")] = value
    for key, arg in (
        ("installNvidiaDevicePlugin", "install_nvidia_device_plugin"),
        ("installPromOp", "install_prom_op"),
        ("installVolcano", "install_volcano"),
        ("installDcgmExporter", "install_dcgm_exporter"),
    ):
        if args.get(arg) is not None:
            s[key] = _flag(args[arg])  # type: ignore[literal-required]

    if enabled:
        if inf.get("router_service_type") == "NodePort":
            s["scoringFe.serviceType.nodePort"] = _flag(True)
        elif inf.get("internal_load_balancer_provider") == "azure":
            s["scoringFe.serviceType.internalLoadBalancer"] = _flag(True)
        # With insecure connections allowed the CLI skips the TLS setup; PEMs win over sslSecret.
        if (
            not inf.get("allow_insecure_connections")
            and inf.get("ssl_secret")
            and not (inf.get("ssl_cert_pem") and inf.get("ssl_key_pem"))
        ):
            s["scoringFe.sslSecret"] = inf["ssl_secret"]

    if args.get("nginx_ingress_controller"):
        s["nginxIngress.controller"] = args["nginx_ingress_controller"]

    s["enableTraining"] = _flag(args.get("training", False))
    s["enableInference"] = _flag(enabled)

    # Small clusters (fewer than 3 nodes): the CLI fills these in unless given, whatever the workload.
    if cluster["node_count"] < MIN_HA_NODES:
        s.setdefault("clusterPurpose", "DevTest")
        s.setdefault("inferenceRouterHA", "false")
    if cluster.get("openshift", False):
        s["openshift"] = "true"

    location = arm_location(cluster["location"])  # as the CLI sends it, whichever form ARM was given
    s["cluster_name"] = cluster_resource_id(cluster)
    # The CLI accepts a domain but then overwrites it (it reads a misspelled key); we send the user's.
    s["domain"] = args.get("domain") or f"{location}.cloudapp.azure.com"
    s["location"] = location
    s["jobSchedulerLocation"] = location
    s["cluster_name_friendly"] = cluster["name"]
    s["servicebus.enabled"] = "false"
    # AKS talks to the cloud without the relay and gets the nginx ingress; Arc the other way round.
    aks = cluster["kind"] == "aks"
    s["relayserver.enabled"] = "false" if aks else "true"
    s["nginxIngress.enabled"] = "true" if aks else "false"
    s["clusterId"] = s["cluster_name"]
    s["prometheus.prometheusSpec.externalLabels.cluster_name"] = s["cluster_name"]
    return s


def provider_args(cluster: AzureClusterArgs) -> dict[str, str]:
    """The azure-native provider inputs that bind the extension's resources to its own account scope."""
    args = {"subscription_id": cluster["subscription_id"]}
    if cluster.get("tenant_id"):
        args["tenant_id"] = cluster["tenant_id"]
    if cluster.get("cloud_environment"):
        args["environment"] = cluster["cloud_environment"]
    return args


def _tls_settings(args: AzureMlExtensionArgs) -> dict[str, pulumi.Input[str]]:
    """The protected TLS settings: both PEMs, base64 as the CLI sends them, when inference serves TLS with them."""
    inf: InferenceArgs = args.get("inference") or {}
    cert, key = inf.get("ssl_cert_pem"), inf.get("ssl_key_pem")
    if not (inf.get("enabled", False) and not inf.get("allow_insecure_connections") and cert and key):
        return {}
    return {
        "scoringFe.sslCert": pulumi.Output.secret(cert).apply(_pem_base64),
        "scoringFe.sslKey": pulumi.Output.secret(key).apply(_pem_base64),
    }


def _pem_base64(pem: str) -> str:
    # The CLI base64s the file as read in text mode: LF line ends, and a PEM file ends with a newline
    # (config values arrive stripped).
    text = pem.replace("\r\n", "\n").replace("\r", "\n").strip() + "\n"
    return base64.b64encode(text.encode("ascii")).decode()


class _Relay(NamedTuple):
    """What an Arc cluster's Azure Relay gives the extension."""

    namespace: relay.Namespace
    hybrid_connection: relay.HybridConnection
    rule: relay.HybridConnectionAuthorizationRule
    connection_string: pulumi.Output[str]


class AzureMlExtension(Component[AzureMlExtensionSpec]):
    """The Azure ML extension on one AKS or Arc cluster (plus the Azure Relay an Arc cluster needs)."""

    extension_id: pulumi.Output[str]
    """The extension's ARM id."""
    cluster_resource_id: pulumi.Output[str]
    """The cluster's ARM id."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:AzureMlExtension"
    _SPEC = AzureMlExtensionSpec

    def __init__(self, name: str, args: AzureMlExtensionArgs, opts: pulumi.ResourceOptions | None = None):
        # Checked first: kind `AKS` is aks, a location in any form ARM takes is the one the CLI sends.
        super().__init__(name, args, opts)

    def _build(self, name: str, spec: AzureMlExtensionSpec, **_: Any) -> None:
        args: AzureMlExtensionArgs = spec.model_dump(exclude_unset=True, warnings=False)  # type: ignore[assignment]
        cluster = args["cluster"]
        settings: dict[str, pulumi.Input[str]] = dict(configuration_settings(args))
        protected = _tls_settings(args)
        # An explicit provider bound to the target's subscription (and tenant/cloud): without it the extension
        # and relay would land in whatever subscription the deployer's ambient login points at.
        self.provider = AzureProvider(
            f"{name}-provider", **provider_args(cluster), opts=pulumi.ResourceOptions(parent=self)
        )
        self.relay_namespace: relay.Namespace | None = None
        self.hybrid_connection: relay.HybridConnection | None = None
        depends_on: list[pulumi.Resource] = []
        if cluster["kind"] == "arc":
            arc = self._relay(name, cluster, args.get("adopt", False))
            settings["relayserver.hybridConnectionResourceID"] = arc.hybrid_connection.id
            settings["relayserver.hybridConnectionName"] = cluster["name"]
            # The CLI's own key and the chart key it is copied to.
            protected["relayServerConnectionString"] = arc.connection_string
            protected["relayserver.relayConnectionString"] = arc.connection_string
            depends_on.append(arc.rule)
            self.relay_namespace, self.hybrid_connection = arc.namespace, arc.hybrid_connection
        self.extension = ext = self._extension(name, args, settings, protected, depends_on)
        if args.get("verify_rbac") is not None:
            self._verify_rbac(name, args, ext)
        self._publish(spec, args, ext)

    def _adopted(
        self, adopt: bool, arm_id: str, depends_on: list[pulumi.Resource] | None = None
    ) -> pulumi.ResourceOptions:
        # What `az k8s-extension create` made: imported by ARM id (harmless once in the state).
        return pulumi.ResourceOptions(
            parent=self, provider=self.provider, import_=arm_id if adopt else None, depends_on=depends_on
        )

    def _relay(self, name: str, cluster: AzureClusterArgs, adopt: bool) -> _Relay:
        """Arc: the relay namespace, hybrid connection and rule the CLI makes, and the rule's connection string."""
        c_name, rg = cluster["name"], cluster["resource_group"]
        ns_name = relay_namespace_name(c_name, cluster["subscription_id"], rg)
        ns_id, hc_id, rule_id = lifecycle.azure_relay_ids(
            cluster["subscription_id"], rg, ns_name, c_name, RELAY_AUTH_RULE
        )
        namespace = relay.Namespace(
            f"{name}-relay",
            namespace_name=ns_name,
            resource_group_name=rg,
            location=arm_location(cluster["location"]),
            tags=RELAY_TAGS,
            opts=self._adopted(adopt, ns_id),
        )
        hybrid = relay.HybridConnection(
            f"{name}-relay-hc",
            hybrid_connection_name=c_name,
            namespace_name=ns_name,
            resource_group_name=rg,
            requires_client_authorization=True,
            opts=self._adopted(adopt, hc_id, [namespace]),
        )
        rule = relay.HybridConnectionAuthorizationRule(
            f"{name}-relay-rule",
            authorization_rule_name=RELAY_AUTH_RULE,
            hybrid_connection_name=c_name,
            namespace_name=ns_name,
            resource_group_name=rg,
            rights=RELAY_RIGHTS,
            opts=self._adopted(adopt, rule_id, [hybrid]),
        )
        keys = relay.list_hybrid_connection_keys_output(
            authorization_rule_name=RELAY_AUTH_RULE,
            hybrid_connection_name=c_name,
            namespace_name=ns_name,
            resource_group_name=rg,
            opts=pulumi.InvokeOutputOptions(parent=self, provider=self.provider, depends_on=[rule]),
        )
        connection_string = pulumi.Output.secret(keys.primary_connection_string.apply(lambda v: v or ""))
        return _Relay(namespace, hybrid, rule, connection_string)

    def _extension(
        self,
        name: str,
        args: AzureMlExtensionArgs,
        settings: dict[str, pulumi.Input[str]],
        protected: dict[str, pulumi.Input[str]],
        depends_on: list[pulumi.Resource],
    ) -> kubernetesconfiguration.Extension:
        """The extension with the settings the CLI sends (Arc: a system-assigned identity, as the CLI makes)."""
        cluster = args["cluster"]
        resource_id = cluster_resource_id(cluster)
        opts = self._adopted(
            args.get("adopt", False),
            lifecycle.azure_extension_id(resource_id, args["extension_name"]),
            depends_on,
        )
        # The SDK does not mark it secret; keep whatever ARM echoes back out of plain state.
        opts.additional_secret_outputs = ["configurationProtectedSettings"]
        return kubernetesconfiguration.Extension(
            f"{name}-extension",
            extension_name=args["extension_name"],
            extension_type=EXTENSION_TYPE,
            cluster_rp=cluster_rp(cluster),
            cluster_resource_name=cluster_type(cluster),
            cluster_name=cluster["name"],
            resource_group_name=cluster["resource_group"],
            scope=kubernetesconfiguration.ScopeArgs(
                cluster=kubernetesconfiguration.ScopeClusterArgs(release_namespace=RELEASE_NAMESPACE)
            ),
            release_train=args.get("release_train") or DEFAULT_RELEASE_TRAIN,
            auto_upgrade_minor_version=args.get("auto_upgrade_minor_version"),
            version=args.get("version"),
            identity=kubernetesconfiguration.IdentityArgs(type="SystemAssigned")
            if cluster["kind"] == "arc"
            else None,
            configuration_settings=settings,
            configuration_protected_settings=protected,
            opts=opts,
        )

    def _publish(
        self, spec: AzureMlExtensionSpec, args: AzureMlExtensionArgs, ext: kubernetesconfiguration.Extension
    ) -> None:
        """The outputs and the verify record."""
        resource_id = cluster_resource_id(args["cluster"])
        self.extension_id = ext.id
        self.cluster_resource_id = known(resource_id)
        self.verify_record = known(
            verify_record.record(azureMl=verify_record.azure_ml(spec, args["extension_name"]))
        )
        self.register_outputs(
            {
                verify_record.OUTPUT: self.verify_record,
                "extensionId": ext.id,
                "clusterResourceId": resource_id,
                "relayNamespace": self.relay_namespace.name if self.relay_namespace else None,
            }
        )

    def _verify_rbac(self, name: str, args: AzureMlExtensionArgs, ext: pulumi.Resource) -> None:
        # Imported here: most stacks create no verify role, and the Kubernetes SDK is large.
        import pulumi_kubernetes as k8s
        from pulumi_azure_native import containerservice

        from ml_diagnostics.verify_rbac import VerifyRbac, azure_verify_rules

        cluster = args["cluster"]
        if args.get("kubeconfig") is not None:
            kubeconfig: pulumi.Input[str] = pulumi.Output.secret(args["kubeconfig"])
        elif args.get("aks_user_credentials") and cluster["kind"] == "aks":
            creds = containerservice.list_managed_cluster_user_credentials_output(
                resource_group_name=cluster["resource_group"],
                resource_name=cluster["name"],
                opts=pulumi.InvokeOutputOptions(parent=self, provider=self.provider),
            )
            kubeconfig = pulumi.Output.secret(
                creds.kubeconfigs.apply(lambda ks: base64.b64decode(ks[0].value).decode() if ks else "")
            )
        else:
            raise ValueError(
                "verify_rbac needs kubeconfig, or aks_user_credentials on an AKS cluster, to reach the cluster"
            )
        provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=kubeconfig,
            context=args.get("kubeconfig_context"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        VerifyRbac(
            f"{name}-verify-rbac",
            args["verify_rbac"],
            pulumi.ResourceOptions(parent=self, provider=provider),
            rules=azure_verify_rules(ingress_classes=cluster["kind"] == "aks"),
            after=[ext],
        )


docs.document(AzureMlExtension, AzureMlExtensionArgs)

PART = Part(
    order=100,
    component="AzureMlExtension",
    spec=AzureMlExtensionSpec,
    exports=("AzureMlExtension", "AzureClusterArgs", "InferenceArgs"),
    record=AzureMlRecord,
    section="azure_ml",
    readme=(
        "`AzureMlExtension`",
        "the Azure Machine Learning extension on an AKS or Arc cluster, with the settings `az k8s-extension "
        "create` sends (and the Azure Relay Arc needs)",
    ),
)


__all__ = [
    "AzureClusterArgs",
    "AzureMlExtension",
    "AzureMlExtensionArgs",
    "InferenceArgs",
    "configuration_settings",
]
