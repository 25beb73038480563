"""Typed stack configuration: one place that reads, validates and reports every problem at once.

Everything lives under the `ml-diagnostics:` namespace. `load()` returns a `StackConfig` or raises one
`ConfigError` listing every problem with its key path (`ml-diagnostics:azureMl[1].inference.routerServiceType`).
Components never read config themselves. The base model and errors live in `config_base` (below the targets).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, SecretStr, ValidationError

from components.config_base import (
    NAMESPACE,
    PLACEHOLDER_SECRET,
    ConfigError,
    Issues,
    Model,
    Secret,
    is_placeholder,
    secret_inputs,
    secret_output,
)
from components.targets.azure_ml import AzureMlTarget
from components.targets.gke import GkeClusterTarget
from components.targets.google_api import GoogleApiSettings
from components.targets.kubernetes import KubernetesClusterTarget
from components.targets.model_development import ModelDevelopmentClusterTarget

__all__ = [
    "NAMESPACE",
    "PLACEHOLDER_SECRET",
    "ConfigError",
    "GoogleApiSettings",
    "Secret",
    "StackConfig",
    "is_placeholder",
    "load",
    "parse",
    "secret_inputs",
    "secret_output",
]


class StackConfig(Model):
    environment: Literal["dev", "staging", "prod"]
    """Which environment this stack is; the policy pack's strictness follows it."""
    gke_clusters: list[GkeClusterTarget] = []
    """GKE clusters, created or adopted; managed or manual ML Diagnostics."""
    kubernetes_clusters: list[KubernetesClusterTarget] = []
    """Self-managed Kubernetes clusters (always the manual install)."""
    azure_ml: list[AzureMlTarget] = []
    """Azure ML extension on AKS or Arc clusters."""
    model_development_clusters: list[ModelDevelopmentClusterTarget] = []
    """Vertex AI Model Development Clusters (Slurm)."""
    google_api: GoogleApiSettings = GoogleApiSettings()
    """REST settings of the GKE adopt and Model Development Cluster resources."""


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
