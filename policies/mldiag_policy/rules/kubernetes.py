"""Kubernetes workload rules: privileged access only for the Diagon DaemonSet, DaemonSet memory limits.

Source: ML Diagnostics docs (Diagon DaemonSet manifest: privileged, hostNetwork, requests 10m/32Mi, limit 256Mi memory,
no CPU limit; it runs on every GPU/TPU node, so a DaemonSet without a memory limit can starve training pods).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import Severity

from .. import compat
from ..common import IN_CLUSTER, Report, Unknowns, pod_security_standards, resource_rule
from ..forms import is_patch
from ..levels import FOLLOWS_BASE
from ..values import dig, is_unknown, name_of

WORKLOAD_TYPES = frozenset(
    f"kubernetes:{group}:{kind}{suffix}"
    for group, kind in (
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "ReplicaSet"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("core/v1", "Pod"),
    )
    for suffix in ("", "Patch")
)
DAEMONSET_TYPES = frozenset({"kubernetes:apps/v1:DaemonSet", "kubernetes:apps/v1:DaemonSetPatch"})

DIAGON_DAEMON_NAME = "diagon-daemon"


def pod_spec_path(resource_type: str) -> tuple[str, ...]:
    kind = resource_type.rsplit(":", 1)[-1].removesuffix("Patch")
    if kind == "Pod":
        return ("spec",)
    if kind == "CronJob":
        return ("spec", "jobTemplate", "spec", "template", "spec")
    return ("spec", "template", "spec")


def containers(resource_type: str, props: dict, unknowns: Unknowns) -> Iterator[tuple[str, dict]]:
    """(path, container) for every init and regular container; unknown parts are noted in `unknowns`."""
    path = pod_spec_path(resource_type)
    spec = dig(props, *path)
    if unknowns.hit(spec, ".".join(path)):
        return
    for key in ("initContainers", "containers"):
        items = dig(spec, key)
        where = ".".join((*path, key))
        if unknowns.hit(items, where) or not isinstance(items, list):
            continue
        for i, c in enumerate(items):
            if not unknowns.hit(c, f"{where}[{i}]") and isinstance(c, dict):
                yield f"{where}[{i}]", c


def is_diagon(props: Mapping[str, Any], diagon_namespaces: list[str]) -> bool | None:
    """The Diagon DaemonSet: in a Diagon namespace, named diagon-daemon or labelled part-of diagon.

    None when it looks like Diagon but its namespace is unknown until apply (an output of the Namespace).
    """
    meta = props.get("metadata") or {}
    if not isinstance(meta, dict):
        return False
    labels = meta.get("labels") or {}
    labels = labels if isinstance(labels, dict) else {}
    looks_like = (
        meta.get("name") == DIAGON_DAEMON_NAME
        or labels.get("app.kubernetes.io/name") == DIAGON_DAEMON_NAME
        or labels.get("app.kubernetes.io/part-of") == "diagon"
    )
    if not looks_like:
        return False
    if is_unknown(meta.get("namespace")):
        return None
    return meta.get("namespace") in diagon_namespaces


def is_known_diagon(props: dict, cfg: dict, unknowns: Unknowns) -> bool:
    """The Diagon DaemonSet (`is_diagon` with the rule's diagonNamespaces); an unknown namespace is noted."""
    diagon = is_diagon(props, cfg["diagonNamespaces"])
    if diagon is None:
        unknowns.note("metadata.namespace")
    return bool(diagon)


# The diagonNamespaces option (schema, default), shared by the rules that recognise the Diagon DaemonSet.
DIAGON_NAMESPACES_OPTION = (
    {
        "type": "array",
        "items": {"type": "string"},
        "description": "Namespaces the Diagon DaemonSet may run in (the stack's diagon.namespace).",
    },
    [compat.DIAGON_DEFAULT_NAMESPACE],
)

# --- k8s-privileged-only-diagon ------------------------------------------------------------------

PRIVILEGED_DEFAULTS = {"diagonNamespaces": DIAGON_NAMESPACES_OPTION}


def _check_privileged(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    if args.resource_type in DAEMONSET_TYPES:
        diagon = is_diagon(props, cfg["diagonNamespaces"])
        if diagon:
            return
        if diagon is None:
            unknowns.note("metadata.namespace")
            unknowns.finish()
    kind = args.resource_type.rsplit(":", 1)[-1]
    where = f"{kind} '{name_of(props, args.name)}'"
    spec_path = pod_spec_path(args.resource_type)
    spec = dig(props, *spec_path)
    found: list[str] = []
    if not unknowns.hit(spec, ".".join(spec_path)) and isinstance(spec, dict):
        for field in ("hostNetwork", "hostPID", "hostIPC"):
            v = spec.get(field)
            if not unknowns.hit(v, f"{'.'.join(spec_path)}.{field}") and v is True:
                found.append(f"{field}: true")
    for path, c in containers(args.resource_type, props, unknowns):
        sc = c.get("securityContext") or {}
        if unknowns.hit(sc, f"{path}.securityContext") or not isinstance(sc, dict):
            continue
        priv = sc.get("privileged")
        if not unknowns.hit(priv, f"{path}.securityContext.privileged") and priv is True:
            found.append(f"container '{c.get('name')}' privileged: true")
    if found:
        report(
            f"{where} requests host access ({'; '.join(found)}). Only the Diagon DaemonSet (named "
            f"'{DIAGON_DAEMON_NAME}' or labelled app.kubernetes.io/part-of=diagon, in namespace "
            f"{' or '.join(cfg['diagonNamespaces'])}) may run privileged or on the host network. "
            "Remediation: remove these fields from the workload; if this is the Diagon daemon, deploy it "
            "through the stack's diagon settings, or add its namespace to this policy's diagonNamespaces."
        )


# The Baseline profile's controls it checks, for every pod but Diagon's (which needs the Privileged profile).
POD_SECURITY_PRIVILEGED = pod_security_standards(
    "Baseline profile: Privileged Containers (securityContext.privileged) and Host Namespaces (hostNetwork, "
    "hostPID, hostIPC); the Diagon DaemonSet alone runs under the Privileged profile"
)

privileged_only_diagon = resource_rule(
    "k8s-privileged-only-diagon",
    (
        "Privileged containers, hostNetwork, hostPID and hostIPC are allowed only for the Diagon DaemonSet in "
        "its namespace (ML Diagnostics docs: Diagon needs privileged mode to read host GPU/TPU devices; nothing else does)."
    ),
    _check_privileged,
    applies=WORKLOAD_TYPES,
    about=IN_CLUSTER.concern("pod-security", POD_SECURITY_PRIVILEGED),
    severity=Severity.CRITICAL,
    remediation="Remove privileged/hostNetwork/hostPID/hostIPC from the workload.",
    defaults=PRIVILEGED_DEFAULTS,
    levels=FOLLOWS_BASE,
)

# --- k8s-daemonset-memory-limit ------------------------------------------------------------------

_QUANTITY = re.compile(r"([+]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|K|M|G|T|P|E)?")
_FACTORS = {
    None: 1,
    "m": 1e-3,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def parse_quantity(text: Any) -> float:
    """Bytes of a Kubernetes quantity ('256Mi', '1G', '134217728'); ValueError if it is not one."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    m = _QUANTITY.fullmatch(str(text).strip())
    if not m:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    return float(m.group(1)) * _FACTORS[m.group(2)]


MEMORY_DEFAULTS = {
    "diagonNamespaces": DIAGON_NAMESPACES_OPTION,
    "diagonMaxMemory": (
        {
            "type": "string",
            "description": "Largest memory limit for the Diagon daemon (the docs' manifest: 256Mi).",
        },
        "256Mi",
    ),
    "maxMemory": (
        {
            "type": "string",
            "description": "Largest memory limit for any other DaemonSet container; '' = no cap.",
        },
        "",
    ),
}


def _check_memory(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    diagon = is_diagon(props, cfg["diagonNamespaces"])
    if diagon is None:
        # Which cap applies depends on the namespace; a missing limit is reported either way.
        unknowns.note("metadata.namespace")
    cap_text = cfg["diagonMaxMemory"] if diagon else ("" if diagon is None else cfg["maxMemory"])
    try:
        cap = parse_quantity(cap_text) if cap_text else None
    except ValueError:
        key = "diagonMaxMemory" if diagon else "maxMemory"
        report(
            f"this policy's {key} option {cap_text!r} is not a Kubernetes quantity, so the limit cannot be "
            f"checked. Remediation: set {key} to a quantity such as 256Mi in policies/config/<stack>.json."
        )
        return
    ds = f"DaemonSet '{name_of(props, args.name)}'"
    for path, c in containers(args.resource_type, props, unknowns):
        limit = dig(c, "resources", "limits", "memory")
        if unknowns.hit(limit, f"{path}.resources.limits.memory"):
            continue
        cname = c.get("name")
        if limit is None and is_patch(args.resource_type):
            continue  # absent in a patch: the limit the DaemonSet has stays
        if limit is None:
            report(
                f"{ds} container '{cname}' declares no memory limit: a DaemonSet runs on every selected node, "
                "and an unbounded one can starve the training pods there. Remediation: set "
                f"resources.limits.memory (the ML Diagnostics docs' manifest sets 256Mi for Diagon){f', at most {cap_text}' if cap else ''}."
            )
            continue
        try:
            value = parse_quantity(limit)
        except ValueError:
            report(
                f"{ds} container '{cname}' memory limit {limit!r} is not a Kubernetes quantity. Remediation: "
                "write it as bytes with a suffix, e.g. 256Mi or 1Gi."
            )
            continue
        if cap is not None and value > cap:
            who = "the Diagon daemon" if diagon else "a DaemonSet container"
            report(
                f"{ds} container '{cname}' memory limit {limit} exceeds {cap_text}, the cap for {who}. "
                f"Remediation: lower resources.limits.memory to {cap_text} or less (the ML Diagnostics docs' manifest uses "
                "256Mi), or raise this policy's cap in policies/config/<stack>.json after review."
            )


daemonset_memory_limit = resource_rule(
    "k8s-daemonset-memory-limit",
    (
        "Every DaemonSet container declares a memory limit; the Diagon daemon's is at most 256Mi by default "
        "(ML Diagnostics docs, Diagon manifest: limits.memory 256Mi, no CPU limit)."
    ),
    _check_memory,
    applies=DAEMONSET_TYPES,
    about=IN_CLUSTER.concern("resources"),
    severity=Severity.MEDIUM,
    remediation="Set resources.limits.memory on every DaemonSet container, within the configured cap.",
    defaults=MEMORY_DEFAULTS,
    levels=FOLLOWS_BASE,
)
