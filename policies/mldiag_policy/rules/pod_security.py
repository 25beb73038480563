"""Pod Security admission: the Diagon DaemonSet's namespace must admit a privileged hostNetwork pod.

Source: ML Diagnostics docs (the Diagon DaemonSet manifest runs privileged with hostNetwork) and the
Kubernetes Pod Security Standards: a namespace labelled `pod-security.kubernetes.io/enforce: baseline` or
`restricted` rejects such pods, so the DaemonSet is created and schedules nothing. Only namespaces declared
in the stack are judged; a cluster-wide default is the cluster's (verify reports refused pods there).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import Severity, StackValidationArgs

from ..common import IN_CLUSTER, Report, Unknowns, config, pod_security_standards, stack_rule
from ..levels import FOLLOWS_BASE
from ..values import dig, is_unknown
from .helm import NAMESPACE_TYPE
from .helm_mldiagnostics import provider_key
from .kubernetes import DAEMONSET_TYPES, DIAGON_NAMESPACES_OPTION, is_diagon

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
REJECTING_LEVELS = ("baseline", "restricted")
DEFAULTS = {"diagonNamespaces": DIAGON_NAMESPACES_OPTION}


def _validate(args: StackValidationArgs, report: Report) -> None:
    cfg = config(args, DEFAULTS)
    unknowns = Unknowns()
    levels: dict[tuple[str, str], tuple[Any, str]] = {}
    daemons = []
    for r in args.resources:
        props = r.props
        if r.resource_type in (NAMESPACE_TYPE, NAMESPACE_TYPE + "Patch"):
            name = dig(props, "metadata", "name")
            level = dig(props, "metadata", "labels", ENFORCE_LABEL)
            if isinstance(name, str) and not is_unknown(name) and level is not None:
                if unknowns.hit(level, f"{r.urn}: metadata.labels.{ENFORCE_LABEL}"):
                    continue
                levels[(provider_key(r), name)] = (level, r.urn)
        elif r.resource_type in DAEMONSET_TYPES and is_diagon(props, cfg["diagonNamespaces"]):
            daemons.append(r)
    for d in daemons:
        ns = dig(d.props, "metadata", "namespace")
        found = levels.get((provider_key(d), ns))
        if found is None or str(found[0]).lower() not in REJECTING_LEVELS:
            continue
        report(
            f"The Diagon DaemonSet in namespace '{ns}' runs privileged with hostNetwork, but that namespace "
            f"enforces Pod Security '{found[0]}' ({ENFORCE_LABEL}), which rejects its pods: nothing schedules. "
            f"Remediation: label the namespace {ENFORCE_LABEL}: privileged (the namespace the program creates "
            "for Diagon carries it), or run Diagon in a namespace that admits privileged pods.",
            d.urn,
        )
    unknowns.finish()


# Pod Security Admission of the namespace: the profiles that reject what the Diagon DaemonSet needs.
POD_SECURITY_ADMISSION = pod_security_standards(
    "Pod Security Admission (pod-security.kubernetes.io/enforce): the Baseline and Restricted profiles reject "
    "privileged containers and host networking; the Diagon DaemonSet's namespace needs the Privileged profile"
)

diagon_pod_security = stack_rule(
    "k8s-diagon-pod-security",
    (
        "The namespace of the Diagon DaemonSet, where the stack declares it, does not enforce the baseline or "
        "restricted Pod Security level, which would reject the privileged hostNetwork daemon."
    ),
    _validate,
    about=IN_CLUSTER.concern("pod-security", POD_SECURITY_ADMISSION),
    severity=Severity.HIGH,
    remediation=f"Label the Diagon namespace {ENFORCE_LABEL}: privileged.",
    defaults=DEFAULTS,
    levels=FOLLOWS_BASE,
)
