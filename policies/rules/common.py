"""Helpers shared by the rules: plain views of analyzer properties, unknowns, config with defaults.

Analyzer properties arrive wrapped in pulumi_policy's unknown-checking proxy, which raises on the first
unknown value and aborts the whole policy. Rules here read a plain copy instead: unknown values stay as
their sentinel strings, each rule notes the paths it could not check (`Unknowns`) and, after reporting
every violation it could establish from known values, raises one `PreviewUnknown` that the SDK turns
into an advisory "can't run policy ... during preview" diagnostic naming those paths. Nothing is skipped
silently.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyConfigSchema
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    _DictProxy,
    _ListProxy,
)

_UNKNOWN_SENTINELS = frozenset(
    {
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_OBJECT_VALUE,
        UNKNOWN_STRING_VALUE,
    }
)


def is_unknown(value: Any) -> bool:
    return isinstance(value, str) and value in _UNKNOWN_SENTINELS


def plain(value: Any) -> Any:
    """A plain dict/list copy of (possibly proxied) properties; unknown values keep their sentinel."""
    if isinstance(value, _DictProxy):
        raw = value["__target"]
        return {k: plain(raw[k]) for k in raw}
    if isinstance(value, _ListProxy):
        return [plain(v) for v in value["__target"]]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in value]
    return value


def dig(obj: Any, *path: str | int) -> Any:
    """obj[path[0]][path[1]]...; None when a step is missing; an unknown sentinel when a step is unknown."""
    for key in path:
        if is_unknown(obj):
            return obj
        if isinstance(key, int):
            if not isinstance(obj, list) or key >= len(obj):
                return None
            obj = obj[key]
        else:
            if not isinstance(obj, dict) or key not in obj:
                return None
            obj = obj[key]
    return obj


def as_bool(value: Any) -> bool | None:
    """True/False from a bool or a 'true'/'false' string (any case); None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


class PreviewUnknown(UnknownValueError):
    """Raised after all known-value checks ran: the SDK reports it as an advisory preview diagnostic."""

    def __init__(self, paths: list[str]):
        super().__init__(UNKNOWN_STRING_VALUE, [])
        shown = ", ".join(paths)
        self.message = (
            f"not checked because the value(s) at {shown} are unknown until apply; "
            "the check runs again with the real values during `pulumi up`"
        )


class Unknowns:
    """Collects the paths a rule could not check because their value is unknown during preview."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def hit(self, value: Any, path: str) -> bool:
        """True (and remembers the path) when value is unknown."""
        if is_unknown(value):
            if path not in self.paths:
                self.paths.append(path)
            return True
        return False

    def note(self, path: str) -> None:
        if path not in self.paths:
            self.paths.append(path)

    def finish(self) -> None:
        if self.paths:
            raise PreviewUnknown(self.paths)


def schema(defaults: Mapping[str, tuple[dict[str, Any], Any]]) -> PolicyConfigSchema:
    """PolicyConfigSchema from {property: (json schema, default)}; the default is written into the schema."""
    props = {}
    for name, (spec, default) in defaults.items():
        props[name] = {**spec, "default": copy.deepcopy(default)}
    return PolicyConfigSchema(properties=props)


def config(args: Any, defaults: Mapping[str, tuple[dict[str, Any], Any]]) -> dict[str, Any]:
    """The policy's config with schema defaults filled in (the CLI fills them too; this keeps rules
    correct when a client sends only what the config file names)."""
    out = {name: copy.deepcopy(default) for name, (_, default) in defaults.items()}
    out.update(plain(args.get_config() or {}))
    return out


def name_of(props: Mapping[str, Any], fallback: str) -> str:
    meta = props.get("metadata") if isinstance(props, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) and not is_unknown(name) else fallback
