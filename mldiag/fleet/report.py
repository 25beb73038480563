"""Rendering of a rollout plan, a rollout's outcome and a fleet's status (table, JSON, Markdown)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mldiag.common import md
from mldiag.fleet.model import format_duration
from mldiag.fleet.picture import mermaid_block
from mldiag.fleet.planner import Member, Plan
from mldiag.fleet.progress import Record


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def plan_text(plan: Plan, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(plan.to_json(), indent=2) + "\n"
    if fmt == "markdown":
        lines = [
            f"## Rollout of {md(plan.environment_stack)} ({md(plan.environment)}): "
            f"{len(plan.members)} cluster(s) in {len(plan.waves)} wave(s)",
            "",
            "| wave | clusters | at most at a time | gate |",
            "| --- | --- | --- | --- |",
        ]
        for i, w in enumerate(plan.waves):
            clusters = "<br/>".join(
                f"{md(m.ref)} (<code>{md(plan.qualified(m.stack))}</code>)" for m in w.members
            )
            lines.append(
                f"| {i + 1}. {md(w.name)} | {clusters} | {w.max_parallel} | {md(w.describe_gate())}; revision "
                f"<code>{w.revision}</code> |"
            )
        return "\n".join(lines) + "\n\n" + mermaid_block(plan)
    rows: list[tuple[str, ...]] = [("wave", "cluster", "stack", "revision")]
    for i, w in enumerate(plan.waves):
        for m in w.members:
            rows.append((f"{i + 1}. {w.name}", m.ref, plan.qualified(m.stack), m.revision))
    head = f"rollout of {plan.environment_stack} ({plan.environment}): {len(plan.members)} cluster(s) in {len(plan.waves)} wave(s)"
    gates = [
        f"  gate of {w.name}: {w.describe_gate()}, at most {w.max_parallel} at a time; revision {w.revision}"
        for w in plan.waves
    ]
    return "\n".join([head, *_table(rows), *gates]) + "\n"


def run_text(report: Any, fmt: str) -> str:
    """A rollout.Report."""
    if fmt == "json":
        return json.dumps(report.to_json(), indent=2) + "\n"
    plan = report.plan
    if fmt == "markdown":
        lines = [
            f"## Rollout of {md(plan.environment_stack)}: {md(report.message)} (exit {report.exit_code})",
            "",
            f"Wall time {format_duration(report.wall_seconds)}; ideal {format_duration(report.ideal_seconds)} "
            "(each wave's slowest cluster plus its soak).",
            "",
            "| wave | status | cluster | state | time | why |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for w in report.waves:
            members = w.members or [None]
            for m in members:
                if m is None:
                    lines.append(f"| {md(w.wave.name)} | {w.status} | | | | |")
                else:
                    lines.append(
                        f"| {md(w.wave.name)} | {w.status} | {md(m.member.ref)} | {m.state} | "
                        f"{format_duration(m.seconds)} | {md(m.why)} |"
                    )
        return "\n".join(lines) + "\n"
    rows: list[tuple[str, ...]] = [("wave", "status", "cluster", "state", "time", "why")]
    for w in report.waves:
        for m in w.members or []:
            rows.append(
                (w.wave.name, w.status, m.member.ref, m.state, format_duration(m.seconds), m.why[:160])
            )
        if not w.members:
            rows.append((w.wave.name, w.status, "", "", "", ""))
    tail = f"exit {report.exit_code}: {report.message}; wall {report.wall_seconds:.1f}s, ideal {report.ideal_seconds:.1f}s"
    return "\n".join([*_table(rows), tail]) + "\n"


@dataclass
class MemberStatus:
    member: Member
    wave: str
    state: str
    """pending | outdated | deploying | failed | verified | soaked | approved."""
    record: Record | None
    error: str = ""


def member_state(record: Record | None, revision: str) -> str:
    if record is None:
        return "pending"
    if record.revision != revision:
        return "outdated"
    if record.state != "verified":
        return record.state
    if record.approved is not None:
        return "approved"
    return "soaked" if record.soaked is not None else "verified"


def status_json(plan: Plan, statuses: list[MemberStatus], waves: dict[str, str]) -> dict[str, Any]:
    return {
        "environmentStack": plan.environment_stack,
        "waves": [
            {
                "name": w.name,
                "status": waves[w.name],
                "clusters": [
                    {
                        "target": s.member.ref,
                        "stack": plan.qualified(s.member.stack),
                        "state": s.state,
                        "revision": s.member.revision,
                        "recordedRevision": s.record.revision if s.record else None,
                        "at": s.record.at if s.record else None,
                        "why": s.record.why if s.record else s.error,
                    }
                    for s in statuses
                    if s.wave == w.name
                ],
            }
            for w in plan.waves
        ],
    }


def status_text(plan: Plan, statuses: list[MemberStatus], waves: dict[str, str], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(status_json(plan, statuses, waves), indent=2) + "\n"
    if fmt == "markdown":
        lines = [
            f"## Status of {md(plan.environment_stack)}",
            "",
            "| wave | status | cluster | state | why |",
        ]
        lines.append("| --- | --- | --- | --- | --- |")
        for s in statuses:
            why = s.error or (s.record.why if s.record else "")
            lines.append(f"| {md(s.wave)} | {waves[s.wave]} | {md(s.member.ref)} | {s.state} | {md(why)} |")
        states = {s.member.stack: s.state for s in statuses}
        from mldiag.fleet.picture import mermaid_block as block

        return "\n".join(lines) + "\n\n" + block(plan, states)
    rows: list[tuple[str, ...]] = [("wave", "status", "cluster", "stack", "state", "why")]
    for s in statuses:
        why = s.error or (s.record.why if s.record else "")
        rows.append((s.wave, waves[s.wave], s.member.ref, plan.qualified(s.member.stack), s.state, why[:160]))
    return "\n".join(_table(rows)) + "\n"
