"""Rendering of a verification run (table, JSON, Markdown); the results themselves are
program/verify/result.py.

A run is a list of `TargetResult`s, one per configured target, each with its `Check`s. A target that
could not be reached at all carries `unreachable` (the reason) and no checks. Exit codes: 0 every check
passed; 1 a check failed; 2 the stack config is invalid; 3 a target is unreachable (it wins over 1: a
target nobody could look at is not known to work).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from mldiag.exit_codes import Exit
from program.verify.result import (  # noqa: F401 (re-exported for the CLI and tests)
    Check,
    TargetResult,
    Unreachable,
)

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_UNREACHABLE = Exit.OK, Exit.FINDING, Exit.INVALID, Exit.UNREACHABLE


def exit_code(results: list[TargetResult]) -> Exit:
    """An unreachable target wins over a failed check: a target nobody could look at is not known to work."""
    if any(r.unreachable for r in results):
        return EXIT_UNREACHABLE
    if any(r.failed for r in results):
        return EXIT_FAILED
    return EXIT_OK


def final_code(results: list[TargetResult], unopened: Sequence[str] = ()) -> Exit:
    """The checks' code; all passed but the stack's ESC environments unopened: incomplete (4)."""
    code = exit_code(results)
    return Exit.INCOMPLETE if code == EXIT_OK and unopened else code


def summary(results: list[TargetResult]) -> str:
    checks = [c for r in results for c in r.checks]
    failed = sum(1 for c in checks if not c.ok)
    unreachable = [r.label for r in results if r.unreachable]
    text = f"{len(checks) - failed}/{len(checks)} checks passed on {len(results)} target(s)"
    if failed:
        text += f"; {failed} failed"
    if unreachable:
        text += f"; unreachable: {', '.join(unreachable)}"
    return text


def to_json(stack: str, results: list[TargetResult], unopened: Sequence[str] = ()) -> dict[str, Any]:
    extra = {"unopenedEnvironments": list(unopened)} if unopened else {}
    return {
        "stack": stack,
        "exitCode": final_code(results, unopened),
        **extra,
        "summary": summary(results),
        "targets": [
            {
                "kind": r.kind,
                "name": r.name,
                "unreachable": r.unreachable,
                "checks": [asdict(c) for c in r.checks],
            }
            for r in results
        ],
    }


def render(stack: str, results: list[TargetResult], fmt: str, unopened: Sequence[str] = ()) -> str:
    if fmt == "json":
        return json.dumps(to_json(stack, results, unopened), indent=2) + "\n"
    if fmt == "markdown":
        return render_markdown(stack, results)
    return render_table(stack, results)


def _status(check: Check) -> str:
    return "PASS" if check.ok else "FAIL"


def render_table(stack: str, results: list[TargetResult]) -> str:
    rows: list[tuple[str, str, str, str]] = []
    for r in results:
        if r.unreachable:
            rows.append((r.label, "reachable", "UNREACHABLE", r.unreachable))
        for c in r.checks:
            rows.append((r.label, c.name, _status(c), c.detail))
    out = [f"verify {stack}"]
    if rows:
        w0 = max(len("TARGET"), *(len(r[0]) for r in rows))
        w1 = max(len("CHECK"), *(len(r[1]) for r in rows))
        w2 = len("UNREACHABLE")
        out.append(f"{'TARGET':<{w0}}  {'CHECK':<{w1}}  {'STATUS':<{w2}}  DETAIL")
        for target, name, status, detail in rows:
            out.append(f"{target:<{w0}}  {name:<{w1}}  {status:<{w2}}  {detail}")
    fixes = [(r.label, c) for r in results for c in r.failed if c.fix]
    if fixes:
        out.append("")
        out.append("What to do:")
        for label, c in fixes:
            out.append(f"- {label} {c.name}: {c.fix}")
    out.append("")
    out.append(summary(results))
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "&#124;").replace("\n", "<br>")


def render_markdown(stack: str, results: list[TargetResult]) -> str:
    code = exit_code(results)
    head = {
        EXIT_OK: "all checks passed",
        EXIT_FAILED: "checks failed",
        EXIT_UNREACHABLE: "target unreachable",
    }
    out = [f"## Verify `{_cell(stack)}`: {head[code]}", "", "| target | check | status | detail |"]
    out.append("| --- | --- | --- | --- |")
    for r in results:
        if r.unreachable:
            out.append(f"| `{r.label}` | reachable | **UNREACHABLE** | {_cell(r.unreachable)} |")
        for c in r.checks:
            status = "pass" if c.ok else "**FAIL**"
            detail = _cell(c.detail) + (f"<br>**What to do:** {_cell(c.fix)}" if c.fix else "")
            out.append(f"| `{r.label}` | {c.name} | {status} | {detail} |")
    out += ["", summary(results), ""]
    return "\n".join(out)
