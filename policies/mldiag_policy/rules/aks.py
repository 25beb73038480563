"""AKS cluster rules from the Azure ML extension docs (prerequisites and limitations): managed identity and
local accounts, no Entra pod identity, the production size minimum (4 vCPU, 14 GB), authorised IP ranges
(advisory). `pool_nodes` counts a node pool's workers for these rules and the Azure ML extension's.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pulumi_policy import Severity

from .. import compat
from ..common import AZURE_ML, Defaults, Report, Unknowns, resource_rule
from ..forms import MANAGED_CLUSTER
from ..levels import ADVISORY, FOLLOWS_BASE
from ..values import as_bool, dig

# --- node pools (also read by azureml-inference-router-ha) ----------------------------------------


def pool_nodes(pool: Any) -> int | None:
    """Worker nodes of one AKS node pool (agentPoolProfiles item or AgentPool): minCount when autoscaled, else
    count (the API's default 1); None when the count is not a whole number."""
    if not isinstance(pool, dict):
        return None
    n = pool.get("minCount") if pool.get("enableAutoScaling") is True else pool.get("count")
    if n is None:
        return 1  # the API's default count
    # numbers arrive as doubles over the protocol
    return (
        int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) and float(n).is_integer() else None
    )


# --- aks-managed-identity-local-accounts ---------------------------------------------------------


def _check_aks(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    name = f"AKS cluster '{props.get('resourceName') or args.name}'"
    id_type = dig(props, "identity", "type")
    sp_client = dig(props, "servicePrincipalProfile", "clientId")
    problems = []
    if not unknowns.hit(id_type, "identity.type"):
        kinds = {t.strip().lower() for t in id_type.split(",")} if isinstance(id_type, str) else set()
        if not kinds & {"systemassigned", "userassigned"}:
            problems.append(f"identity.type is {id_type!r}, not SystemAssigned or UserAssigned")
    if not unknowns.hit(sp_client, "servicePrincipalProfile.clientId") and sp_client and sp_client != "msi":
        problems.append("it uses a service principal (servicePrincipalProfile.clientId)")
    if problems:
        report(
            f"{name}: {'; '.join(problems)}. Azure ML does not support AKS with a service principal; the cluster "
            "must use a system- or user-assigned managed identity (Azure ML extension docs, limitations). Remediation: set "
            "identity.type SystemAssigned (or UserAssigned) and no servicePrincipalProfile; a cluster converted "
            "from a service principal needs its node pools deleted and re-created before installing the extension."
        )
    disabled = props.get("disableLocalAccounts")
    if not unknowns.hit(disabled, "disableLocalAccounts") and disabled is True:
        report(
            f"{name} sets disableLocalAccounts=true, which Azure ML does not support (Azure ML extension docs, limitations). "
            "Remediation: remove disableLocalAccounts (local accounts are enabled by default)."
        )


aks_identity = resource_rule(
    "aks-managed-identity-local-accounts",
    (
        "AKS clusters use a managed identity (no service principal) and keep local accounts enabled, the two "
        "AKS settings the Azure ML extension docs list as unsupported by Azure ML."
    ),
    _check_aks,
    applies={MANAGED_CLUSTER},
    about=AZURE_ML.concern("identity"),
    severity=Severity.HIGH,
    remediation="Use a managed identity and leave local accounts enabled.",
    levels=FOLLOWS_BASE,
)


# --- aks-no-pod-identity -------------------------------------------------------------------------


def _check_pod_identity(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    enabled = dig(props, "podIdentityProfile", "enabled")
    if not unknowns.hit(enabled, "podIdentityProfile.enabled") and as_bool(enabled) is True:
        report(
            f"AKS cluster '{props.get('resourceName') or args.name}' enables Microsoft Entra pod identity "
            "(podIdentityProfile.enabled), a preview feature Azure ML does not support. Remediation: turn it off "
            "and use Microsoft Entra Workload ID (securityProfile.workloadIdentity) where pods need identities."
        )


no_pod_identity = resource_rule(
    "aks-no-pod-identity",
    "AKS clusters do not enable Microsoft Entra pod identity (Azure ML extension docs, limitations).",
    _check_pod_identity,
    applies={MANAGED_CLUSTER},
    about=AZURE_ML.concern("identity"),
    severity=Severity.HIGH,
    remediation="Disable podIdentityProfile.",
    levels=FOLLOWS_BASE,
)

# --- aks-node-size-minimum -----------------------------------------------------------------------


def vm_size(name: str, extra: dict[str, list[float]]) -> tuple[float, float] | None:
    """(vCPUs, GiB) of an Azure VM size: the options' vmSizes first, then the table the program's sizing
    preflight uses too (compat.azure_vm_size: Dv2/DSv2, Av2, B and the GPU families by name, D/E/F by series)."""
    spec = compat.azure_vm_size(name, extra)
    return None if spec is None else (spec[0], spec[1])


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
            "description": "Extra VM sizes as name -> [vCPUs, GiB] for sizes the built-in table misses.",
        },
        {},
    ),
}


def _check_size(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    pools = props.get("agentPoolProfiles")
    if unknowns.hit(pools, "agentPoolProfiles") or not isinstance(pools, list):
        unknowns.finish()
        return
    vcpus = mem = 0.0
    unknown_sizes = []
    for i, pool in enumerate(pools):
        size, nodes = dig(pool, "vmSize"), pool_nodes(pool)
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


node_size_minimum = resource_rule(
    "aks-node-size-minimum",
    (
        "AKS clusters for production have at least 4 vCPU cores and 14 GB of memory in their node pools "
        "(Azure ML extension docs, prerequisites)."
    ),
    _check_size,
    applies={MANAGED_CLUSTER},
    about=AZURE_ML.concern("sizing"),
    severity=Severity.MEDIUM,
    remediation="Size node pools to at least 4 vCPU and 14 GB in total.",
    defaults=SIZE_DEFAULTS,
    levels={"staging": ADVISORY},
)

# --- aks-authorized-ip-ranges (advisory) ---------------------------------------------------------

RANGES_DEFAULTS: Defaults = {
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
    """Some range of `cidr`'s IP version contains it (a range that is no CIDR is skipped, not fatal)."""
    net = _network(cidr)
    if net is None:
        return False
    same = [of for of in map(_network, ranges) if of is not None and of.version == net.version]
    return any(_subnet_of(net, of) for of in same)


def _subnet_of(
    net: ipaddress.IPv4Network | ipaddress.IPv6Network, of: ipaddress.IPv4Network | ipaddress.IPv6Network
) -> bool:
    """`net.subnet_of(of)` for two networks of one IP version (typed per version)."""
    if isinstance(net, ipaddress.IPv4Network) and isinstance(of, ipaddress.IPv4Network):
        return net.subnet_of(of)
    if isinstance(net, ipaddress.IPv6Network) and isinstance(of, ipaddress.IPv6Network):
        return net.subnet_of(of)
    return False


def _network(text: object) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(str(text), strict=False)
    except ValueError:
        return None


def _check_ranges(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
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


authorized_ip_ranges = resource_rule(
    "aks-authorized-ip-ranges",
    (
        "AKS clusters with authorised API server IP ranges admit the Azure ML control plane of both paired "
        "regions (Azure ML extension docs, limitations); advisory, since the ranges are the operator's to know."
    ),
    _check_ranges,
    applies={MANAGED_CLUSTER},
    about=AZURE_ML.concern("network"),
    severity=Severity.MEDIUM,
    remediation="Admit the Azure ML control plane ranges in authorizedIPRanges.",
    defaults=RANGES_DEFAULTS,
    levels={"staging": ADVISORY, "prod": ADVISORY},
)
