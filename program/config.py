"""Typed stack configuration: one place that reads, validates and reports every problem at once.

Everything lives under the `ml-diagnostics:` namespace. `load()` returns a `StackConfig` or raises one
`ConfigError` listing every problem with its key path (`ml-diagnostics:azureMl[1].inference.routerServiceType`).
Components never read config themselves. The base model and errors live in `config_base` (below the targets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pulumi
from pydantic import BaseModel, Field, ValidationError, create_model, field_validator

from ml_diagnostics.compat import arm_location, quote
from ml_diagnostics.rules import names, regions
from ml_diagnostics.rules.errors import describe as describe_error
from ml_diagnostics.rules.errors import format_loc
from program import checks, config_input, fleet_member, stack_file
from program.clouds import Cloud, clouds_of
from program.clouds.google import GoogleApiSettings
from program.config_base import (
    NAMESPACE,
    PLACEHOLDER_SECRET,
    PLAIN_SECRETS_OK,
    ConfigError,
    Environment,
    Model,
    Secret,
    TargetBase,
    is_placeholder,
    raise_issues,
    secret_inputs,
    secret_output,
    unwrap_misplaced_secrets,
)
from program.kinds.base import TargetKind
from program.kinds.table import KINDS
from program.stack_file import Path_, StackFileError

__all__ = [
    "NAMESPACE",
    "PLACEHOLDER_SECRET",
    "ConfigError",
    "GoogleApiSettings",
    "Secret",
    "StackConfig",
    "StackModel",
    "from_raw",
    "is_placeholder",
    "load",
    "parse",
    "secret_inputs",
    "secret_output",
]


class ExtraRegions(Model):
    """Regions (and GCP zones) newer than the built-in lists (components/ml_diagnostics/rules/regions.py, with their date)."""

    gcp: list[str] = []
    """Google Cloud regions or zones, e.g. europe-west15 or europe-west15-a."""
    azure: list[str] = []
    """Azure region names in any form ARM takes (newzealandsouth, NewZealandSouth, New Zealand South); kept
    lowercase without spaces, as a location is checked and sent."""

    @field_validator("gcp")
    @classmethod
    def _gcp(cls, v: list[str]) -> list[str]:
        raise_issues(
            [
                ((i,), f"{quote(r)} must look like a region (europe-west15) or a zone (europe-west15-a)")
                for i, r in enumerate(v)
                if not _REGION_SHAPE.fullmatch(r)
            ]
        )
        return v

    @field_validator("azure")
    @classmethod
    def _azure(cls, v: list[str]) -> list[str]:
        raise_issues(
            [((i,), p) for i, r in enumerate(v) if (p := names.azure_location_shape_problem(r)) is not None]
        )
        return [arm_location(r) for r in v]


_REGION_SHAPE = re.compile(r"[a-z]{2,20}-[a-z]{2,20}[0-9]{1,2}(-[a-z])?")


class StackBase(Model):
    environment: Environment
    """Which environment this stack is; the policy pack's strictness and the deletion defaults follow it."""
    extra_regions: ExtraRegions = ExtraRegions()
    """Regions newer than the built-in lists of components/ml_diagnostics/rules/regions.py (their date is there): {gcp: [...], azure: [...]}."""


T = TypeVar("T", bound=TargetBase)


class StackConfig(StackBase):
    """The whole stack config: the environment, each cloud's settings and the targets of every kind.

    Its per-kind and per-cloud fields come from the table of kinds (StackModel below); read them with
    `targets(kind)` and `settings(cloud)`, typed by the kind and the cloud."""

    def targets(self, kind: TargetKind[T]) -> list[T]:
        return list(getattr(self, kind.field))

    def settings(self, cloud: Cloud) -> Any:
        if cloud.settings is None:
            raise LookupError(f"the {cloud.name} cloud has no stack-level settings")
        return getattr(self, cloud.settings.field)


# The validating model: one list field per kind and one settings field per cloud that has settings.
StackModel: type[StackConfig] = create_model(  # type: ignore[call-overload]
    "StackConfig",
    __base__=StackConfig,
    __doc__=StackConfig.__doc__,
    **{
        k.field: (list[k.model], Field(default=[], alias=k.key, description=k.description))  # type: ignore[name-defined]
        for k in KINDS
    },
    **{
        c.settings.field: (
            c.settings.model,
            Field(default=c.settings.model(), alias=c.settings.key, description=c.settings.description),
        )
        for c in clouds_of(KINDS)
        if c.settings is not None
    },
)
TARGET_KINDS = tuple(k.key for k in KINDS)


def _join(base: str, rel: str) -> str:
    if not rel:
        return base
    if rel.startswith("["):
        return base + rel
    return f"{base}.{rel}" if base else rel


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return sorted(f.alias or n for n, f in model.model_fields.items())


SECRET_FIELDS_HINT = (
    "kubeconfig, inference.sslCertPem, inference.sslKeyPem and free-form data (chart values, ...)"
)


def _describe(err: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(stack-file key path, message) of one error: the secret cases here, everything else as the library
    describes it (the same rule says the same words for a program's Args)."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    path = format_loc(loc)
    typ = err["type"]
    if isinstance(err.get("input"), Secret) and typ not in (
        "value_error",
        "extra_forbidden",
        "assertion_error",
    ):
        return [(path, f"a `secure:` value is not allowed here; secrets go in {SECRET_FIELDS_HINT}")]
    if typ == "plain_secret":
        return [
            (
                path,
                f"holds a secret but was set in plain text; set it with `mldiag secrets set STACK '{path}' < FILE` "
                f"or `pulumi config set --secret --path '{NAMESPACE}:{path}' ...`",
            )
        ]
    return describe_error(err, StackModel, "stack")


def _did_you_mean(key: str, allowed: list[str]) -> str:
    from ml_diagnostics.rules.base import did_you_mean

    return did_you_mean(key, allowed)


def _unique_names(kind: str, targets: list[Any]) -> list[str]:
    seen: dict[str, int] = {}
    problems = []
    for i, t in enumerate(targets):
        if t.name in seen:
            problems.append(
                f"{NAMESPACE}:{kind}[{i}].name: duplicate target name {t.name!r} "
                f"(also {NAMESPACE}:{kind}[{seen[t.name]}].name); names must be unique per kind"
            )
        else:
            seen[t.name] = i
    return problems


MAX_PROBLEMS = 60


def parse(
    raw: Mapping[str, Any], secret_keys: Iterable[str] = (), secret_paths: set[Path_] | None = None
) -> StackConfig:
    """Validates the raw config map (`"ml-diagnostics:azureMl"` -> value) and returns the typed config.

    Values may be JSON strings (as the engine passes objects) or already-decoded values. `secret_paths`:
    where the `secure:` leaves are (from the stack file), when the values carry no offline-plan placeholders.
    Raises ConfigError with every problem found.
    """
    data, problems = config_input.decode(raw)
    allowed = _allowed_keys(StackModel)
    for short in sorted(set(data) - set(allowed)):
        problems.append(f"{NAMESPACE}:{quote(short, 60)[1:-1]}: unknown key{_did_you_mean(short, allowed)}")
        data.pop(short)
    data, wrapped_all = config_input.wrap_secrets(data, secret_keys, secret_paths)
    token = regions.EXTRA.set(_extra_regions(data.get("extraRegions")))
    try:
        cfg = StackModel.model_validate(
            data,
            context={PLAIN_SECRETS_OK: wrapped_all, "spelling": "stack", "prepare": unwrap_misplaced_secrets},
        )
    except ValidationError as e:
        for err in e.errors(include_url=False):
            for path, msg in _describe(err):
                problems.append(f"{NAMESPACE}:{path}: {msg}")
        _raise(problems)
    finally:
        regions.EXTRA.reset(token)
    for kind in KINDS:
        problems += _unique_names(kind.key, cfg.targets(kind))
    problems += [f"{NAMESPACE}:{p}" for p in checks.cross_target_problems(cfg, KINDS)]
    for kind in KINDS:
        for i, t in enumerate(cfg.targets(kind)):
            problems += [
                f"{NAMESPACE}:{_join(f'{kind.key}[{i}]', rel)}: {msg}"
                for rel, msg in kind.preflight(t, cfg.environment)
            ]
    _raise(problems)
    return cfg


def _extra_regions(raw: Any) -> dict[str, frozenset[str]]:
    """The well-shaped names of a raw `extraRegions` (the model reports the others)."""
    if not isinstance(raw, Mapping):
        return {}
    out = {}
    gcp = raw.get("gcp")
    if isinstance(gcp, list):
        out["gcp"] = frozenset(n for n in gcp if isinstance(n, str) and _REGION_SHAPE.fullmatch(n))
    azure = raw.get("azure")
    if isinstance(azure, list):
        out["azure"] = frozenset(
            arm_location(n)
            for n in azure
            if isinstance(n, str) and names.azure_location_shape_problem(n) is None
        )
    return out


def _raise(problems: list[str]) -> None:
    if not problems:
        return
    problems = [_bounded(p) for p in sorted(dict.fromkeys(problems), key=_sort_key)]
    total = len(problems)
    if total > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], f"{NAMESPACE}: ... and {total - MAX_PROBLEMS} more problem(s)"]
    raise ConfigError(problems, total)


MAX_PROBLEM_CHARS = 600


def _bounded(problem: str) -> str:
    # Values are quoted to QUOTE_LIMIT where they are reported; this bounds a problem line whatever it quotes.
    if len(problem) <= MAX_PROBLEM_CHARS:
        return problem
    return f"{problem[: MAX_PROBLEM_CHARS - 40]}... ({len(problem)} characters, cut)"


def _sort_key(problem: str) -> tuple[str, str]:
    return (problem.split(":", 2)[1] if problem.count(":") >= 2 else problem, problem)


def from_raw(
    raw: Mapping[str, Any],
    secret_keys: Iterable[str],
    stack: str,
    secret_paths: set[Path_] | None = None,
    project_dir: Path | None = None,
) -> StackConfig:
    """The one route from a stack's raw config to its StackConfig (the engine's, a stack file's, `pulumi
    config`'s): a fleet member's keeps its one target; `secure:` leaves are where `secret_paths` says, else
    found in the stack file when the values carry no offline-plan placeholders. `project_dir` (default: the
    working directory, as the engine runs the program) holds the stack files. Raises ConfigError."""
    secret = set(secret_keys)
    # A fleet member stack (program/fleet_member.py): its own target, or (derived by an older mldiag) its
    # environment's config, stack file and all.
    raw, member, member_paths = fleet_member.take(raw)
    if member is not None and member.validated is not None:
        return _member_config(raw, secret, member, member_paths, project_dir or Path.cwd())
    if member_paths:
        secret |= {str(p[0]) for p in member_paths}
    paths = member_paths or secret_paths
    if paths is None and any(
        not config_input.has_placeholders(raw.get(k)) for k in secret if k.startswith(NAMESPACE + ":")
    ):
        try:
            paths = config_input.engine_stack_file_paths(member.environment_stack if member else stack)
        except StackFileError as e:
            raise ConfigError([str(e)]) from None
    cfg = parse(raw, secret, paths)
    return fleet_member.keep(cfg, member) if member else cfg


def _member_config(
    raw: Mapping[str, Any],
    secret: set[str],
    member: fleet_member.FleetMember,
    paths: set[Path_],
    project_dir: Path,
) -> StackConfig:
    """A member derived from its validated environment: its own config validated alone while the program and
    the environment's stack file are those it was derived from; otherwise the environment is validated as
    `pulumi up -s <env>` validates it (its problems, if any, are this member's)."""
    why = fleet_member.stale(member, project_dir)
    if why is not None:
        env_file = fleet_member.environment_file(project_dir, member.environment_stack)
        try:
            env_raw, env_secret = stack_file.offline_config(env_file, NAMESPACE)
        except StackFileError as e:
            raise ConfigError([f"{fleet_member.KEY}.validated: {why}, and {e}"]) from None
        from_raw(env_raw, env_secret, member.environment_stack, project_dir=project_dir)
        raise ConfigError(
            [
                f"{fleet_member.KEY}.validated: {why} ({_shown(env_file, project_dir)}): this member's config is "
                "out of date; derive it again (`mldiag fleet run` does before every update; for the Kubernetes "
                "operator, `mldiag fleet pko` writes the objects again)"
            ]
        )
    secret |= {str(p[0]) for p in paths}
    try:
        cfg = parse(raw, secret, paths)
    except ConfigError as e:
        raise fleet_member.in_environment(e, member) from None
    return fleet_member.keep(cfg, member)


def _shown(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def read_stack_file(path: Path) -> stack_file.StackFile:
    """A stack file for an offline run (`mldiag plan`, `verify`): `stack_file.read`, except that problems of the
    file's own keys that leave its config readable (a top-level `environment: dev`) come with the config's
    own, in one ConfigError, as every problem does."""
    try:
        return stack_file.read(path, NAMESPACE)
    except stack_file.StackFileProblems as e:
        problems = [f"{path}: {p}" for p in e.problems]
        try:
            parse(stack_file.offline_values(e.stack, path), e.stack.secret_keys)
        except ConfigError as c:
            problems += c.problems
        raise ConfigError(problems) from None


def engine_config() -> tuple[dict[str, Any], set[str]]:
    """The running stack's raw config as the engine passes it, and its secret keys."""
    from pulumi.runtime import config as runtime_config

    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret = set(runtime_config.get_config_secret_keys_env()) | {
        k for k in raw if runtime_config.is_config_secret(k)
    }
    return raw, secret


def load() -> StackConfig:
    """Reads the running stack's config from the Pulumi runtime and validates it."""
    raw, secret = engine_config()
    return from_raw(raw, secret, pulumi.get_stack())
