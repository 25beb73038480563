"""Renders an offline diff as a table, JSON or a Markdown PR comment section within a size budget."""

from __future__ import annotations

import html
import json
from collections import Counter
from typing import Any

from mldiag.common import GITHUB_COMMENT_LIMIT, SECRET_MASK, code, md
from mldiag.diff.compare import SUMMARY_ACTIONS
from mldiag.diff.headline import headline, is_quiet
from mldiag.report.graph_text import MERMAID_BUDGET, mermaid_block, render_dot
from mldiag.report.render import INVENTED_MARK

DEFAULT_MARKDOWN_BUDGET = 60_000  # leaves room for a header the caller may add
FORMATS = ("table", "json", "markdown", "dot")
SYMBOL = {"add": "+", "import": "=", "update": "~", "rename": "~>", "replace": "+-", "delete": "-"}


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) and value == SECRET_MASK else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _mark(c: dict[str, Any], side: str) -> str:
    """` (offline: invented)` after a value the offline plan invented."""
    return f" {INVENTED_MARK}" if c.get(f"{side}Invented") else ""


def _change_text(c: dict[str, Any], limit: int = 120) -> str:
    old = _short(c["old"], limit) + _mark(c, "old") if "old" in c else "(none)"
    new = _short(c["new"], limit) + _mark(c, "new") if "new" in c else "(none)"
    flags = []
    if c.get("secret"):
        flags.append("secret changed")
    if c.get("forcesReplace"):
        flags.append("forces replacement")
    return f"{c['path']}: {old} => {new}" + (f"  [{', '.join(flags)}]" if flags else "")


def _identity_lines(e: dict[str, Any]) -> list[str]:
    """Where an imported resource comes from, and the URN a renamed or retyped one had."""
    out = [f"import id: {e['importId']}"] if e.get("importId") else []
    return out + ([f"was: {e['oldUrn']}"] if e.get("oldUrn") else [])


def _base_label(diff: dict[str, Any]) -> str:
    ref = diff.get("baseRef")
    if diff.get("baseMissing"):
        return f"{ref or 'base'} (stack absent there)"
    return ref or "base"


def _findings_lines(diff: dict[str, Any], blocked: bool) -> list[str]:
    """Text lines of the findings: when blocked, every mandatory one first (new or not), then the other new."""
    rows = _findings(diff, blocked)
    if not rows:
        return []
    out = ["", "Blocking policy findings:" if blocked else "New policy findings:"]
    for v, level in rows:
        out.append(f"  [{level}] {v.get('policy')}  {v.get('urn') or '(stack)'}")
        out.append(f"      {v.get('message', '').strip().splitlines()[0] if v.get('message') else ''}")
    return out


def _finding_key(v: dict[str, Any]) -> tuple[Any, ...]:
    return (v.get("policy"), v.get("urn"), v.get("enforcementLevel"), v.get("message"))


def _findings(diff: dict[str, Any], blocked: bool) -> list[tuple[dict[str, Any], str]]:
    """(finding, level as shown): when blocked, the head's mandatory findings first (`also at base` when not
    new), then the other new ones; otherwise the new ones."""
    new = diff["newPolicyViolations"]
    if not blocked:
        return [(v, str(v.get("enforcementLevel"))) for v in new]
    new_keys = {_finding_key(v) for v in new}
    mandatory = diff.get("headMandatoryViolations") or []
    rows = [(v, "mandatory" if _finding_key(v) in new_keys else "mandatory, also at base") for v in mandatory]
    shown = {_finding_key(v) for v in mandatory}
    rows += [(v, str(v.get("enforcementLevel"))) for v in new if _finding_key(v) not in shown]
    return rows


def render_table(diff: dict[str, Any]) -> str:
    """The headline first; a stack with nothing to review is that one line. When the plan is blocked, its
    findings come before the resources."""
    if "error" in diff:
        return f"{headline(diff)}\nerror: {diff['error']}\n"
    if is_quiet(diff):
        return headline(diff) + "".join(f"; note: {n}" for n in diff["notes"]) + "\n"
    s = diff["summary"]
    m = s["mandatoryViolations"]
    lines = [
        headline(diff),
        f"Offline diff of stack {diff.get('stack')}: {_base_label(diff)} -> working tree",
        "  "
        + "   ".join(f"{SYMBOL[a]} {a} {s.get(a, 0)}" for a in SUMMARY_ACTIONS)
        + f"   unchanged {s['unchanged']}",
        f"  critical path depth {diff['criticalPath']['base']} -> {diff['criticalPath']['head']}",
    ]
    if m:
        lines += _findings_lines(diff, True)
    lines.append("")
    for e in diff["resources"]:
        lines.append(f"{SYMBOL[e['action']]:>2} {e['action']:<8} {e['type']}  {e['name']}")
        lines += [f"      {line}" for line in _identity_lines(e)]
        for r in e.get("replaceReasons", []):
            lines.append(f"      replace: {r}")
        if e["action"] in ("update", "replace", "rename"):
            lines += [f"      {_change_text(c)}" for c in e["changes"]]
        lines += [f"      note: {n}" for n in e.get("notes", [])]
    if not m:
        lines += _findings_lines(diff, False)
    if diff["resolvedPolicyViolations"]:
        lines += ["", f"Resolved policy findings: {len(diff['resolvedPolicyViolations'])}"]
    lines += [""] + [f"note: {n}" for n in diff["notes"]]
    lines.append(
        f"{m} mandatory policy violation(s) in the working tree's plan"
        if m
        else "no mandatory policy violation"
    )
    return "\n".join(lines) + "\n"


def render_json(diff: dict[str, Any]) -> str:
    return json.dumps(diff, indent=2, sort_keys=False) + "\n"


def _value(value: Any, limit: int = 120) -> str:
    return code(_short(value, limit))


def _resource_details(e: dict[str, Any], max_rows: int = 40) -> str:
    n = len(e["changes"])
    what = {"add": "input", "import": "input", "delete": "input"}.get(e["action"], "change")
    summary = f"{SYMBOL[e['action']]} <b>{e['action']}</b> {code(e['type'])} <b>{md(e['name'])}</b>" + (
        f" ({n} {what}{'s' if n != 1 else ''})" if n else ""
    )
    if not e["changes"] and not e.get("replaceReasons") and not e.get("notes") and not _identity_lines(e):
        return f"<p>{summary}</p>\n"
    out = [f"<details><summary>{summary}</summary>", ""]
    for r in e.get("replaceReasons", []):
        out.append(f"- replaces because {md(r)}")
    for note in e.get("notes", []):
        out.append(f"- note: {md(note)}")
    out.append(f"- urn: {code(e['urn'])}")
    out += [f"- {line.split(': ', 1)[0]}: {code(line.split(': ', 1)[1])}" for line in _identity_lines(e)]
    out.append("")
    if e["changes"]:
        if e["action"] in ("add", "import", "delete"):
            out += ["| path | value |", "| --- | --- |"]
            for c in e["changes"][:max_rows]:
                side = "new" if "new" in c else "old"
                out.append(f"| {code(c['path'])} | {_value(c.get(side))}{_mark(c, side)} |")
        else:
            out += ["| path | before | after | |", "| --- | --- | --- | --- |"]
            for c in e["changes"][:max_rows]:
                flags = " ".join(
                    f
                    for f, on in (
                        ("secret changed", c.get("secret")),
                        ("forces replace", c.get("forcesReplace")),
                    )
                    if on
                )
                before = _value(c["old"]) + _mark(c, "old") if "old" in c else "—"
                after = _value(c["new"]) + _mark(c, "new") if "new" in c else "—"
                out.append(f"| {code(c['path'])} | {before} | {after} | {flags} |")
        if n > max_rows:
            out.append(f"\n… {n - max_rows} more")
    out += ["", "</details>", ""]
    return "\n".join(out)


def _markdown_findings(diff: dict[str, Any], blocked: bool, budget: int) -> str:
    """The findings table within `budget` characters (rows past it, or past 30, are counted instead)."""
    rows = _findings(diff, blocked)
    if not rows:
        return ""
    m = diff["summary"]["mandatoryViolations"]
    title = (
        f"**❌ Blocked: {m} mandatory policy violation{'s' if m != 1 else ''}**"
        if blocked
        else "**New policy findings**"
    )
    out = [title, "", "| level | policy | resource | message |", "| --- | --- | --- | --- |"]
    size = sum(len(line) + 1 for line in out) + 120
    shown = 0
    for v, level in rows[:30]:
        urn = v.get("urn") or "(stack)"
        msg = (v.get("message") or "").strip()
        msg = msg if len(msg) <= 300 else msg[:299] + "…"
        row = f"| {md(level)} | {md(v.get('policy'))} | {code(urn.rsplit('::', 1)[-1])} | {md(msg)} |"
        if size + len(row) + 1 > budget:
            break
        out.append(row)
        size += len(row) + 1
        shown += 1
    if shown < len(rows):
        out.append(f"| | | | … {len(rows) - shown} more (see the JSON output) |")
    return "\n".join(out) + "\n\n"


def _summary_tables(diff: dict[str, Any]) -> str:
    s = diff["summary"]
    out = [
        "| | "
        + " | ".join(f"{SYMBOL[a]} {a}" for a in SUMMARY_ACTIONS)
        + " | unchanged | new policy findings | resolved findings |",
        "| --- |" + " ---: |" * (len(SUMMARY_ACTIONS) + 3),
        "| resources | "
        + " | ".join(str(s.get(a, 0)) for a in SUMMARY_ACTIONS)
        + f" | {s['unchanged']} | {s['newPolicyViolations']} | {s['resolvedPolicyViolations']} |",
        "",
    ]
    by_type: dict[str, Counter] = {}
    for e in diff["resources"]:
        by_type.setdefault(e["type"], Counter())[e["action"]] += 1
    if by_type:
        out += [
            "| type | " + " | ".join(SYMBOL[a] for a in SUMMARY_ACTIONS) + " |",
            "| --- |" + " ---: |" * len(SUMMARY_ACTIONS),
        ]
        rows = sorted(by_type.items())
        for t, c in rows[:40]:
            out.append(f"| {code(t)} | " + " | ".join(str(c[a]) for a in SUMMARY_ACTIONS) + " |")
        if len(rows) > 40:
            out.append(f"| … {len(rows) - 40} more types |" + " |" * len(SUMMARY_ACTIONS))
        out.append("")
    return "\n".join(out) + "\n"


def _notes(diff: dict[str, Any]) -> str:
    notes = [n if len(n) <= 500 else n[:499] + "…" for n in diff["notes"][:10]]
    if len(diff["notes"]) > 10:
        notes.append(f"… {len(diff['notes']) - 10} more notes (see the JSON output)")
    return "".join(f"> note: {md(n)}\n" for n in notes) + ("\n" if notes else "")


MIN_DIAGRAM = 2_300  # mermaid_block's smallest diagram and its note


def render_markdown(
    diff: dict[str, Any], max_chars: int = DEFAULT_MARKDOWN_BUDGET, heading: str = "###"
) -> str:
    """A PR comment section. The heading is the headline (headline.py): every costly replace or delete, the
    counts, whether the plan is blocked. A stack with nothing to review is that one line. Then a status line;
    when blocked, the findings; the graph (Mermaid); the summary tables; otherwise new findings; notes; one
    <details> per changed resource.

    Stays under max_chars: the headline, status, findings and tables first; the graph gets at most a third
    of the budget and what those leave (or is left out, with a note); details fill the rest (dropped with a
    note past it).
    """
    title = f"{heading} {headline(diff, markdown=True)}"
    if "error" in diff:
        # The message comes from the plan (e.g. config errors with key paths): shown verbatim, escaped.
        msg = (
            diff["error"] if len(diff["error"]) <= max_chars // 2 else diff["error"][: max_chars // 2] + "\n…"
        )
        return (
            f"{title}\n\n❌ The offline plan failed "
            f"(base `{md(_base_label(diff))}`):\n\n<pre>{html.escape(msg, quote=False)}</pre>\n"
        )
    if is_quiet(diff):
        notes = "".join(f"; note: {md(n)}" for n in diff["notes"])
        return f"{title}{notes}\n"
    s = diff["summary"]
    m = s["mandatoryViolations"]
    status = f"❌ {m} mandatory policy violation(s)" if m else "No mandatory policy violation"
    head = (
        f"{title}\n\n"
        f"Base `{md(_base_label(diff))}` → this change. {status}. "
        f"Critical path depth {diff['criticalPath']['base']} → {diff['criticalPath']['head']}.\n\n"
    )
    tables = _summary_tables(diff)
    notes = _notes(diff)
    reserve = 400  # room for the truncation notes
    fixed = len(head) + len(tables) + len(notes) + reserve
    findings = _markdown_findings(diff, bool(m), max(1_500, (max_chars - fixed) // 2))
    room = max_chars - fixed - len(findings)
    budget = min(MERMAID_BUDGET, max_chars // 3, room)
    if budget >= MIN_DIAGRAM:
        graph = mermaid_block(diff, budget) + "\n"
    else:
        graph = "<sub>Graph left out to fit the comment size limit (`--format dot` draws it).</sub>\n\n"
    # Blocked: what blocks it comes before the graph and the tables.
    parts = (findings, graph, tables) if m else (graph, tables, findings)
    text = head + "".join(parts) + notes
    if diff["resources"]:
        text += "**Changed resources**\n\n"
    shown = 0
    for e in diff["resources"]:
        block = _resource_details(e)
        if len(text) + len(block) > max_chars - reserve:
            break
        text += block
        shown += 1
    if shown < len(diff["resources"]):
        text += (
            f"\n> ⚠️ Details truncated: {len(diff['resources']) - shown} of {len(diff['resources'])} changed "
            f"resources not shown (GitHub comments are limited to {GITHUB_COMMENT_LIMIT:,} characters). "
            f"Run `mldiag plan {diff.get('stack')} --diff-base <ref> --format json` for all of them.\n"
        )
    if len(text) > max_chars:  # only if the headline and summary alone are larger than the budget
        cut = text.rfind("\n", 0, max_chars - 80)
        text = text[: max(cut, 0)] + "\n\n> ⚠️ Summary truncated to fit the comment size limit.\n"
    return text


def render(diff: dict[str, Any], fmt: str, max_chars: int = DEFAULT_MARKDOWN_BUDGET) -> str:
    if fmt == "json":
        return render_json(diff)
    if fmt == "markdown":
        return render_markdown(diff, max_chars)
    if fmt == "table":
        return render_table(diff)
    if fmt == "dot":
        return render_dot(diff) if "error" not in diff else f"// offline diff of {diff.get('stack')} failed\n"
    raise ValueError(f"unknown format {fmt!r}: use {', '.join(FORMATS)}")
