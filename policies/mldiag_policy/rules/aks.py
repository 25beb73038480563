"""Azure ML extension settings and AKS cluster rules from the extension docs' settings table and limitations:
setting keys in their exact case, internalLoadBalancerProvider on AKS only, inferenceRouterHA=False below 3
nodes, no Entra pod identity, the production size minimum (4 vCPU, 14 GB), authorised IP ranges (advisory).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from ..common import AZUREML_DOCS, Unknowns, as_bool, cited, config, dig, plain, schema
from ..forms import AGENT_POOL, MANAGED_CLUSTER
from .azure_ml import Settings, _ext, is_arc, is_azureml

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


def _validate_keys(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_azureml(args):
        return
    props = plain(args.props)
    unknowns = Unknowns()
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
                    f"{_ext(args, props)} {field} has key '{key}'; the extension reads '{want}' and silently "
                    f"ignores '{key}', so the setting has no effect. Remediation: rename it to '{want}'."
                )
    unknowns.finish()


setting_keys_case = ResourceValidationPolicy(
    name="azureml-setting-keys-case",
    description=(
        "Azure ML extension setting keys are spelled exactly as the settings table does (e.g. inferenceRouterHA, "
        "not InferenceRouterHA); a key in another case is silently ignored (Azure ML extension docs)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=cited(_validate_keys, AZUREML_DOCS),
    url=AZUREML_DOCS,
    severity=Severity.HIGH,
    remediation_steps="Spell setting keys exactly as the settings table does.",
)

# --- azureml-internal-lb-aks-only ----------------------------------------------------------------


def _validate_internal_lb(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_azureml(args):
        return
    props = plain(args.props)
    unknowns = Unknowns()
    st = Settings(props)
    if st.plain_unknown:
        unknowns.note("configurationSettings")
    elif "internalLoadBalancerProvider" in st.plain:
        value = st.plain["internalLoadBalancerProvider"]
        if not unknowns.hit(props.get("clusterRp"), "clusterRp") and is_arc(props):
            report(
                f"{_ext(args, props)} sets internalLoadBalancerProvider on an Arc cluster; the setting applies only "
                "to AKS clusters. Remediation: remove it and expose azureml-fe with inferenceRouterServiceType "
                "nodePort or clusterIP behind your own load balancer."
            )
        elif not unknowns.hit(value, "internalLoadBalancerProvider") and value != "azure":
            report(
                f"{_ext(args, props)} sets internalLoadBalancerProvider to {value!r}; the only value is 'azure'. "
                "Remediation: set internalLoadBalancerProvider=azure or remove it."
            )
    unknowns.finish()


internal_lb_aks_only = ResourceValidationPolicy(
    name="azureml-internal-lb-aks-only",
    description=(
        "internalLoadBalancerProvider is set only on AKS clusters and only to 'azure' "
        "(Azure ML extension docs, settings table)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=cited(_validate_internal_lb, AZUREML_DOCS),
    url=AZUREML_DOCS,
    severity=Severity.MEDIUM,
    remediation_steps="Use internalLoadBalancerProvider=azure on AKS only.",
)

# --- azureml-inference-router-ha (stack) ---------------------------------------------------------


def _pool_nodes(pool: Any) -> int | None:
    if not isinstance(pool, dict):
        return None
    n = pool.get("minCount") if pool.get("enableAutoScaling") is True else pool.get("count")
    if n is None:
        return 1  # the API's default count
    # numbers arrive as doubles over the protocol
    return (
        int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) and float(n).is_integer() else None
    )


def cluster_nodes(resources: list[Any]) -> dict[str, int | None]:
    """Worker nodes per AKS cluster name declared in the stack (None when a count is unknown)."""
    out: dict[str, int | None] = {}
    for r in resources:
        props = plain(r.props)
        if r.resource_type == MANAGED_CLUSTER:
            name = props.get("resourceName") or r.name
            counts = [_pool_nodes(p) for p in props.get("agentPoolProfiles") or []]
        elif r.resource_type == AGENT_POOL:
            name, counts = props.get("resourceName"), [_pool_nodes(props)]
        else:
            continue
        prev = out.get(name, 0)
        out[name] = None if prev is None or None in counts else prev + sum(counts)
    return out


def _validate_router_ha(args: StackValidationArgs, report: ReportViolation) -> None:
    nodes = cluster_nodes(args.resources)
    unknowns = Unknowns()
    for r in args.resources:
        if not is_azureml(r):
            continue
        props = plain(r.props)
        if is_arc(props) or props.get("clusterName") not in nodes:
            continue  # the cluster's size is not declared here
        st = Settings(props)
        if st.plain_unknown:
            unknowns.note(f"{r.urn}: configurationSettings")
            continue
        count = nodes[props.get("clusterName")]
        if count is None:
            unknowns.note(f"{r.urn}: node count of cluster {props.get('clusterName')}")
            continue
        ha = st.plain.get("inferenceRouterHA")
        if as_bool(st.plain.get("enableInference")) is True and count < 3 and as_bool(ha) is not False:
            report(
                f"{_ext(r, props)} enables inference on AKS cluster '{props.get('clusterName')}' with {count} "
                f"worker node(s) and inferenceRouterHA {'unset (default True)' if ha is None else repr(ha)}; the "
                "extension then deploys 3 azureml-fe replicas, which need at least 3 nodes. Remediation: set "
                "inferenceRouterHA=False (exactly that key), or give the cluster at least 3 nodes.",
                r.urn,
            )
    unknowns.finish()


inference_router_ha = StackValidationPolicy(
    name="azureml-inference-router-ha",
    description=(
        "An inference-enabled Azure ML extension on an AKS cluster with fewer than 3 worker nodes sets "
        "inferenceRouterHA=False (Azure ML extension docs, settings table)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=cited(_validate_router_ha, AZUREML_DOCS),
    url=AZUREML_DOCS,
    severity=Severity.HIGH,
    remediation_steps="Set inferenceRouterHA=False below 3 nodes.",
)

# --- aks-no-pod-identity -------------------------------------------------------------------------


def _validate_pod_identity(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != MANAGED_CLUSTER:
        return
    props = plain(args.props)
    unknowns = Unknowns()
    enabled = dig(props, "podIdentityProfile", "enabled")
    if not unknowns.hit(enabled, "podIdentityProfile.enabled") and as_bool(enabled) is True:
        report(
            f"AKS cluster '{props.get('resourceName') or args.name}' enables Microsoft Entra pod identity "
            "(podIdentityProfile.enabled), a preview feature Azure ML does not support. Remediation: turn it off "
            "and use Microsoft Entra Workload ID (securityProfile.workloadIdentity) where pods need identities."
        )
    unknowns.finish()


no_pod_identity = ResourceValidationPolicy(
    name="aks-no-pod-identity",
    description="AKS clusters do not enable Microsoft Entra pod identity (Azure ML extension docs, limitations).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=cited(_validate_pod_identity, AZUREML_DOCS),
    url=AZUREML_DOCS,
    severity=Severity.HIGH,
    remediation_steps="Disable podIdentityProfile.",
)

# --- aks-node-size-minimum -----------------------------------------------------------------------

# GiB of memory per vCPU by VM series (Standard_<series><vCPUs><features>[_v<n>]).
_SERIES_GIB_PER_VCPU = {"D": 4.0, "E": 8.0, "F": 2.0, "A": 2.0, "M": 28.0}
_SIZE = re.compile(r"Standard_(?P<series>[A-Z]+?)(?P<vcpu>\d+)[a-z]*(?:_v(?P<gen>\d+))?", re.IGNORECASE)
_B_SERIES = {"b1s": (1, 1), "b1ms": (1, 2), "b2s": (2, 4), "b2ms": (2, 8), "b4ms": (4, 16), "b8ms": (8, 32)}


def vm_size(name: str, extra: dict[str, list[float]]) -> tuple[float, float] | None:
    """(vCPUs, GiB) of an Azure VM size, from the options' table first, then the series rule."""
    if name in extra:
        return float(extra[name][0]), float(extra[name][1])
    short = name.removeprefix("Standard_").lower()
    if short in _B_SERIES:
        return _B_SERIES[short]
    m = _SIZE.fullmatch(name)
    if not m:
        return None
    series, vcpu, gen = m.group("series").upper(), int(m.group("vcpu")), m.group("gen")
    per = _SERIES_GIB_PER_VCPU.get(series[0])
    if per is None:
        return None
    if series.startswith("D") and (gen is None or gen == "2"):
        per = 3.5  # Dv2/DSv2: 3.5 GiB per vCPU
    return float(vcpu), vcpu * per


SIZE_DEFAULTS = {
    "minVcpus": ({"type": "number", "minimum": 0, "description": "Cluster vCPUs at least (docs: 4)."}, 4),
    "minMemoryGiB": (
        {"type": "number", "minimum": 0, "description": "Cluster memory at least (docs: 14)."},
        14,
    ),
    "vmSizes": (
        {
            "type": "object",
            "additionalProperties": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 2,
                "maxItems": 2,
            },
            "description": "Extra VM sizes as name -> [vCPUs, GiB] for sizes the built-in series rule misses.",
        },
        {},
    ),
}


def _validate_size(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != MANAGED_CLUSTER:
        return
    cfg = config(args, SIZE_DEFAULTS)
    props = plain(args.props)
    unknowns = Unknowns()
    pools = props.get("agentPoolProfiles")
    if unknowns.hit(pools, "agentPoolProfiles") or not isinstance(pools, list):
        unknowns.finish()
        return
    vcpus = mem = 0.0
    unknown_sizes = []
    for i, pool in enumerate(pools):
        size, nodes = dig(pool, "vmSize"), _pool_nodes(pool)
        if unknowns.hit(size, f"agentPoolProfiles[{i}].vmSize") or nodes is None:
            unknowns.note(f"agentPoolProfiles[{i}]")
            continue
        spec = vm_size(str(size), cfg["vmSizes"])
        if spec is None:
            unknown_sizes.append(str(size))
            continue
        vcpus, mem = vcpus + nodes * spec[0], mem + nodes * spec[1]
    name = f"AKS cluster '{props.get('resourceName') or args.name}'"
    if unknown_sizes:
        report(
            f"{name}: VM size(s) {', '.join(unknown_sizes)} are not known to this policy, so the production "
            "minimum cannot be checked. Remediation: add them to this policy's vmSizes option as [vCPUs, GiB]."
        )
    elif not unknowns.paths and (vcpus < cfg["minVcpus"] or mem < cfg["minMemoryGiB"]):
        report(
            f"{name} has {vcpus:g} vCPU and {mem:g} GiB in its node pools (autoscaled pools at their minimum); "
            f"production needs at least {cfg['minVcpus']:g} vCPU and {cfg['minMemoryGiB']:g} GB for the Azure ML "
            "extension. Remediation: use a larger vmSize or more nodes (e.g. 1 x Standard_D4s_v3)."
        )
    unknowns.finish()


node_size_minimum = ResourceValidationPolicy(
    name="aks-node-size-minimum",
    description=(
        "AKS clusters for production have at least 4 vCPU cores and 14 GB of memory in their node pools "
        "(Azure ML extension docs, prerequisites)."
    ),
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=schema(SIZE_DEFAULTS),
    validate=cited(_validate_size, AZUREML_DOCS),
    url=AZUREML_DOCS,
    severity=Severity.MEDIUM,
    remediation_steps="Size node pools to at least 4 vCPU and 14 GB in total.",
)

# --- aks-authorized-ip-ranges (advisory) ---------------------------------------------------------

RANGES_DEFAULTS = {
    "azureMlRanges": (
        {
            "type": "array",
            "items": {"type": "string"},
            "description": "Azure ML control plane CIDRs (both paired regions) the authorised ranges must admit.",
        },
        [],
    ),
}


def _covered(cidr: str, ranges: list[str]) -> bool:
    try:
        net = ipaddress.ip_network(cidr, strict=False)
        return any(net.subnet_of(ipaddress.ip_network(r, strict=False)) for r in ranges)
    except (ValueError, TypeError):
        return False


def _validate_ranges(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != MANAGED_CLUSTER:
        return
    cfg = config(args, RANGES_DEFAULTS)
    props = plain(args.props)
    unknowns = Unknowns()
    ranges = dig(props, "apiServerAccessProfile", "authorizedIPRanges")
    if (
        not unknowns.hit(ranges, "apiServerAccessProfile.authorizedIPRanges")
        and isinstance(ranges, list)
        and ranges
    ):
        name = f"AKS cluster '{props.get('resourceName') or args.name}'"
        missing = [c for c in cfg["azureMlRanges"] if not _covered(c, ranges)]
        if not cfg["azureMlRanges"]:
            report(
                f"{name} limits API server access to authorised IP ranges; Azure ML cannot deploy pods unless the "
                "ranges admit the Azure ML control plane of the region and its paired region. Remediation: add "
                "those ranges (AzureMachineLearning service tag), then list them in this policy's azureMlRanges "
                "so the check becomes exact."
            )
        elif missing:
            report(
                f"{name} authorised IP ranges do not admit the Azure ML control plane range(s) {', '.join(missing)}. "
                "Remediation: add them to apiServerAccessProfile.authorizedIPRanges (both paired regions)."
            )
    unknowns.finish()


authorized_ip_ranges = ResourceValidationPolicy(
    name="aks-authorized-ip-ranges",
    description=(
        "AKS clusters with authorised API server IP ranges admit the Azure ML control plane of both paired "
        "regions (Azure ML extension docs, limitations); advisory, since the ranges are the operator's to know."
    ),
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=schema(RANGES_DEFAULTS),
    validate=cited(_validate_ranges, AZUREML_DOCS),
    url=AZUREML_DOCS,
    severity=Severity.MEDIUM,
    remediation_steps="Admit the Azure ML control plane ranges in authorizedIPRanges.",
)
