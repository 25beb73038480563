"""Helm rules for the ML Diagnostics charts themselves: the connection-operator's chart version and
controller args follow the docs' JAX table, and the injection-webhook / connection-operator releases depend
on cert-manager in the same cluster (ML Diagnostics docs, manual install). Facts live in compat.py.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import Severity, StackValidationArgs

from .. import compat
from ..common import IN_CLUSTER, Report, Unknowns, resource_rule, stack_rule
from ..levels import FOLLOWS_BASE, MANDATORY
from ..values import dig, is_unknown
from .helm import NAMESPACE_TYPE, RELEASE_TYPE, ReleaseInfo, release_info, release_kind, release_label

# --- helm-connection-operator-jax ----------------------------------------------------------------

JAX_DEFAULTS = {
    "allowCustomArgs": (
        {
            "type": "boolean",
            "description": "Accept controller args that match no row of the JAX table (reviewed overrides).",
        },
        False,
    ),
}


def _jax_of(rule: compat.ConnectionOperatorRule) -> str:
    return f"{rule.jax_min[0]}.{rule.jax_min[1]}"


def _is_operator(args: Any) -> bool:
    # options are read (and reported when invalid) only for connection-operator releases
    return (
        args.resource_type == RELEASE_TYPE and release_kind(release_info(args.props, args.name)) == "operator"
    )


def _check_connection_operator(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    info = release_info(props, args.name)
    values = info.values if info.values is not None else {}
    cmd_args = dig(values, *compat.CONNECTION_OPERATOR_ARGS_PATH)
    args_path = "values." + ".".join(compat.CONNECTION_OPERATOR_ARGS_PATH)
    if (
        unknowns.hit(values, "values")
        or unknowns.hit(cmd_args, args_path)
        or unknowns.hit(info.version, "version")
    ):
        unknowns.finish()
    table = "; ".join(
        f"JAX {r.jax}: chart {r.chart_version}{'' if r.chart_exact else ' or later'}, "
        + (f"args {list(r.args)}" if r.args else "no args override")
        for r in compat.CONNECTION_OPERATOR_BY_JAX
    )
    given = list(cmd_args) if isinstance(cmd_args, list) else cmd_args
    rows = [
        r
        for r in compat.CONNECTION_OPERATOR_BY_JAX
        # the flags are a set: their order does not matter to the controller
        if (r.args is None and given is None)
        or (
            r.args is not None
            and isinstance(given, list)
            and all(isinstance(a, str) for a in given)
            and sorted(given) == sorted(r.args)
        )
    ]
    if not rows:
        if not cfg["allowCustomArgs"]:
            report(
                f"{release_label(info)} overrides {'.'.join(compat.CONNECTION_OPERATOR_ARGS_PATH)} with args that match "
                f"no row of the JAX table; setting the list replaces all of the chart's default args. The table: "
                f"{table}. Remediation: use the table's args for the cluster's JAX version (the target's "
                "jaxVersion), or set allowCustomArgs for this policy after review."
            )
        unknowns.finish()
        return
    try:
        compat.parse_semver(info.version or "")
    except ValueError:
        report(
            f"{release_label(info)} has no exact chart version ({info.version!r}); the JAX table needs one. The table: "
            f"{table}. Remediation: pin the chart version from the table."
        )
        unknowns.finish()
        return
    problems = [compat.connection_operator_chart_problem(_jax_of(r), info.version) for r in rows]
    if all(problems):
        report(
            f"{release_label(info)} {info.version} with "
            f"{'the JAX 0.8.x args' if given is not None else 'no args override'}: {problems[0]}. The table: "
            f"{table}. Remediation: set the chart version and args for the cluster's JAX version together."
        )


connection_operator_jax = resource_rule(
    "helm-connection-operator-jax",
    (
        "The connection-operator release's chart version and controller args agree with the ML Diagnostics docs' JAX table "
        "(JAX 0.8.x: chart 0.24.0 with the four controller args; JAX 0.9.x+: chart 0.24.0 or later, default args)."
    ),
    _check_connection_operator,
    applies={RELEASE_TYPE},
    when=_is_operator,
    about=IN_CLUSTER.concern("versions"),
    severity=Severity.HIGH,
    remediation="Set chart version and controller args from the JAX table for the cluster's JAX version.",
    defaults=JAX_DEFAULTS,
    levels=FOLLOWS_BASE,
)

# --- helm-mldiagnostics-requires-cert-manager (stack) --------------------------------------------


def provider_key(resource: Any) -> str:
    """Which cluster a resource goes to: its Kubernetes provider's URN ('' for the ambient default)."""
    return resource.provider.urn if resource.provider is not None else ""


def _depends_on(resource: Any, target_urn: str) -> bool:
    seen: set[str] = set()
    stack = list(resource.dependencies)
    while stack:
        r = stack.pop()
        if r.urn == target_urn:
            return True
        if r.urn not in seen:
            seen.add(r.urn)
            stack += list(r.dependencies)
    return False


def _validate_requires_cert_manager(args: StackValidationArgs, report: Report) -> None:
    unknowns = Unknowns()
    releases: dict[str, list[tuple[Any, ReleaseInfo, str]]] = {}
    preinstalled: dict[tuple[str, str], str] = {}
    for r in args.resources:
        props = r.props
        if r.resource_type == RELEASE_TYPE:
            info = release_info(props, r.name)
            if unknowns.hit(info.chart, f"{r.urn}: chart"):
                continue
            kind = release_kind(info)
            if kind:
                releases.setdefault(provider_key(r), []).append((r, info, kind))
        elif r.resource_type == NAMESPACE_TYPE:
            name = dig(props, "metadata", "name")
            mark = dig(props, "metadata", "annotations", compat.CERT_MANAGER_ANNOTATION)
            if (
                isinstance(name, str)
                and not is_unknown(name)
                and isinstance(mark, str)
                and not is_unknown(mark)
            ):
                preinstalled[(provider_key(r), name)] = mark
    for cluster, items in releases.items():
        cert_managers = [r for r, _, kind in items if kind == "cert-manager"]
        for r, info, kind in items:
            if kind == "cert-manager":
                continue
            ns = (
                info.namespace if isinstance(info.namespace, str) and not is_unknown(info.namespace) else None
            )
            mark = preinstalled.get((cluster, ns or compat.MLDIAGNOSTICS_NAMESPACE))
            if mark == "preinstalled":
                continue
            where = f"provider {cluster}" if cluster else "the default provider"
            if not cert_managers:
                report(
                    f"{release_label(info)} needs cert-manager, but no cert-manager release goes to the same cluster "
                    f"({where}) and its namespace does not declare cert-manager pre-installed "
                    f"(annotation {compat.CERT_MANAGER_ANNOTATION}: preinstalled). Remediation: enable the "
                    "target's cert-manager install, or, if the cluster already runs cert-manager, declare it "
                    "pre-installed in the target's config.",
                    r.urn,
                )
            elif not any(_depends_on(r, cm.urn) for cm in cert_managers):
                report(
                    f"{release_label(info)} does not depend on the cert-manager release in the same cluster, so Helm may "
                    "install it before cert-manager's CRDs and webhook are ready. Remediation: add depends_on "
                    "on the cert-manager release (the components do this).",
                    r.urn,
                )
    unknowns.finish()


requires_cert_manager = stack_rule(
    "helm-mldiagnostics-requires-cert-manager",
    (
        "injection-webhook and connection-operator releases depend on a cert-manager release in the same "
        "cluster (same Kubernetes provider), unless the target declares cert-manager pre-installed "
        "(ML Diagnostics docs: cert-manager is the injection-webhook's prerequisite)."
    ),
    _validate_requires_cert_manager,
    about=IN_CLUSTER.concern("dependencies"),
    severity=Severity.HIGH,
    remediation="Install cert-manager in the same cluster and depend on it, or declare it pre-installed.",
    levels={"dev": MANDATORY},
)
