"""Fleet drift: `pulumi refresh --preview-only` of every member stack of an environment, per cluster.

Read-only: a refresh preview compares each resource's recorded state with what its provider reads now and
writes nothing. Exit codes: 0 no drift; 1 drift in at least one cluster; 2 invalid input (the fleet file
or its environment stack file); 3 a stack could not be read (it wins over 1, as in verify: a cluster
nobody could look at is not known to be as recorded).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from mldiag.common import md, short_urn
from mldiag.exit_codes import Exit
from mldiag.fleet.planner import Member, Plan
from mldiag.fleet.rollout import LockConflict, StackUnavailable

EXIT_OK, EXIT_DRIFT, EXIT_INVALID, EXIT_UNREADABLE = Exit.OK, Exit.FINDING, Exit.INVALID, Exit.UNREACHABLE


class Refresher(Protocol):
    def refresh_preview(self, member: Member) -> dict[str, Any]:
        """{"changes": {op: count}, "resources": [{"urn", "type", "op", "diffs"}]}; StackUnavailable."""


@dataclass
class ClusterDrift:
    member: Member
    wave: str
    changes: dict[str, int] = field(default_factory=dict)
    resources: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""

    @property
    def status(self) -> str:
        if self.error:
            return "unreadable"
        return "drift" if self.changes else "no drift"


def run(plan: Plan, refresher: Refresher, parallel: int = 4) -> list[ClusterDrift]:
    waves = {m: w.name for w in plan.waves for m in w.members}

    def one(m: Member) -> ClusterDrift:
        try:
            found = refresher.refresh_preview(m)
        except (StackUnavailable, LockConflict) as e:
            return ClusterDrift(m, waves[m], error=str(e))
        return ClusterDrift(m, waves[m], found["changes"], found["resources"])

    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(plan.members) or 1))) as pool:
        return list(pool.map(one, plan.members))


def exit_code(results: list[ClusterDrift]) -> int:
    if any(r.error for r in results):
        return EXIT_UNREADABLE
    return EXIT_DRIFT if any(r.changes for r in results) else EXIT_OK


def _changes(r: ClusterDrift) -> str:
    return ", ".join(f"{op} {n}" for op, n in sorted(r.changes.items()))


def _resource(res: dict[str, Any]) -> str:
    diffs = f" ({', '.join(res['diffs'][:6])})" if res.get("diffs") else ""
    return f"{res['op']} {short_urn(res['urn'])}{diffs}"


def summary(plan: Plan, results: list[ClusterDrift]) -> str:
    drifted = [r for r in results if r.changes]
    unreadable = [r for r in results if r.error]
    text = f"{len(drifted)} of {len(results)} cluster(s) of {plan.environment_stack} drifted"
    if unreadable:
        text += f"; {len(unreadable)} could not be read"
    return text


def to_json(plan: Plan, results: list[ClusterDrift]) -> dict[str, Any]:
    return {
        "environmentStack": plan.environment_stack,
        "exitCode": exit_code(results),
        "summary": summary(plan, results),
        "clusters": [
            {
                "target": r.member.ref,
                "stack": plan.qualified(r.member.stack),
                "wave": r.wave,
                "status": r.status,
                "changes": r.changes,
                "resources": r.resources,
                "error": r.error,
            }
            for r in results
        ],
    }


def render(plan: Plan, results: list[ClusterDrift], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(to_json(plan, results), indent=2) + "\n"
    if fmt == "markdown":
        lines = [f"## Drift of {md(plan.environment_stack)}: {md(summary(plan, results))}", ""]
        lines += ["| cluster | stack | wave | status | changes |", "| --- | --- | --- | --- | --- |"]
        for r in results:
            detail = r.error or "<br/>".join(md(_resource(x)) for x in r.resources[:20]) or md(_changes(r))
            lines.append(
                f"| {md(r.member.ref)} | {md(plan.qualified(r.member.stack))} | {md(r.wave)} | {r.status} | {detail} |"
            )
        return "\n".join(lines) + "\n"
    rows = [("cluster", "stack", "wave", "status", "changes")]
    for r in results:
        rows.append((r.member.ref, plan.qualified(r.member.stack), r.wave, r.status, r.error or _changes(r)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    out = [summary(plan, results)]
    for row in rows:
        out.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(row[:4])) + "  " + row[4])
    for r in results:
        for res in r.resources:
            out.append(f"  {r.member.stack}: {_resource(res)}")
    return "\n".join(out) + "\n"
