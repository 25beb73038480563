"""The Pulumi ESC environments a stack file imports (`environment:`), for the commands that read a stack file
without the Pulumi CLI (plan, diff, verify). Nothing here opens an environment.

With `--esc-values FILE` (the JSON that `esc open ORG/PROJECT/ENV` or `pulumi env open ORG/PROJECT/ENV`
prints) their `pulumiConfig` values are merged under the stack file's config with the engine's precedence: a
key the stack file sets wins, and of two files the later wins (as a later import does). `esc open` prints
secrets in plain text and does not say which values were secret, so every value taken from it is held as a
secret: never printed, and the fields that take no secret read it as a plain value (program/config_input.py).

Without it the result is incomplete: said on stderr, `unopenedEnvironments` in the JSON, exit code 4.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class EscValuesError(Exception):
    """An --esc-values file that cannot be used (named; its content is never quoted: it holds secrets)."""


def read_values(paths: Sequence[Path], project: str) -> dict[str, Any]:
    """Full config key -> value of the files' `pulumiConfig`, merged in order."""
    merged: dict[str, Any] = {}
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise EscValuesError(f"--esc-values: {path} does not exist") from None
        except json.JSONDecodeError as e:
            raise EscValuesError(
                f"--esc-values: {path}: not valid JSON (line {e.lineno}, column {e.colno})"
            ) from None
        except (UnicodeDecodeError, OSError) as e:
            raise EscValuesError(f"--esc-values: {path}: cannot be read ({e.__class__.__name__})") from None
        if not isinstance(data, dict):
            raise EscValuesError(
                f"--esc-values: {path}: expected the JSON object that `esc open ORG/PROJECT/ENV` prints, "
                f"got {type(data).__name__}"
            )
        config = data.get("pulumiConfig", {})
        if not isinstance(config, dict):
            raise EscValuesError(
                f"--esc-values: {path}: pulumiConfig must be an object of config key -> value, "
                f"got {type(config).__name__}"
            )
        for key, value in config.items():
            merged[key if ":" in key else f"{project}:{key}"] = value
    return merged


def merge(
    config: dict[str, Any], secret_keys: Sequence[str], values: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """(config with the environments' values under it, secret keys with every key they supplied)."""
    supplied = {k: v for k, v in values.items() if k not in config}
    return {**config, **supplied}, sorted({*secret_keys, *supplied})


def warning(source: str, environments: Sequence[str]) -> str:
    names = ", ".join(environments)
    return (
        f"warning: {source} imports Pulumi ESC environment(s) {names}: their pulumiConfig values are not in "
        f"this result, which is incomplete (exit code 4); pass --esc-values FILE, the JSON of `esc open "
        f"ORG/PROJECT/ENV` (or `pulumi env open`), to include them"
    )


def supply(
    source: str,
    config: dict[str, Any],
    secret_keys: Sequence[str],
    environments: Sequence[str],
    paths: Sequence[Path],
    project: str,
) -> tuple[dict[str, Any], list[str]]:
    """The config a command reads: with the environments' values when given, else as written and a warning
    on stderr when the stack imports environments."""
    if environments and paths:
        return merge(config, secret_keys, read_values(paths, project))
    if paths:
        print(f"note: --esc-values ignored: {source} imports no Pulumi ESC environment", file=sys.stderr)
    elif environments:
        print(warning(source, environments), file=sys.stderr, flush=True)
    return config, list(secret_keys)


def add_argument(parser: argparse.ArgumentParser) -> None:
    """--esc-values, the same for every command that reads a stack file offline."""
    parser.add_argument(
        "--esc-values",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="the opened Pulumi ESC environments the stack file imports (the JSON of `esc open ORG/PROJECT/ENV`); "
        "their pulumiConfig goes under the stack file's config, held secret; repeatable, a later file wins",
    )
