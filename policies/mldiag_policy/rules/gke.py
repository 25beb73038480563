"""GKE managed ML diagnostics rules.

Source: ML Diagnostics docs, "연산자 및 웹훅 설정": `--enable-managed-mldiagnostics` / Terraform
`managed_machine_learning_diagnostics_config { enabled = ... }` from GKE 1.35.0-gke.3065000 on; older
clusters take the manual install. The managed feature deploys the injection-webhook and connection-operator
itself. The threshold lives in this pack's compat.py (mldiag_policy/compat.py, a generated copy of the
library's components/ml_diagnostics/compat.py).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import Severity, StackValidationArgs

from .. import compat
from ..common import GKE, Report, Unknowns, resource_rule, stack_rule
from ..levels import FOLLOWS_BASE, MANDATORY, everywhere
from ..values import dig, is_unknown
from .helm import RELEASE_TYPE, release_info, release_kind
from .helm_mldiagnostics import provider_key

CLUSTER_TYPE = "gcp:container/cluster:Cluster"
ADOPTED_TYPE = "pulumi-python:dynamic/gke:ManagedMlDiagnostics"
K8S_PROVIDER_TYPE = "pulumi:providers:kubernetes"
MANAGED_BLOCK = "managedMachineLearningDiagnosticsConfig"


def version_problem(version: Any) -> str | None:
    """Why `version` does not guarantee GKE >= the managed threshold; None when it does."""
    if not version:
        return "no version is declared"
    # A prefix ("1.35.1", "1.36") means any build of it: fine when its first build is past the threshold.
    floor = compat.gke_version_floor(version)
    if floor is None:
        return f"version {version!r} does not pin a GKE version that can be compared with the threshold"
    if compat.supports_managed(floor):
        return None
    if str(floor) != str(version).strip().removeprefix("v"):
        return f"version {version!r} includes builds before the threshold (from {floor})"
    return f"the cluster runs {floor}"


def _remedy(field: str) -> str:
    return (
        f"Remediation: set {field} to {compat.MANAGED_MIN_VERSION} or later, or turn the managed flag off "
        "(mode manual) and install cert-manager, injection-webhook and connection-operator instead."
    )


# --- gke-managed-diagnostics-min-version ---------------------------------------------------------


def _check_min_version(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    if args.resource_type == CLUSTER_TYPE:
        enabled, field = dig(props, MANAGED_BLOCK, "enabled"), "minMasterVersion"
    else:
        enabled, field = props.get("enabled"), "clusterVersion"
    version = props.get(field)
    if not unknowns.hit(enabled, "enabled") and enabled is True and not unknowns.hit(version, field):
        problem = version_problem(version)
        if problem:
            report(
                f"GKE cluster '{props.get('name') or props.get('cluster') or args.name}' enables managed ML "
                f"diagnostics, which needs GKE {compat.MANAGED_MIN_VERSION} or later, but {problem} ({field}). "
                + _remedy(field)
            )


managed_min_version = resource_rule(
    "gke-managed-diagnostics-min-version",
    (
        f"Managed ML diagnostics is enabled only on GKE clusters whose version is at least "
        f"{compat.MANAGED_MIN_VERSION} (ML Diagnostics docs); older clusters need the manual install."
    ),
    _check_min_version,
    applies=(CLUSTER_TYPE, ADOPTED_TYPE),
    about=GKE.concern("versions"),
    severity=Severity.HIGH,
    remediation="Pin a GKE version at or above the threshold, or use the manual install.",
    levels=everywhere(MANDATORY),
)

# --- gke-managed-diagnostics-explicit ------------------------------------------------------------


def _check_explicit(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    if args.resource_type == CLUSTER_TYPE:
        block = props.get(MANAGED_BLOCK)
        enabled = dig(block, "enabled")
        path = f"{MANAGED_BLOCK}.enabled"
    else:
        enabled, path = props.get("enabled"), "enabled"
    if not unknowns.hit(enabled, path) and not isinstance(enabled, bool):
        report(
            f"GKE cluster '{props.get('name') or props.get('cluster') or args.name}' does not set {path} "
            "explicitly. The block is computed by the API, so leaving it out never turns the feature off and "
            "the cluster keeps whatever it had. Remediation: set managed_machine_learning_diagnostics_config="
            '{"enabled": True} or {"enabled": False} (the components always do).'
        )


managed_explicit = resource_rule(
    "gke-managed-diagnostics-explicit",
    (
        "The managed ML diagnostics block is set explicitly (enabled true or false) on every GKE cluster; "
        "omitting it does not disable the feature (ML Diagnostics docs: disabling needs enabled = false)."
    ),
    _check_explicit,
    applies=(CLUSTER_TYPE, ADOPTED_TYPE),
    about=GKE.concern("configuration"),
    severity=Severity.MEDIUM,
    remediation="Set managedMachineLearningDiagnosticsConfig.enabled to true or false.",
    levels=FOLLOWS_BASE,
)

# --- gke-no-manual-releases-when-managed (stack) -------------------------------------------------


def _closure(resource: Any) -> list[Any]:
    seen: dict[str, Any] = {}
    stack = list(resource.dependencies)
    for deps in resource.property_dependencies.values():
        stack += list(deps)
    while stack:
        r = stack.pop()
        if r.urn not in seen:
            seen[r.urn] = r
            stack += list(r.dependencies)
    return list(seen.values())


def _managed(r: Any, props: dict) -> bool | None:
    enabled = (
        dig(props, MANAGED_BLOCK, "enabled") if r.resource_type == CLUSTER_TYPE else props.get("enabled")
    )
    return None if is_unknown(enabled) else enabled is True


def _validate_no_manual_when_managed(args: StackValidationArgs, report: Report) -> None:
    unknowns = Unknowns()
    clusters = {r.urn: r for r in args.resources if r.resource_type in (CLUSTER_TYPE, ADOPTED_TYPE)}
    if not clusters:
        return
    # Which GKE cluster each Kubernetes provider talks to: a cluster resource it depends on, else the cluster
    # declared by the same component (same parent).
    cluster_of: dict[str, Any] = {}
    by_parent: dict[str | None, list[Any]] = {}
    for c in clusters.values():
        by_parent.setdefault(c.opts.parent, []).append(c)
    for p in args.resources:
        if p.resource_type != K8S_PROVIDER_TYPE:
            continue
        linked = [clusters[d.urn] for d in _closure(p) if d.urn in clusters]  # the canonical views
        if not linked and p.opts.parent:
            linked = by_parent.get(p.opts.parent, [])
        if len(linked) == 1:
            cluster_of[p.urn] = linked[0]
    for r in args.resources:
        if r.resource_type != RELEASE_TYPE:
            continue
        info = release_info(r.props, r.name)
        if unknowns.hit(info.chart, f"{r.urn}: chart"):
            continue
        kind = release_kind(info)
        cluster = cluster_of.get(provider_key(r))
        if kind not in ("webhook", "operator") or cluster is None:
            continue
        props = cluster.props
        managed = _managed(cluster, props)
        if managed is None:
            unknowns.note(f"{cluster.urn}: managed flag")
            continue
        if managed:
            report(
                f"Helm release '{info.release_name}' installs the {kind} by hand "
                f"on GKE cluster '{props.get('name') or props.get('cluster') or cluster.name}', which has managed "
                "ML diagnostics on; the managed feature deploys the injection-webhook and connection-operator "
                "itself, and two copies conflict. Remediation: drop the manual install for this cluster (mode "
                "managed or auto) or turn the managed flag off (mode manual).",
                r.urn,
            )
    unknowns.finish()


no_manual_when_managed = stack_rule(
    "gke-no-manual-releases-when-managed",
    (
        "No manual injection-webhook or connection-operator Helm release on a GKE cluster whose managed ML "
        "diagnostics flag is on (ML Diagnostics docs: the managed feature installs both)."
    ),
    _validate_no_manual_when_managed,
    about=GKE.concern("configuration"),
    severity=Severity.HIGH,
    remediation="Use either the managed flag or the manual releases on a cluster, not both.",
    levels=everywhere(MANDATORY),
)
