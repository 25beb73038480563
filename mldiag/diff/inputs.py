"""Comparing two input maps leaf by leaf, in the offline plan's path syntax (`a.b[0].c`)."""

from __future__ import annotations

from typing import Any

from ml_diagnostics.nested import holds
from mldiag.common import SECRET_MASK

MISSING: Any = object()
# Inputs never compared: the pickled dynamic provider (the engine asks the provider's diff instead).
IGNORED_INPUTS = {"__provider"}


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(old: Any, new: Any, path: str, out: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new), key=str):
            if not path and k in IGNORED_INPUTS:
                continue
            _walk(old.get(k, MISSING), new.get(k, MISSING), join(path, str(k)), out)
        return
    if isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            _walk(
                old[i] if i < len(old) else MISSING, new[i] if i < len(new) else MISSING, f"{path}[{i}]", out
            )
        return
    if old is MISSING and new is MISSING:
        return
    # One side absent: list the other side's leaves (an empty map or list stays one entry).
    present = new if old is MISSING else old if new is MISSING else None
    if isinstance(present, dict | list) and present:
        if isinstance(present, dict):
            items = [(join(path, str(k)), v) for k, v in sorted(present.items(), key=lambda kv: str(kv[0]))]
            items = [(p, v) for p, v in items if path or p not in IGNORED_INPUTS]
        else:
            items = [(f"{path}[{i}]", v) for i, v in enumerate(present)]
        for sub, v in items:
            if old is MISSING:
                _walk(MISSING, v, sub, out)
            else:
                _walk(v, MISSING, sub, out)
        return
    if old is not MISSING and new is not MISSING and type(old) is type(new) and old == new:
        return
    change: dict[str, Any] = {"path": path or "$"}
    if old is not MISSING:
        change["old"] = old
    if new is not MISSING:
        change["new"] = new
    out.append(change)


def diff_inputs(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Changed leaves between two input maps: [{"path", "old"?, "new"?}] (a missing side is absent)."""
    out: list[dict[str, Any]] = []
    _walk(old, new, "", out)
    return out


def flatten(value: Any, path: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Leaf values by path, in the offline plan's path syntax (`a.b[0].c`; a secret is a leaf)."""
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            flatten(v, join(path, str(k)), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            flatten(v, f"{path}[{i}]", out)
    else:
        out[path or "$"] = value
    return out


def under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")


def has_secret(value: Any) -> bool:
    return holds(value, lambda v: v == SECRET_MASK)
