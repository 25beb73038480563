"""Azure ML extension rules across settings and the stack (Azure ML extension docs, settings table and
limitations): setting keys in their exact case, internalLoadBalancerProvider on AKS only, inferenceRouterHA
below 3 nodes, and no cross-subscription attach.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import Severity, StackValidationArgs

from ..common import AZURE_ML, Defaults, Report, Unknowns, config, resource_rule, stack_rule
from ..forms import AGENT_POOL, MANAGED_CLUSTER
from ..levels import FOLLOWS_BASE, MANDATORY
from ..values import as_bool, plain
from .aks import pool_nodes
from .azure_ml import EXTENSION_TYPE_TOKEN, Settings, extension_label, is_arc, is_azureml

# Keys from the settings table and the CLI's own keys; the extension reads them case-sensitively.
KNOWN_KEYS = (
    "enableTraining", "enableInference", "allowInsecureConnections", "inferenceRouterServiceType",
    "internalLoadBalancerProvider", "sslSecret", "sslCname", "inferenceRouterHA", "installNvidiaDevicePlugin",
    "installPromOp", "installVolcano", "installDcgmExporter", "sslCertPemFile", "sslKeyPemFile",
    "clusterId", "cluster_name", "domain", "location", "jobSchedulerLocation", "cluster_name_friendly",
    "clusterPurpose", "relayserver.enabled", "relayserver.hybridConnectionResourceID",
    "relayserver.hybridConnectionName", "relayserver.relayConnectionString", "servicebus.enabled",
    "scoringFe.sslCert", "scoringFe.sslKey", "scoringFe.sslSecret", "scoringFe.namespace",
)  # fmt: skip
PREFIX_KEYS = ("nodeSelector.",)
_BY_LOWER = {k.lower(): k for k in KNOWN_KEYS}

# --- azureml-setting-keys-case -------------------------------------------------------------------


def wrong_case(key: str) -> str | None:
    """The spelling the extension reads when `key` differs from it only in case, else None."""
    want = _BY_LOWER.get(key.lower())
    if want is not None and want != key:
        return want
    for prefix in PREFIX_KEYS:
        if key.lower().startswith(prefix.lower()) and not key.startswith(prefix):
            return prefix + key[len(prefix) :]
    return None


def _check_keys(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    st = Settings(props)
    for field, known, settings in (
        ("configurationSettings", st.plain_unknown, st.plain),
        ("configurationProtectedSettings", st.protected_unknown, st.protected),
    ):
        if known:
            unknowns.note(field)
            continue
        for key in sorted(settings):
            want = wrong_case(key)
            if want:
                report(
                    f"{extension_label(args, props)} {field} has key '{key}'; the extension reads '{want}' and silently "
                    f"ignores '{key}', so the setting has no effect. Remediation: rename it to '{want}'."
                )


setting_keys_case = resource_rule(
    "azureml-setting-keys-case",
    (
        "Azure ML extension setting keys are spelled exactly as the settings table does (e.g. inferenceRouterHA, "
        "not InferenceRouterHA); a key in another case is silently ignored (Azure ML extension docs)."
    ),
    _check_keys,
    applies={EXTENSION_TYPE_TOKEN},
    when=is_azureml,
    about=AZURE_ML.concern("configuration"),
    severity=Severity.HIGH,
    remediation="Spell setting keys exactly as the settings table does.",
    levels=FOLLOWS_BASE,
)

# --- azureml-internal-lb-aks-only ----------------------------------------------------------------


def _check_internal_lb(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    st = Settings(props)
    if st.plain_unknown:
        unknowns.note("configurationSettings")
    elif "internalLoadBalancerProvider" in st.plain:
        value = st.plain["internalLoadBalancerProvider"]
        if not unknowns.hit(props.get("clusterRp"), "clusterRp") and is_arc(props):
            report(
                f"{extension_label(args, props)} sets internalLoadBalancerProvider on an Arc cluster; the setting applies only "
                "to AKS clusters. Remediation: remove it and expose azureml-fe with inferenceRouterServiceType "
                "nodePort or clusterIP behind your own load balancer."
            )
        elif not unknowns.hit(value, "internalLoadBalancerProvider") and value != "azure":
            report(
                f"{extension_label(args, props)} sets internalLoadBalancerProvider to {value!r}; the only value is 'azure'. "
                "Remediation: set internalLoadBalancerProvider=azure or remove it."
            )


internal_lb_aks_only = resource_rule(
    "azureml-internal-lb-aks-only",
    (
        "internalLoadBalancerProvider is set only on AKS clusters and only to 'azure' "
        "(Azure ML extension docs, settings table)."
    ),
    _check_internal_lb,
    applies={EXTENSION_TYPE_TOKEN},
    when=is_azureml,
    about=AZURE_ML.concern("network"),
    severity=Severity.MEDIUM,
    remediation="Use internalLoadBalancerProvider=azure on AKS only.",
    levels=FOLLOWS_BASE,
)

# --- azureml-inference-router-ha (stack) ---------------------------------------------------------


def cluster_nodes(resources: list[Any]) -> dict[str, int | None]:
    """Worker nodes per AKS cluster name declared in the stack (None when a count is unknown)."""
    out: dict[str, int | None] = {}
    for r in resources:
        props = r.props
        if r.resource_type == MANAGED_CLUSTER:
            name, pools = props.get("resourceName") or r.name, props.get("agentPoolProfiles") or []
            counts = [pool_nodes(p) for p in pools] if isinstance(pools, list) else [None]
        elif r.resource_type == AGENT_POOL:
            name, counts = props.get("resourceName"), [pool_nodes(props)]
        else:
            continue
        if not isinstance(name, str):
            continue
        prev = out.get(name, 0)
        known = [c for c in counts if c is not None]
        out[name] = None if prev is None or len(known) < len(counts) else prev + sum(known)
    return out


def _validate_router_ha(args: StackValidationArgs, report: Report) -> None:
    nodes = cluster_nodes(args.resources)
    unknowns = Unknowns()
    for r in args.resources:
        if not is_azureml(r):
            continue
        props = r.props
        cluster_name = props.get("clusterName")
        if is_arc(props) or not isinstance(cluster_name, str) or cluster_name not in nodes:
            continue  # the cluster's size is not declared here
        st = Settings(props)
        if st.plain_unknown:
            unknowns.note(f"{r.urn}: configurationSettings")
            continue
        count = nodes[cluster_name]
        if count is None:
            unknowns.note(f"{r.urn}: node count of cluster {props.get('clusterName')}")
            continue
        ha = st.plain.get("inferenceRouterHA")
        if as_bool(st.plain.get("enableInference")) is True and count < 3 and as_bool(ha) is not False:
            report(
                f"{extension_label(r, props)} enables inference on AKS cluster '{props.get('clusterName')}' with {count} "
                f"worker node(s) and inferenceRouterHA {'unset (default True)' if ha is None else repr(ha)}; the "
                "extension then deploys 3 azureml-fe replicas, which need at least 3 nodes. Remediation: set "
                "inferenceRouterHA=False (exactly that key), or give the cluster at least 3 nodes.",
                r.urn,
            )
    unknowns.finish()


inference_router_ha = stack_rule(
    "azureml-inference-router-ha",
    (
        "An inference-enabled Azure ML extension on an AKS cluster with fewer than 3 worker nodes sets "
        "inferenceRouterHA=False (Azure ML extension docs, settings table)."
    ),
    _validate_router_ha,
    about=AZURE_ML.concern("availability"),
    severity=Severity.HIGH,
    remediation="Set inferenceRouterHA=False below 3 nodes.",
    levels={"dev": MANDATORY},
)


# --- azureml-allowed-subscriptions (stack) -------------------------------------------------------

SUBSCRIPTION_DEFAULTS: Defaults = {
    "allowedSubscriptions": (
        {
            "type": "array",
            "items": {"type": "string"},
            "description": "Subscription ids whose clusters may get the extension (the workspace's subscription).",
        },
        [],
    ),
}
_ARM_SUB = re.compile(r"^/subscriptions/([^/]+)/", re.IGNORECASE)


def extension_subscription(
    resource: Any, props: Mapping[str, Any], unknowns: Unknowns
) -> tuple[str | None, str]:
    """(subscription id, where it came from) for an extension: its cluster's ARM id, else its provider.
    Unknown values met on the way are noted; (None, "") when nothing known names the subscription."""
    st = Settings(props)
    if unknowns.hit(props.get("configurationSettings"), f"{resource.urn}: configurationSettings"):
        return None, ""
    for key in ("clusterId", "cluster_name"):
        v = st.plain.get(key)
        if unknowns.hit(v, f"{resource.urn}: configurationSettings.{key}"):
            return None, ""
        if isinstance(v, str):
            m = _ARM_SUB.match(v)
            if m:
                return m.group(1).lower(), f"configurationSettings.{key}"
    if resource.provider is not None:
        sub = plain(resource.provider.props).get("subscriptionId")
        if unknowns.hit(sub, f"{resource.provider.urn}: subscriptionId"):
            return None, ""
        if isinstance(sub, str) and sub:
            return sub.lower(), "the azure-native provider's subscriptionId"
    return None, ""


def _validate_subscriptions(args: StackValidationArgs, report: Report) -> None:
    cfg = config(args, SUBSCRIPTION_DEFAULTS)
    allowed_subs = [s.lower() for s in cfg["allowedSubscriptions"]]
    unknowns = Unknowns()
    for r in args.resources:
        if not is_azureml(r):
            continue
        props = r.props
        before = len(unknowns.paths)
        sub, source = extension_subscription(r, props, unknowns)
        name = f"Azure ML extension '{props.get('extensionName') or r.name}'"
        if len(unknowns.paths) > before:
            continue
        if sub is None:
            report(
                f"{name}: the cluster's subscription cannot be determined (no ARM id in clusterId/cluster_name and "
                "no subscriptionId on its provider). Remediation: set an explicit azure-native provider with "
                "subscriptionId, or the cluster's ARM id in the settings (the component does).",
                r.urn,
            )
        elif not allowed_subs:
            report(
                f"{name} attaches a cluster in subscription {sub}, but this environment lists no allowed "
                "subscriptions. Remediation: set allowedSubscriptions for azureml-allowed-subscriptions in "
                "policies/config/<stack>.json to the Azure ML workspace's subscription.",
                r.urn,
            )
        elif sub not in allowed_subs:
            report(
                f"{name} attaches a cluster in subscription {sub} ({source}), which is not an allowed "
                f"subscription ({', '.join(allowed_subs)}); Azure ML does not attach AKS clusters across "
                "subscriptions (Azure ML extension docs). Remediation: use a cluster in the workspace's subscription, or connect "
                "the cluster to Azure Arc and register it in the workspace's subscription.",
                r.urn,
            )
    unknowns.finish()


allowed_subscriptions = stack_rule(
    "azureml-allowed-subscriptions",
    (
        "Every Azure ML extension's cluster is in an allowed subscription (the workspace's): Azure ML does not "
        "attach clusters across subscriptions (Azure ML extension docs, limitations)."
    ),
    _validate_subscriptions,
    about=AZURE_ML.concern("accounts"),
    severity=Severity.HIGH,
    remediation="Attach clusters from the workspace's subscription or via Azure Arc.",
    defaults=SUBSCRIPTION_DEFAULTS,
    # no environment lists subscriptions: each stack's own policies/config/<stack>.json does
    levels=FOLLOWS_BASE,
)
