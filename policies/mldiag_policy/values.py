"""Plain views of analyzer properties, shared by the forms table and the rules: the SDK's unknown sentinels,
a plain copy of (possibly proxied) properties, path lookups. It imports nothing of this package.

Analyzer properties arrive wrapped in pulumi_policy's unknown-checking proxy, which raises on the first
unknown value. `plain` reads the proxy through its public Mapping/Sequence interface and keeps each unknown
value as its sentinel string, so a rule can note the paths it could not check instead of stopping.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import proxy
from pulumi_policy.proxy import UnknownValueError

# The SDK's sentinel strings for unknown values: proxy.UNKNOWN_<KIND>_VALUE.
_UNKNOWN_SENTINELS = frozenset(
    getattr(proxy, f"UNKNOWN_{kind}_VALUE")
    for kind in ("ARCHIVE", "ARRAY", "ASSET", "BOOLEAN", "NUMBER", "OBJECT", "STRING")
)


def is_unknown(value: Any) -> bool:
    return isinstance(value, str) and value in _UNKNOWN_SENTINELS


def _item(container: Any, key: Any) -> Any:
    """container[key]; the SDK's proxy raises UnknownValueError for an unknown value: keep its sentinel."""
    try:
        return container[key]
    except UnknownValueError as e:
        return e.unknown_type_sentinel


def plain(value: Any) -> Any:
    """A plain dict/list copy of (possibly proxied) properties; unknown values keep their sentinel.

    Reads the proxy only through its public Mapping/Sequence interface and the documented exception."""
    if isinstance(value, Mapping):
        return {k: plain(_item(value, k)) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(_item(value, i)) for i in range(len(value))]
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


def name_of(props: Mapping[str, Any], fallback: str) -> str:
    meta = props.get("metadata") if isinstance(props, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) and not is_unknown(name) else fallback
