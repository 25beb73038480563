"""Raw config as it arrives (engine or offline plan) -> data ready for validation.

Namespaces (a near miss of `ml-diagnostics:` is an error with "did you mean"), JSON-decoding of object values,
the stack-file reader's limits, and secrets: every `secure:` leaf becomes a `config_base.Secret` before
validation, wherever it is. Where the secret leaves are comes from, in order:
  - the offline plan: its placeholders (`PLACEHOLDER_SECRET:<digest>`) mark them;
  - the real engine: it only says which top-level keys hold a secret, so the stack file
    (`<stackConfigDir>/Pulumi.<stack>.yaml`) is read with the hardened reader for the paths;
  - neither (config from elsewhere, e.g. an ESC environment): every string leaf of a secret key is treated as
    a secret (fields that take no secret unwrap it; secret fields accept it).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ml_diagnostics.nested import map_leaves
from ml_diagnostics.rules.names import quote
from program import stack_file
from program.config_base import NAMESPACE, PLACEHOLDER_SECRET, Secret, is_placeholder
from program.stack_file import Path_, StackFileError


def _norm(ns: str) -> str:
    return "".join(c for c in ns.lower() if c.isalnum())


def namespace_problem(key: str) -> str | None:
    """A key whose namespace looks like ours but is not (`mldiagnostics:`, `ML-Diagnostics:`): its whole
    content would otherwise be silently ignored."""
    ns = key.split(":", 1)[0]
    if ns == NAMESPACE:
        return None
    if _norm(ns) == _norm(NAMESPACE) or difflib.SequenceMatcher(None, ns.lower(), NAMESPACE).ratio() >= 0.85:
        rest = key.split(":", 1)[1] if ":" in key else ""
        return (
            f"{quote(key, 80)}: unknown namespace {quote(ns, 40)}; did you mean "
            f"'{NAMESPACE}:{rest[:60]}'? (keys under another namespace are ignored by this program)"
        )
    return None


def decode(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(short key -> decoded value for our namespace, problems)."""
    problems: list[str] = []
    data: dict[str, Any] = {}
    for key, value in raw.items():
        if (p := namespace_problem(key)) is not None:
            problems.append(p)
            continue
        if not key.startswith(NAMESPACE + ":"):
            continue
        # a value read from a stack file was bounded by its reader, whose budget is at most the size limit's
        size = stack_file.MAX_FILE_BYTES
        if isinstance(value, str) and value[:1] in ("[", "{"):
            size = len(value)
            if size > stack_file.MAX_FILE_BYTES:
                problems.append(f"{key}: larger than {stack_file.MAX_FILE_BYTES // (1024 * 1024)} MiB")
                continue
            try:
                value = json.loads(value)
            except (json.JSONDecodeError, RecursionError) as e:
                msg = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
                problems.append(f"{key}: not valid JSON ({msg})")
                continue
        try:
            stack_file.check_limits(key, value, size)
        except StackFileError as e:
            problems.append(str(e))
            continue
        data[key[len(NAMESPACE) + 1 :]] = value
    return data, problems


def _placeholder_paths(value: Any, at: Path_) -> list[Path_]:
    if isinstance(value, str):
        return [at] if is_placeholder(value) else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _placeholder_paths(v, (*at, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _placeholder_paths(v, (*at, i))]
    return []


def _wrap_at(value: Any, path: Path_) -> Any:
    if not path:
        return Secret(value) if isinstance(value, str) else value
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and isinstance(head, str) and head in value:
        return {**value, head: _wrap_at(value[head], rest)}
    if isinstance(value, list) and isinstance(head, int) and 0 <= head < len(value):
        return [*value[:head], _wrap_at(value[head], rest), *value[head + 1 :]]
    return value


def _wrap_all(value: Any) -> Any:
    return map_leaves(value, lambda v: Secret(v) if isinstance(v, str) else v)


def wrap_secrets(
    data: dict[str, Any], secret_keys: Iterable[str], file_paths: set[Path_] | None
) -> tuple[dict[str, Any], bool]:
    """(data with `Secret` leaves, whether some secret key's leaves were unknown and all were wrapped)."""
    wrapped_all = False
    out = dict(data)
    for full in secret_keys:
        if not full.startswith(NAMESPACE + ":") or full[len(NAMESPACE) + 1 :] not in out:
            continue
        short = full[len(NAMESPACE) + 1 :]
        value = out[short]
        paths = [p[1:] for p in _placeholder_paths(value, (full,))]
        if not paths and file_paths is not None:
            paths = [p[1:] for p in file_paths if p[0] == full]
        if not paths:
            out[short] = _wrap_all(value)
            wrapped_all = True
            continue
        for p in paths:
            value = _wrap_at(value, p)
        out[short] = value
    return out, wrapped_all


def engine_stack_file_paths(stack: str, project_dir: Path | None = None) -> set[Path_] | None:
    """Under the real engine: the `secure:` paths of the stack's file, or None when there is no such file."""
    project_dir = project_dir or Path.cwd()
    project_file = project_dir / "Pulumi.yaml"
    if not project_file.is_file():
        return None
    project, _ = stack_file.parse_text(stack_file.read_text(project_file), str(project_file))
    config_dir = project.get("stackConfigDir", ".") if isinstance(project, dict) else "."
    path = project_dir / str(config_dir) / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        return None
    return stack_file.read(path, NAMESPACE).secret_paths


def has_placeholders(value: Any) -> bool:
    """True when an engine-passed value (JSON text or decoded) carries offline-plan placeholders."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        return PLACEHOLDER_SECRET in value
    return bool(_placeholder_paths(value, ()))
