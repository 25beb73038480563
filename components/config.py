"""Typed stack configuration: one place that reads, validates and reports every problem at once.

Everything lives under the `ml-diagnostics:` namespace. `load()` returns a `StackConfig` or raises one
`ConfigError` listing every problem with its key path (`ml-diagnostics:azureMl[1].inference.routerServiceType`).
Components never read config themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import pulumi
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError, field_validator
from pydantic.alias_generators import to_camel

NAMESPACE = "ml-diagnostics"

# `tools/plan` runs without the stack's secrets provider; it substitutes a value starting with this prefix
# (plus a digest of the ciphertext, so a changed secret still shows as changed) for every `secure:` value.
# Validators that inspect a secret's content (PEM checks) treat it as opaque: use `is_placeholder()`.
PLACEHOLDER_SECRET = "offline-plan-placeholder-secret"


def is_placeholder(value: object) -> bool:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return isinstance(value, str) and value.startswith(PLACEHOLDER_SECRET)


class ConfigError(pulumi.RunError):
    """A stack configuration problem. RunError: the engine prints the message without a traceback."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid stack configuration ({len(problems)} problem(s)):\n{lines}")


class Issues(ValueError):
    """Raised by model validators to report problems on specific sub-paths of the model.

    `problems` is a list of (relative path, message); the path may be "" for the model itself,
    `"inference.sslCname"` or `"nodePools[2].id"`.
    """

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{p}: {m}" if p else m for p, m in problems))


def raise_issues(problems: list[tuple[str, str]]) -> None:
    if problems:
        raise Issues(problems)


class Model(BaseModel):
    """Base of every config model: camelCase keys, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        str_strip_whitespace=True,
        hide_input_in_errors=True,
    )


def _secret_from_plain(v: Any) -> Any:
    if isinstance(v, str) and not v:
        raise ValueError("must not be empty")
    return v


class TargetBase(Model):
    """Common to every target: a name unique within its kind (used in resource names)."""

    # Unique per kind; part of every resource name of the target (changing it replaces them).
    name: str

    @field_validator("name")
    @classmethod
    def _name_shape(cls, v: str) -> str:
        import re

        if not re.fullmatch(r"[a-z]([a-z0-9-]{0,38}[a-z0-9])?", v):
            raise ValueError(
                "must be 1-40 characters of lowercase letters, digits and '-', starting with a letter "
                "and not ending with '-'"
            )
        return v


# Target models are imported here (not the other way round) so that the root model knows every kind.
from components.targets.azure_ml import AzureMlTarget  # noqa: E402
from components.targets.gke import GkeClusterTarget  # noqa: E402
from components.targets.google_api import GoogleApiSettings  # noqa: E402
from components.targets.kubernetes import KubernetesClusterTarget  # noqa: E402
from components.targets.model_development import ModelDevelopmentClusterTarget  # noqa: E402


class StackConfig(Model):
    # Which environment this stack is; the policy pack's strictness follows it.
    environment: Literal["dev", "staging", "prod"]
    # GKE clusters, created or adopted; managed or manual ML Diagnostics.
    gke_clusters: list[GkeClusterTarget] = []
    # Self-managed Kubernetes clusters (always the manual install).
    kubernetes_clusters: list[KubernetesClusterTarget] = []
    # Azure ML extension on AKS or Arc clusters.
    azure_ml: list[AzureMlTarget] = []
    # Vertex AI Model Development Clusters (Slurm).
    model_development_clusters: list[ModelDevelopmentClusterTarget] = []
    # REST settings of the GKE adopt and Model Development Cluster resources.
    google_api: GoogleApiSettings = GoogleApiSettings()


TARGET_KINDS = ("gkeClusters", "kubernetesClusters", "azureMl", "modelDevelopmentClusters")


def _fmt_loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            out += " (key)"
        elif str(part).startswith("["):
            out += str(part)
        else:
            out += f".{part}" if out else str(part)
    return out


def _join(base: str, rel: str) -> str:
    if not rel:
        return base
    if rel.startswith("["):
        return base + rel
    return f"{base}.{rel}" if base else rel


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return sorted(f.alias or n for n, f in model.model_fields.items())


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """Walks StackConfig's fields along a location to find the model that owns the last key."""
    import typing

    model: Any = StackConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return None
        ann = field.annotation
        # unwrap Optional / list / dict to the model inside
        for _ in range(4):
            args = [a for a in typing.get_args(ann) if a is not type(None)]
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                break
            if not args:
                break
            ann = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), args[-1])
        model = ann
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _describe(err: Mapping[str, Any]) -> list[tuple[str, str]]:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    path = _fmt_loc(loc)
    typ = err["type"]
    ctx = err.get("ctx") or {}
    if typ == "value_error" and isinstance(ctx.get("error"), Issues):
        return [(_join(path, rel), msg) for rel, msg in ctx["error"].problems]
    if typ == "extra_forbidden":
        owner = _model_at(loc)
        allowed = f"; allowed keys: {', '.join(_allowed_keys(owner))}" if owner else ""
        return [(path, f"unknown key{allowed}")]
    if typ == "missing":
        return [(path, "required key is missing")]
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if typ == "literal_error":
        msg = f"must be one of {ctx.get('expected')}"
    return [(path, msg)]


def _secret_paths(value: Any, path: str) -> list[str]:
    if isinstance(value, SecretStr):
        return [path]
    if isinstance(value, BaseModel):
        out: list[str] = []
        for name, field in type(value).model_fields.items():
            out += _secret_paths(getattr(value, name), _join(path, field.alias or name))
        return out
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in _secret_paths(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _secret_paths(v, _join(path, str(k)))]
    return []


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


def parse(raw: Mapping[str, Any], secret_keys: Iterable[str] = ()) -> StackConfig:
    """Validates the raw config map (`"ml-diagnostics:azureMl"` -> value) and returns the typed config.

    Values may be JSON strings (as the engine passes objects) or already-decoded values.
    Raises ConfigError with every problem found.
    """
    secret_keys = set(secret_keys)
    problems: list[str] = []
    data: dict[str, Any] = {}
    for key, value in raw.items():
        if not key.startswith(NAMESPACE + ":"):
            continue
        short = key[len(NAMESPACE) + 1 :]
        if isinstance(value, str) and value[:1] in ("[", "{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                problems.append(f"{key}: not valid JSON ({e.msg})")
                continue
        data[short] = value

    allowed = _allowed_keys(StackConfig)
    for short in sorted(set(data) - set(allowed)):
        problems.append(f"{NAMESPACE}:{short}: unknown key; allowed keys: {', '.join(allowed)}")
        data.pop(short)
    if problems and not data:
        raise ConfigError(problems)

    try:
        cfg = StackConfig.model_validate(data)
    except ValidationError as e:
        for err in e.errors():
            for path, msg in _describe(err):
                problems.append(f"{NAMESPACE}:{path}: {msg}")
        raise ConfigError(sorted(dict.fromkeys(problems), key=_sort_key)) from None

    for kind in TARGET_KINDS:
        field = next(n for n, f in StackConfig.model_fields.items() if f.alias == kind)
        problems += _unique_names(kind, getattr(cfg, field))

    # A value typed as a secret must come from a key the engine holds as a secret (`--secret`).
    for name, field in StackConfig.model_fields.items():
        key = f"{NAMESPACE}:{field.alias or name}"
        if key in secret_keys:
            continue
        for p in _secret_paths(getattr(cfg, name), field.alias or name):
            problems.append(
                f"{NAMESPACE}:{p}: holds a secret but was set in plain text; "
                f"use `pulumi config set --secret --path '{NAMESPACE}:{p}' ...`"
            )
    if problems:
        raise ConfigError(sorted(dict.fromkeys(problems), key=_sort_key))
    return cfg


def _sort_key(problem: str) -> tuple[str, str]:
    return (problem.split(":", 2)[1] if problem.count(":") >= 2 else problem, problem)


def load() -> StackConfig:
    """Reads the running stack's config from the Pulumi runtime and validates it."""
    from pulumi.runtime import config as runtime_config

    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret = set(runtime_config.get_config_secret_keys_env()) | set(runtime_config._SECRET_KEYS.get())
    return parse(raw, secret)


def secret_output(value: SecretStr | None) -> pulumi.Output[str] | None:
    """Unwraps a config secret for a resource input, keeping it a Pulumi secret end to end."""
    if value is None:
        return None
    return pulumi.Output.secret(value.get_secret_value())
