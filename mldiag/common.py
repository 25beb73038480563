"""The base of the product CLI: names, text helpers and the policy pack config files, shared by every command
(no SDK import; of mldiag it imports only the exit codes)."""

from __future__ import annotations

import argparse
import html
import json
from pathlib import Path
from typing import Any

from mldiag.exit_codes import Exit, help_table

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "ml-diagnostics"
SECRET_MASK = "[secret]"
UNKNOWN_MASK = "[unknown]"
# The SDK registers the root under this type token; it exports no constant for it.
STACK_TYPE = "pulumi:pulumi:Stack"
STACK_REFERENCE_TYPE = "pulumi:pulumi:StackReference"
PROVIDER_TYPE_PREFIX = "pulumi:providers:"


def command_parser(command: str, doc: str) -> argparse.ArgumentParser:
    """A command's parser: `mldiag COMMAND` in its usage, its docstring's first paragraph as the description
    and its rows of the exit-code table as the epilog."""
    return argparse.ArgumentParser(
        prog=f"mldiag {command}",
        description=doc.split("\n\n")[0],
        epilog=help_table(command),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def engine_urn(parent: str, type_: str, name: str, stack: str, project: str) -> str:
    """The URN the engine gives a resource: its parent's qualified type (the root stack's left out), `$`,
    its own type. (The SDK's mock monitor keeps only the parent's own type; the engine keeps the chain.)"""
    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != STACK_TYPE:
            type_ = f"{parent_type}${type_}"
    return f"urn:pulumi:{stack}::{project}::{type_}::{name}"


EXIT_OK, EXIT_MANDATORY, EXIT_ERROR, EXIT_INCOMPLETE = Exit.OK, Exit.FINDING, Exit.INVALID, Exit.INCOMPLETE
GITHUB_COMMENT_LIMIT = 65_536


def md(text: Any) -> str:
    """Text for a Markdown table cell or HTML context: HTML-escaped, pipes and newlines neutralised."""
    return html.escape(str(text), quote=False).replace("|", "&#124;").replace("\n", " ")


def code(text: Any) -> str:
    """Inline code that is safe in a table cell (a backtick span cannot escape a pipe)."""
    return f"<code>{md(text)}</code>"


def short_urn(urn: str) -> str:
    """`urn:pulumi:dev::proj::a$b$kubernetes:apps/v1:DaemonSet::x` -> `kubernetes:apps/v1:DaemonSet::x`."""
    parts = urn.split("::")
    if len(parts) < 4:
        return urn
    return f"{parts[2].split('$')[-1]}::{parts[3]}"


def is_provider(type_token: str) -> bool:
    return type_token.startswith(PROVIDER_TYPE_PREFIX)


class PolicyConfigInputError(Exception):
    """A stack, environment or policy pack config file the pack's config cannot be made from."""


def read_json(path: Path) -> dict[str, Any]:
    """A policy pack config file's JSON object."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise PolicyConfigInputError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict):
        raise PolicyConfigInputError(f"{path}: must be a JSON object of policy name -> level or settings")
    return data
