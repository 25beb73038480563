"""Rules from the Diagon manifest and the workload labelling step of the ML Diagnostics docs: Diagon gets no
CPU limit, Diagon on the host network resolves cluster names (dnsPolicy ClusterFirstWithHostNet), and the
webhook's opt-in label is exactly the string "true".
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import Severity

from .. import compat
from ..common import IN_CLUSTER, Report, Unknowns, resource_rule
from ..forms import K8S_KINDS, is_patch
from ..levels import FOLLOWS_BASE
from ..values import dig, name_of
from .kubernetes import DAEMONSET_TYPES, DIAGON_NAMESPACES_OPTION, containers, is_known_diagon, pod_spec_path

DIAGON_DEFAULTS = {"diagonNamespaces": DIAGON_NAMESPACES_OPTION}

# --- k8s-diagon-no-cpu-limit ---------------------------------------------------------------------


def _check_cpu(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    if not is_known_diagon(props, cfg, unknowns):
        return
    for path, c in containers(args.resource_type, props, unknowns):
        cpu = dig(c, "resources", "limits", "cpu")
        if not unknowns.hit(cpu, f"{path}.resources.limits.cpu") and cpu is not None:
            report(
                f"Diagon DaemonSet '{name_of(props, args.name)}' container '{c.get('name')}' sets a CPU limit "
                f"({cpu}); the vendor manifest requests 10m CPU and sets no CPU limit, because a throttled "
                "daemon misses profiling samples. Remediation: remove resources.limits.cpu (keep the 256Mi "
                "memory limit)."
            )


diagon_no_cpu_limit = resource_rule(
    "k8s-diagon-no-cpu-limit",
    (
        "The Diagon DaemonSet's containers set no CPU limit (ML Diagnostics docs, Diagon manifest: "
        "requests 10m CPU, limits memory only: '# No CPU limit')."
    ),
    _check_cpu,
    applies=DAEMONSET_TYPES,
    about=IN_CLUSTER.concern("resources"),
    severity=Severity.MEDIUM,
    remediation="Remove resources.limits.cpu from the Diagon containers.",
    defaults=DIAGON_DEFAULTS,
    levels=FOLLOWS_BASE,
)

# --- k8s-host-network-dns-policy -----------------------------------------------------------------

HOST_NET_DNS = "ClusterFirstWithHostNet"


def _check_dns(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    if not is_known_diagon(props, cfg, unknowns):
        return
    path = pod_spec_path(args.resource_type)
    spec = dig(props, *path)
    where = ".".join(path)
    if not unknowns.hit(spec, where) and isinstance(spec, dict):
        host, dns = spec.get("hostNetwork"), spec.get("dnsPolicy")
        known = not unknowns.hit(host, f"{where}.hostNetwork") and not unknowns.hit(dns, f"{where}.dnsPolicy")
        # a patch that leaves dnsPolicy out keeps the one the DaemonSet has
        if (
            known
            and host is True
            and dns != HOST_NET_DNS
            and not (dns is None and is_patch(args.resource_type))
        ):
            report(
                f"Diagon DaemonSet '{name_of(props, args.name)}' runs on the host network with dnsPolicy "
                f"{dns or 'ClusterFirst (the default)'}; on the host network that falls back to the node's "
                "resolver, so the daemon cannot resolve cluster names. Remediation: set "
                f"{where}.dnsPolicy: {HOST_NET_DNS}, as the vendor manifest does."
            )


host_network_dns_policy = resource_rule(
    "k8s-host-network-dns-policy",
    (
        "A Diagon DaemonSet with hostNetwork: true sets dnsPolicy: ClusterFirstWithHostNet "
        "(ML Diagnostics docs, Diagon manifest)."
    ),
    _check_dns,
    applies=DAEMONSET_TYPES,
    about=IN_CLUSTER.concern("network"),
    severity=Severity.MEDIUM,
    remediation="Set dnsPolicy ClusterFirstWithHostNet next to hostNetwork: true.",
    defaults=DIAGON_DEFAULTS,
    levels=FOLLOWS_BASE,
)

# --- k8s-opt-in-label-value ----------------------------------------------------------------------

LABELLED_TYPES = frozenset(K8S_KINDS.values()) | frozenset(t + "Patch" for t in K8S_KINDS.values())


def _check_opt_in(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    labels = dig(props, "metadata", "labels")
    if (
        not unknowns.hit(labels, "metadata.labels")
        and isinstance(labels, dict)
        and compat.OPT_IN_LABEL in labels
    ):
        value = labels[compat.OPT_IN_LABEL]
        if not unknowns.hit(value, f"metadata.labels.{compat.OPT_IN_LABEL}") and value != "true":
            kind = args.resource_type.rsplit(":", 1)[-1]
            report(
                f"{kind} '{name_of(props, args.name)}' sets label {compat.OPT_IN_LABEL}={value!r}; the injection "
                'webhook acts only on the exact string "true", so this workload gets no ML Diagnostics metadata. '
                f'Remediation: set {compat.OPT_IN_LABEL}: "true" (a quoted string), or remove the label.'
            )


opt_in_label_value = resource_rule(
    "k8s-opt-in-label-value",
    (
        f'The workload/namespace opt-in label {compat.OPT_IN_LABEL}, where set, is exactly the string "true" '
        "(ML Diagnostics docs, labelling workloads)."
    ),
    _check_opt_in,
    applies=LABELLED_TYPES,
    about=IN_CLUSTER.concern("configuration"),
    severity=Severity.MEDIUM,
    remediation=f'Set {compat.OPT_IN_LABEL}: "true".',
    levels=FOLLOWS_BASE,
)
