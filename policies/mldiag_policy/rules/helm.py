"""Helm release rules: pinned chart versions, allowed repositories, cert-manager CRD values (the
connection-operator's JAX table and the webhook/operator's dependency on cert-manager are in
helm_mldiagnostics.py; both read releases through `release_info` here).

Source: ML Diagnostics docs, "수동 설치" (manual install): cert-manager v1.13.0 from charts.jetstack.io with
`installCRDs=true` as the injection-webhook's prerequisite; injection-webhook 0.25.0 and connection-operator
0.24.0 from oci://us-docker.pkg.dev/ai-on-gke/...; the JAX table. The facts themselves live in
this pack's compat.py (a generated copy of the library's ml_diagnostics/compat.py); this module only
applies them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import Severity

from .. import cert_manager_schema, compat
from ..common import IN_CLUSTER, Report, Unknowns, resource_rule
from ..levels import ADVISORY, FOLLOWS_BASE, MANDATORY
from ..values import as_bool, dig, is_unknown

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"


@dataclass
class ReleaseInfo:
    release_name: str  # Helm release name (or the Pulumi name when unset)
    chart: str | None  # chart input as given
    chart_name: str | None  # basename of the chart
    location: str | None  # repository URL (https:// or oci://) the chart comes from; None if not a repository
    source_problem: str | None  # why the source is not a repository
    version: Any
    namespace: Any
    values: Any


def release_info(props: Mapping[str, Any], fallback_name: str) -> ReleaseInfo:
    chart = props.get("chart")
    repo = dig(props, "repositoryOpts", "repo")
    given = props.get("name")
    name = given if isinstance(given, str) else fallback_name
    chart_name = location = problem = None
    if isinstance(chart, str) and not is_unknown(chart):
        chart_name = chart.rstrip("/").rsplit("/", 1)[-1]
        if chart.startswith("oci://"):
            location = chart.rstrip("/").rsplit("/", 1)[0]
        elif isinstance(repo, str) and repo and not is_unknown(repo):
            location = repo.rstrip("/")
        elif chart.startswith((".", "/")) or chart.endswith((".tgz", ".tar.gz")):
            problem = f"chart '{chart}' is a local path or archive, not a chart repository"
        elif "/" in chart:
            problem = (
                f"chart '{chart}' names a repository alias from the local Helm config, which differs per "
                "machine; set repositoryOpts.repo to the repository URL instead"
            )
        else:
            problem = f"chart '{chart}' has no repositoryOpts.repo"
    return ReleaseInfo(
        name,
        chart,
        chart_name,
        location,
        problem,
        props.get("version"),
        props.get("namespace"),
        props.get("values"),
    )


def release_kind(info: ReleaseInfo) -> str | None:
    """'cert-manager', 'webhook', 'operator' or None, by chart name (or release name if the chart is unknown)."""
    for candidate in (info.chart_name, info.release_name):
        if candidate == compat.CERT_MANAGER_CHART:
            return "cert-manager"
        if candidate == compat.INJECTION_WEBHOOK_CHART:
            return "webhook"
        if candidate == compat.CONNECTION_OPERATOR_CHART:
            return "operator"
    return None


def release_label(info: ReleaseInfo) -> str:
    """How messages name a Helm release: release name and chart."""
    return f"Helm release '{info.release_name}' (chart {info.chart_name or info.chart!r})"


# --- helm-chart-version-pinned -------------------------------------------------------------------


def _check_version_pinned(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    info = release_info(props, args.name)
    if not unknowns.hit(info.version, "version"):
        if not info.version:
            report(
                f"{release_label(info)} sets no chart version, so each `pulumi up` may install whatever the repository "
                "serves that day. Remediation: set the release's version to an exact chart version (the ML "
                "Diagnostics docs install cert-manager v1.13.0, injection-webhook 0.25.0, connection-operator 0.24.0)."
            )
        else:
            try:
                compat.parse_semver(info.version)
            except ValueError:
                report(
                    f"{release_label(info)} version {info.version!r} is not an exact chart version (ranges and "
                    "'latest' float). Remediation: set an exact MAJOR.MINOR.PATCH version, e.g. 0.25.0."
                )


chart_version_pinned = resource_rule(
    "helm-chart-version-pinned",
    (
        "Helm releases pin an exact chart version, as every install command in the ML Diagnostics docs does "
        "(--version v1.13.0 / 0.25.0 / 0.24.0)."
    ),
    _check_version_pinned,
    applies={RELEASE_TYPE},
    about=IN_CLUSTER.concern("versions"),
    severity=Severity.MEDIUM,
    remediation="Set the release version to an exact chart version.",
    levels=FOLLOWS_BASE,
)

# --- helm-allowed-repositories -------------------------------------------------------------------

REPOSITORY_DEFAULTS = {
    "allowedRepositories": (
        {
            "type": "array",
            "items": {"type": "string"},
            "description": "Chart repositories (https:// or oci:// prefixes) releases may come from.",
        },
        [compat.CERT_MANAGER_REPOSITORY, compat.MLDIAGNOSTICS_REPOSITORY],
    ),
}


def _repo_allowed(location: str, prefixes: list[str]) -> bool:
    loc = location.rstrip("/")
    return any(loc == p.rstrip("/") or loc.startswith(p.rstrip("/") + "/") for p in prefixes)


def _check_repositories(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    source = (("chart", props.get("chart")), ("repositoryOpts.repo", dig(props, "repositoryOpts", "repo")))
    if not [path for path, value in source if unknowns.hit(value, path)]:
        info = release_info(props, args.name)
        if info.location is None:
            report(
                f"{release_label(info)}: {info.source_problem or 'no chart given'}. Allowed repositories: "
                f"{', '.join(cfg['allowedRepositories'])}. Remediation: install the chart from an allowed "
                "repository URL (repositoryOpts.repo, or a full oci:// chart URL)."
            )
        elif not _repo_allowed(info.location, cfg["allowedRepositories"]):
            report(
                f"{release_label(info)} comes from '{info.location}', which is not an allowed repository (allowed: "
                f"{', '.join(cfg['allowedRepositories'])}). Remediation: use the vendor repository from the "
                "docs (charts.jetstack.io, the ai-on-gke OCI path) or a reviewed mirror added to this "
                "policy's allowedRepositories."
            )


allowed_repositories = resource_rule(
    "helm-allowed-repositories",
    (
        "Helm charts come from allowed repositories only: by default jetstack (cert-manager) and the "
        "ai-on-gke OCI path (injection-webhook, connection-operator), as in the ML Diagnostics docs."
    ),
    _check_repositories,
    applies={RELEASE_TYPE},
    about=IN_CLUSTER.concern("supply-chain"),
    severity=Severity.HIGH,
    remediation="Install charts from an allowed repository URL.",
    defaults=REPOSITORY_DEFAULTS,
    levels=FOLLOWS_BASE,
)

# --- helm-cert-manager-crds ----------------------------------------------------------------------


def _leaves(d: dict, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out += _leaves(v, (*prefix, k))
        else:
            out.append(((*prefix, k), v))
    return out


def _check_cert_manager_crds(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    info = release_info(props, args.name)
    if release_kind(info) != "cert-manager":
        return
    values = info.values if info.values is not None else {}
    if unknowns.hit(info.version, "version") or unknowns.hit(values, "values"):
        unknowns.finish()
    try:
        compat.parse_semver(info.version or "")
    except ValueError:
        report(
            f"{release_label(info)} has no exact chart version ({info.version!r}), so the CRD values cannot match it: "
            "before v1.15.0 the chart takes installCRDs, from v1.15.0 crds.enabled. Remediation: pin the "
            f"version (default {compat.CERT_MANAGER_DEFAULT_VERSION}) and set the CRD values for it."
        )
        return
    version = info.version
    values = values if isinstance(values, dict) else {}
    for path, _ in _leaves({k: v for k, v in values.items() if k in ("installCRDs", "crds")}):
        unknowns.hit(dig(values, *path), "values." + ".".join(path))
    if unknowns.paths:
        unknowns.finish()
    # Exactly what the chart refuses (from v1.15.0 its crd-check: installCRDs with crds.enabled, or with
    # crds.keep false); installCRDs alone is honoured and only deprecated.
    if problem := compat.cert_manager_values_problem(version, values):
        report(
            f"{release_label(info)}: {problem}. Remediation: keep only the style version {version} takes: "
            f"{compat.cert_manager_crd_values(version)}."
        )
        return
    # Judged on the chart's documented defaults: from v1.15.0 crds.keep defaults to true, and the
    # deprecated installCRDs is still honoured (helm-cert-manager-installcrds-deprecated notes it).
    effective = compat.cert_manager_effective_crd_values(version, values)
    installs = (
        as_bool(effective.get("installCRDs")) is True or as_bool(dig(effective, "crds", "enabled")) is True
    )
    missing = []
    if not installs:
        missing = [f"{'.'.join(p)}: true" for p, _ in _leaves(compat.cert_manager_crd_values(version))][:1]
    if missing:
        report(
            f"{release_label(info)} {version} does not install its CRDs ({', '.join(missing)} missing); the "
            "injection-webhook needs cert-manager's Certificate and Issuer CRDs. Remediation: set "
            f"{', '.join(missing)} in the release values (ML Diagnostics docs: --set installCRDs=true for v1.13.0)."
        )


cert_manager_crds = resource_rule(
    "helm-cert-manager-crds",
    (
        "cert-manager releases install CRDs the way their chart version wants: installCRDs before v1.15.0, "
        "crds.enabled (and crds.keep) from v1.15.0, refused exactly where the chart refuses them (the ML Diagnostics "
        "docs install v1.13.0 with installCRDs=true)."
    ),
    _check_cert_manager_crds,
    applies={RELEASE_TYPE},
    about=IN_CLUSTER.concern("versions"),
    severity=Severity.HIGH,
    remediation="Set the CRD values that match the chart version; never both styles.",
    levels={"dev": MANDATORY},
)

# --- helm-cert-manager-installcrds-deprecated -----------------------------------------------------


def _check_installcrds_deprecated(
    args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report
) -> None:
    info = release_info(props, args.name)
    if release_kind(info) != "cert-manager" or not isinstance(info.values, dict):
        return
    if "installCRDs" not in info.values or "crds" in info.values:
        return
    try:
        from_1_15 = compat.parse_semver(info.version or "") >= compat.CERT_MANAGER_CRDS_VALUES_FROM
    except ValueError:
        return
    if from_1_15:
        report(
            f"{release_label(info)} {info.version} sets installCRDs, which the chart deprecated in v1.15.0 in favour of "
            "crds.enabled (it still honours it today). Remediation: replace installCRDs with crds.enabled: true "
            "(crds.keep defaults to true)."
        )


installcrds_deprecated = resource_rule(
    "helm-cert-manager-installcrds-deprecated",
    (
        "cert-manager releases from chart v1.15.0 on use crds.enabled rather than the deprecated installCRDs, "
        "which the chart still honours (a deprecation note, never a block)."
    ),
    _check_installcrds_deprecated,
    applies={RELEASE_TYPE},
    about=IN_CLUSTER.concern("versions"),
    severity=Severity.LOW,
    remediation="Replace installCRDs with crds.enabled: true.",
    levels={"staging": ADVISORY, "prod": ADVISORY},
)

# --- helm-cert-manager-values-schema ---------------------------------------------------------------


def _where(path: tuple[str | int, ...]) -> str:
    return "values" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _unknown_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[str]:
    if is_unknown(value):
        return [_where(path)]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _unknown_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _unknown_paths(v, (*path, i))]
    return []


def _check_cert_manager_values_schema(
    args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report
) -> None:
    info = release_info(props, args.name)
    if release_kind(info) != "cert-manager":
        return
    if unknowns.hit(info.version, "version") or unknowns.hit(info.values, "values"):
        return
    values = info.values if info.values is not None else {}
    if not isinstance(info.version, str) or not isinstance(values, dict):
        return
    try:
        compat.parse_semver(info.version)
    except ValueError:
        return  # helm-chart-version-pinned says so
    for path in _unknown_paths(values):
        unknowns.note(path)  # their keys are checked now, their values during `pulumi up`
    for problem in cert_manager_schema.values_problems(info.version, values, unknown=is_unknown) or []:
        report(
            f"{release_label(info)} {info.version}: {_where(problem.path)}: {problem.message}. Helm refuses the "
            "release at install, minutes into `pulumi up`. Remediation: set only the values the chart version "
            f"defines, as its values.schema.json types them (`helm show values jetstack/cert-manager --version "
            f"{info.version}`)."
        )


cert_manager_values_schema = resource_rule(
    "helm-cert-manager-values-schema",
    (
        "cert-manager releases set only values their chart version's values.schema.json allows (from v1.16.0 "
        "the chart refuses an unknown key or a wrong type at install); versions without a known schema are "
        "not checked."
    ),
    _check_cert_manager_values_schema,
    applies={RELEASE_TYPE},
    about=IN_CLUSTER.concern("configuration"),
    severity=Severity.MEDIUM,
    remediation="Remove or correct the values the chart's schema refuses.",
    levels={"staging": ADVISORY},
)
