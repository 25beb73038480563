"""Azure Machine Learning extension (`Microsoft.AzureML.Kubernetes`) rules on one extension's inputs: workloads,
inference HTTPS, secrets, cluster scope, the Arc relay. Setting-key, load-balancer and stack rules are in
azure_ml_settings.py, the AKS cluster rules in aks.py.

Source: Azure ML extension docs (configuration settings table, limitations) and what `az k8s-extension create` enforces
on the client (azure-cli-extensions, k8s-extension AzureMLKubernetes.py): training or inference must be
enabled, HTTPS needs sslCname plus sslSecret or the cert/key pair, cluster scope only, release namespace
azureml, Arc clusters talk to the cloud through an Azure Relay, no cross-subscription attach, AKS with a
managed identity and local accounts enabled.

Settings are `configurationSettings` / `configurationProtectedSettings` (maps of strings: "True"/"false").
Messages name setting keys, never their values (a value may be a secret).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import Severity

from ..common import AZURE_ML, Report, Unknowns, resource_rule
from ..levels import ADVISORY, FOLLOWS_BASE, MANDATORY, with_options
from ..values import as_bool, dig, is_unknown

EXTENSION_TYPE_TOKEN = "azure-native:kubernetesconfiguration:Extension"
AZUREML_EXTENSION = "microsoft.azureml.kubernetes"
RELEASE_NAMESPACE = "azureml"
ROUTER_SERVICE_TYPES = ("loadBalancer", "nodePort", "clusterIP")


def is_azureml(args: Any) -> bool:
    """An Azure ML extension; `args`: a resource in its canonical form (plain props)."""
    if args.resource_type != EXTENSION_TYPE_TOKEN:
        return False
    ext = args.props.get("extensionType")
    return isinstance(ext, str) and not is_unknown(ext) and ext.lower() == AZUREML_EXTENSION


class Settings:
    """Both settings maps; `get` looks in plain settings first, like the CLI."""

    def __init__(self, props: Mapping[str, Any]):
        s = props.get("configurationSettings")
        p = props.get("configurationProtectedSettings")
        self.plain_unknown = is_unknown(s)
        self.protected_unknown = is_unknown(p)
        self.plain: dict = s if isinstance(s, dict) else {}
        self.protected: dict = p if isinstance(p, dict) else {}

    def get(self, key: str) -> Any:
        if key in self.plain:
            return self.plain[key]
        return self.protected.get(key)

    def has(self, key: str) -> bool:
        """Present and non-empty (an unknown value counts as present: it will hold something)."""
        v = self.get(key)
        return v is not None and v != ""

    def flag(self, key: str) -> bool:
        return as_bool(self.get(key)) is True


def extension_label(args: Any, props: Mapping[str, Any]) -> str:
    """How messages name an extension (its extensionName, else the Pulumi name); never a setting value."""
    return f"Azure ML extension '{props.get('extensionName') or args.name}'"


def _settings_or_unknown(props: dict, unknowns: Unknowns) -> Settings | None:
    st = Settings(props)
    if st.plain_unknown:
        unknowns.note("configurationSettings")
        return None
    return st


# --- azureml-workloads-enabled -------------------------------------------------------------------


def _check_workloads(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    st = _settings_or_unknown(props, unknowns)
    if st is not None:
        training, inference = st.get("enableTraining"), st.get("enableInference")
        if not unknowns.hit(training, "enableTraining") and not unknowns.hit(inference, "enableInference"):
            if as_bool(training) is not True and as_bool(inference) is not True:
                report(
                    f"{extension_label(args, props)} enables neither training nor inference; the extension then installs "
                    "nothing useful and `az k8s-extension create` refuses it. Remediation: set "
                    "enableTraining=True and/or enableInference=True (the target's training / inference.enabled)."
                )
            if as_bool(inference) is True:
                rst = st.get("inferenceRouterServiceType")
                if not unknowns.hit(rst, "inferenceRouterServiceType") and (
                    not isinstance(rst, str) or rst.lower() not in [t.lower() for t in ROUTER_SERVICE_TYPES]
                ):
                    report(
                        f"{extension_label(args, props)} enables inference with inferenceRouterServiceType "
                        f"{rst!r}; it is required when enableInference=True and must be one of "
                        f"{', '.join(ROUTER_SERVICE_TYPES)}. Remediation: set inference.routerServiceType."
                    )


workloads_enabled = resource_rule(
    "azureml-workloads-enabled",
    (
        "The Azure ML extension enables training or inference (or both), and inference has a valid "
        "inferenceRouterServiceType: loadBalancer, nodePort or clusterIP (Azure ML extension docs, settings table)."
    ),
    _check_workloads,
    applies={EXTENSION_TYPE_TOKEN},
    when=is_azureml,
    about=AZURE_ML.concern("configuration"),
    severity=Severity.HIGH,
    remediation="Enable training and/or inference; give inference a router service type.",
    levels={"dev": MANDATORY},
)

# --- azureml-inference-https ---------------------------------------------------------------------

HTTPS_DEFAULTS = {
    "allowInsecureConnections": (
        {
            "type": "boolean",
            "description": "Accept allowInsecureConnections=True (HTTP inference; Azure ML extension docs: dev/test only).",
        },
        True,
    ),
}


def _check_https(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    st = _settings_or_unknown(props, unknowns)
    if st is not None:
        inference, insecure = st.get("enableInference"), st.get("allowInsecureConnections")
        if not unknowns.hit(inference, "enableInference") and as_bool(inference) is True:
            if not unknowns.hit(insecure, "allowInsecureConnections") and as_bool(insecure) is True:
                if not cfg["allowInsecureConnections"]:
                    report(
                        f"{extension_label(args, props)} sets allowInsecureConnections=True: inference endpoints would serve "
                        "plain HTTP, which the Azure ML extension docs allow for development and testing only and this environment "
                        "refuses. Remediation: remove inference.allowInsecureConnections and set "
                        "inference.sslCname with inference.sslSecret or inference.sslCertPem/sslKeyPem."
                    )
            else:
                missing = []
                if not st.has("sslCname"):
                    missing.append("sslCname")
                secret = st.has("sslSecret") or st.has("scoringFe.sslSecret")
                pems = (st.has("scoringFe.sslCert") and st.has("scoringFe.sslKey")) or (
                    st.has("sslCertPemFile") and st.has("sslKeyPemFile")
                )
                if st.protected_unknown and not secret:
                    unknowns.note("configurationProtectedSettings")
                elif not (secret or pems):
                    missing.append("sslSecret, or the certificate and key in protected settings")
                if missing:
                    report(
                        f"{extension_label(args, props)} serves inference over HTTPS (allowInsecureConnections is not True) "
                        f"but lacks {' and '.join(missing)}; the extension expects them and the endpoint cannot "
                        "start. Remediation: set inference.sslCname and either inference.sslSecret (a secret "
                        "with cert.pem/key.pem in the azureml namespace) or inference.sslCertPem and "
                        "inference.sslKeyPem as secret config; or, for dev/test only, "
                        "allowInsecureConnections: true."
                    )


inference_https = resource_rule(
    "azureml-inference-https",
    (
        "Azure ML inference over HTTPS is complete (sslCname plus sslSecret or the protected certificate and "
        "key) unless insecure connections are allowed, and insecure connections are refused where the "
        "environment says so (Azure ML extension docs: allowInsecureConnections is for development or testing)."
    ),
    _check_https,
    applies={EXTENSION_TYPE_TOKEN},
    when=is_azureml,
    about=AZURE_ML.concern("network"),
    severity=Severity.HIGH,
    remediation="Set sslCname and sslSecret or the PEM pair; do not allow insecure connections in prod.",
    defaults=HTTPS_DEFAULTS,
    levels={
        "dev": with_options(ADVISORY, allowInsecureConnections=True),
        "staging": with_options(MANDATORY, allowInsecureConnections=True),
        "prod": with_options(MANDATORY, allowInsecureConnections=False),
    },
)

# --- azureml-secrets-protected -------------------------------------------------------------------

# Keys the CLI sends in protected settings (certificates, keys, connection strings).
SECRET_KEYS = frozenset(
    k.lower()
    for k in (
        "sslCertPemFile",
        "sslKeyPemFile",
        "scoringFe.sslCert",
        "scoringFe.sslKey",
        "relayServerConnectionString",
        "relayserver.relayConnectionString",
        "RelayConnectionString",
        "serviceBusConnectionString",
        "servicebus.connectionString",
        "azure_log_analytics.connection_string",
    )
)
_SECRET_KEY_WORDS = re.compile(
    r"connection_?string|password|passwd|private_?key|accountkey|sharedaccesskey|pem$", re.IGNORECASE
)
_SECRET_VALUE = re.compile(
    r"-----BEGIN [A-Z ]*(PRIVATE KEY|CERTIFICATE)|LS0tLS1CRUdJT|SharedAccessKey=|AccountKey=|Endpoint=sb://",
)


def secret_looking(key: str, value: Any) -> str | None:
    """Why a plain setting looks like secret material (never quoting the value), else None."""
    if key.lower() in SECRET_KEYS or _SECRET_KEY_WORDS.search(key):
        return "its key names a certificate, key or connection string"
    if isinstance(value, str) and _SECRET_VALUE.search(value):
        return "its value looks like a PEM, base64 PEM or connection string"
    return None


def _check_secrets(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    st = _settings_or_unknown(props, unknowns)
    if st is not None:
        for key, value in sorted(st.plain.items()):
            unknown = unknowns.hit(value, f"configurationSettings.{key}")
            why = secret_looking(key, None if unknown else value)
            if why:
                report(
                    f"{extension_label(args, props)} puts setting '{key}' in plain configurationSettings, but {why}; plain "
                    "settings are stored and shown in clear text by ARM and in the stack state. Remediation: move "
                    "it to configurationProtectedSettings and feed it from a secret config value "
                    "(`pulumi config set --secret`; in this project's stack files also `mldiag secrets set`)."
                )


secrets_protected = resource_rule(
    "azureml-secrets-protected",
    (
        "Certificates, keys and connection strings of a cluster extension go only into "
        "configurationProtectedSettings, never plain configurationSettings (Azure ML extension docs: sslCertPemFile and "
        "sslKeyPemFile are protected settings; the CLI puts the relay connection string there too)."
    ),
    _check_secrets,
    applies={EXTENSION_TYPE_TOKEN},
    about=AZURE_ML.concern("secrets"),
    severity=Severity.CRITICAL,
    remediation="Move secret material to configurationProtectedSettings, from secret config.",
    levels={"dev": MANDATORY},
)

# --- azureml-cluster-scope -----------------------------------------------------------------------


def _check_scope(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    scope = props.get("scope")
    if not unknowns.hit(scope, "scope"):
        cluster_scope = dig(scope, "cluster")
        ns = dig(scope, "cluster", "releaseNamespace")
        if dig(scope, "namespace") is not None or cluster_scope is None:
            report(
                f"{extension_label(args, props)} is not installed at cluster scope; the extension can be installed only at "
                "'cluster' scope (the CLI refuses namespace scope). Remediation: set "
                f"scope.cluster.releaseNamespace='{RELEASE_NAMESPACE}' and no scope.namespace."
            )
        elif not unknowns.hit(ns, "scope.cluster.releaseNamespace") and ns != RELEASE_NAMESPACE:
            report(
                f"{extension_label(args, props)} installs into release namespace {ns!r}; the extension's components and "
                f"the sslSecret are expected in '{RELEASE_NAMESPACE}' (Azure ML extension docs: `kubectl get pods -n azureml`). "
                f"Remediation: set scope.cluster.releaseNamespace='{RELEASE_NAMESPACE}'."
            )


cluster_scope = resource_rule(
    "azureml-cluster-scope",
    (
        "The Azure ML extension is installed at cluster scope with release namespace 'azureml' "
        "(Azure ML extension docs; the CLI refuses namespace scope)."
    ),
    _check_scope,
    applies={EXTENSION_TYPE_TOKEN},
    when=is_azureml,
    about=AZURE_ML.concern("configuration"),
    severity=Severity.MEDIUM,
    remediation="Use scope.cluster.releaseNamespace 'azureml'.",
    levels=FOLLOWS_BASE,
)

# --- azureml-arc-relay ---------------------------------------------------------------------------

RELAY_PLAIN_KEYS = ("relayserver.hybridConnectionResourceID", "relayserver.hybridConnectionName")
RELAY_PROTECTED_KEYS = ("relayserver.relayConnectionString", "relayServerConnectionString")


def is_arc(props: Mapping[str, Any]) -> bool:
    rp, kind = props.get("clusterRp"), props.get("clusterResourceName")
    return (isinstance(rp, str) and rp.lower() == "microsoft.kubernetes") or (
        isinstance(kind, str) and kind.lower() == "connectedclusters"
    )


def _check_relay(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    if unknowns.hit(props.get("clusterRp"), "clusterRp") or unknowns.hit(
        props.get("clusterResourceName"), "clusterResourceName"
    ):
        unknowns.finish()
    if not is_arc(props):
        return
    st = _settings_or_unknown(props, unknowns)
    if st is not None:
        missing = []
        enabled = st.plain.get("relayserver.enabled")
        if not unknowns.hit(enabled, "relayserver.enabled") and as_bool(enabled) is not True:
            missing.append("relayserver.enabled=true")
        missing += [k for k in RELAY_PLAIN_KEYS if not st.plain.get(k)]
        if st.protected_unknown:
            unknowns.note("configurationProtectedSettings")
        elif not any(st.protected.get(k) for k in RELAY_PROTECTED_KEYS):
            missing.append("relayserver.relayConnectionString (protected)")
        if missing:
            report(
                f"{extension_label(args, props)} targets an Arc cluster but lacks the relay settings {', '.join(missing)}; "
                "on Arc the relayserver reaches the Azure ML service through Azure Relay (Azure ML extension docs), and without "
                "them no job or deployment request arrives. Remediation: create the Azure Relay namespace, "
                "hybrid connection and azureml_rw rule (the AzureMlExtension component does for kind arc) and "
                "pass their id, name and connection string (protected)."
            )


arc_relay = resource_rule(
    "azureml-arc-relay",
    (
        "Azure ML extensions on Arc clusters carry the Azure Relay settings (relayserver enabled, hybrid "
        "connection id and name, protected connection string), as the CLI sets them (Azure ML extension docs: relayserver)."
    ),
    _check_relay,
    applies={EXTENSION_TYPE_TOKEN},
    when=is_azureml,
    about=AZURE_ML.concern("network"),
    severity=Severity.HIGH,
    remediation="Create the Azure Relay for the Arc cluster and pass its settings.",
    levels=FOLLOWS_BASE,
)

# --- azureml-version-pinned ----------------------------------------------------------------------


def _check_version(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    version, auto = props.get("version"), props.get("autoUpgradeMinorVersion")
    if unknowns.hit(version, "version") or unknowns.hit(auto, "autoUpgradeMinorVersion"):
        return
    name = extension_label(args, props)
    if not version:
        report(
            f"{name} is not pinned to a version: it follows release train "
            f"'{props.get('releaseTrain') or 'stable'}', so an upgrade can arrive with any deployment, and version "
            "resolution under auto-upgrade has failed installs (azure-cli-extensions#5325). Remediation: set the "
            "target's version (one `az k8s-extension extension-types list-versions-by-cluster` lists; a version "
            'that does not exist fails with "Chart path not found") and autoUpgradeMinorVersion: false.'
        )
    elif auto is not False:
        report(
            f"{name} pins version {version} but leaves autoUpgradeMinorVersion on; ARM (API 2023-05-01 on) refuses "
            "that combination. Remediation: set autoUpgradeMinorVersion: false."
        )


version_pinned = resource_rule(
    "azureml-version-pinned",
    (
        "The Azure ML extension runs a pinned version with autoUpgradeMinorVersion false (troubleshooting guide: "
        "a bad --version fails with 'Chart path not found'; azure-cli-extensions#5325: version resolution fails "
        "under auto-upgrade; ARM refuses a version with auto-upgrade on)."
    ),
    _check_version,
    applies={EXTENSION_TYPE_TOKEN},
    when=is_azureml,
    about=AZURE_ML.concern("versions"),
    severity=Severity.MEDIUM,
    remediation="Set version and autoUpgradeMinorVersion: false on the extension.",
    levels={"staging": ADVISORY},
)
