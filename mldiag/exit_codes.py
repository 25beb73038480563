"""The one table of `mldiag`'s exit codes: every command ends with one of these, and the table in `mldiag
--help`, each command's `--help`, the README's "Exit codes" and docs/offline-plan.md is this table
(tests/test_exit_codes.py reads each back and compares them)."""

from __future__ import annotations

import re
import textwrap
from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    """Done: no mandatory finding, every check passed, no drift."""
    FINDING = 1
    """What the command looks for was found: a mandatory policy violation, a failed check or gate, drift."""
    INVALID = 2
    """Bad input, named: an invalid stack config, fleet file or argument, a wrong passphrase, an error."""
    UNREACHABLE = 3
    """Something the command must reach could not be: a target, a member stack (locked, unreadable)."""
    INCOMPLETE = 4
    """Nothing else wrong, but the result lacks values: the stack imports Pulumi ESC environments that were not
    supplied (--esc-values), so what it shows may differ from `pulumi up`."""


# Of several outcomes the one a command ends with: an incomplete result is the mildest failure.
SEVERITY = (Exit.OK, Exit.INCOMPLETE, Exit.FINDING, Exit.UNREACHABLE, Exit.INVALID)


def worst(*codes: int) -> Exit:
    return max((Exit(c) for c in codes), key=SEVERITY.index, default=Exit.OK)


# What each code means per command: the README's table, row by row ("-": the command never ends so).
MEANINGS: dict[str, tuple[str, str, str, str, str]] = {
    "`mldiag plan`, `mldiag diff`": ("no mandatory finding", "a mandatory policy violation", "invalid config or an error", "-", "otherwise 0, but the stack's ESC environments were not supplied"),
    "`mldiag verify`": ("every check passed", "a check failed", "invalid config or a wrong passphrase (named)", "a target unreachable", "otherwise 0, but the stack's ESC environments were not supplied"),
    "`mldiag import`": ("written", "-", "invalid config or an error", "-", "-"),
    "`mldiag new-stack`, `mldiag secrets`, `mldiag policy-config`": ("done", "-", "bad input (named)", "-", "-"),
    "`mldiag fleet plan/run/gate/status`": ("done", "a wave failed its gate (or waits for approval)", "invalid fleet file, environment stack file or arguments", "a stack could not be run or read", "-"),
    "`mldiag fleet drift`": ("no drift", "drift", "invalid input", "a stack could not be read", "-"),
    "`mldiag fleet adopt`": ("moved, every member previews no change", "moved, a member previews changes", "refused, nothing moved", "a stack could not be run or read", "-"),
    "`mldiag fleet workflow`": ("written, or current", "not the generated workflows (--check)", "invalid fleet file, or a fleet GitHub cannot run (named)", "-", "-"),
    "`mldiag fleet pko`": ("written, or current", "not the generated objects (--check)", "invalid fleet file or arguments, uncommitted program", "-", "-"),
    "`mldiag fleet recover`": ("settled, or nothing to settle", "-", "invalid fleet file", "not settled (a lock, an unavailable stack)", "-"),
}  # fmt: skip


def readme_table() -> str:
    rows = ["| command | 0 | 1 | 2 | 3 | 4 |", "| --- | --- | --- | --- | --- | --- |"]
    rows += [f"| {command} | {' | '.join(meaning)} |" for command, meaning in MEANINGS.items()]
    return "\n".join(rows) + "\n"


def _commands(row: str) -> list[str]:
    """The commands a row names (`plan`, `fleet plan/run/gate/status`)."""
    return re.findall(r"`mldiag ([^`]+)`", row)


def help_table(command: str | None = None) -> str:
    """The table as `--help` prints it: every row, or the rows of one command (`plan`, `fleet`)."""
    out = []
    for row, meanings in MEANINGS.items():
        names = _commands(row)
        if command is not None and command not in {n.split()[0] for n in names}:
            continue
        out.append("  " + ", ".join(f"mldiag {n}" for n in names) + ":")
        for code, meaning in zip(Exit, meanings, strict=True):
            if meaning != "-":
                out += textwrap.wrap(
                    meaning, 100, initial_indent=f"    {int(code)}  ", subsequent_indent=" " * 7
                )
    return 'exit codes (README "Exit codes"):\n' + "\n".join(out) + "\n"
