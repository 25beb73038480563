"""Renders an offline plan report as a table (tree), JSON or Markdown, and writes `--out` files."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from ml_diagnostics import cert_manager_schema, compat
from mldiag.common import code, is_provider, md, short_urn
from mldiag.report.graph_text import mermaid_block, render_dot

FORMATS = ("table", "json", "markdown", "dot")
# Next to a value the offline plan invented (a mock answer, a secret placeholder: mldiag/engine/invented.py).
INVENTED_MARK = "(offline: invented)"


def under(path: str, prefix: str) -> bool:
    """`path` is `prefix` or below it, in the plan's path syntax (`a.b[0].c`)."""
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")


def invented_below(path: str, invented: list[str]) -> list[str]:
    """The invented paths at or below `path`, relative to it ("" for `path` itself)."""
    return [p[len(path) :].lstrip(".") for p in invented if under(p, path)]


def invented_mark(path: str, invented: list[str]) -> str:
    """`(offline: invented)` for an invented value, `(offline: invented: a, b[0])` for one holding some."""
    below = invented_below(path, invented)
    if not below:
        return ""
    if "" in below:
        return INVENTED_MARK
    return f"{INVENTED_MARK[:-1]}: {', '.join(below)})"


def render(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2, sort_keys=False) + "\n"
    if fmt == "markdown":
        return render_markdown(report)
    if fmt == "dot":
        return render_dot(report)
    return render_table(report)


def _tree(report: dict[str, Any]) -> list[tuple[int, dict[str, Any], bool]]:
    resources = report["resources"]
    urns = {r["urn"] for r in resources}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for r in resources:
        parent = r["parent"] if r["parent"] in urns else None
        children.setdefault(parent, []).append(r)
    rows: list[tuple[int, dict[str, Any], bool]] = []

    def walk(parent: str | None, depth: int) -> None:
        kids = children.get(parent, [])
        for i, r in enumerate(kids):
            rows.append((depth, r, i == len(kids) - 1))
            walk(r["urn"], depth + 1)

    walk(None, 0)
    return rows


def lifecycle(r: dict[str, Any]) -> str:
    """The lifecycle options a reviewer must see: adoption by import (with its id), protection."""
    flags = [f"import {r['importId']}"] if r.get("importId") else []
    if (r.get("inputs") or {}).get("adopt") is True and r["type"].startswith("pulumi-python:dynamic/"):
        flags.append("adopt: create takes over the existing one")  # dynamic resources cannot be imported
    flags += [
        f for f, on in (("protect", r.get("protect")), ("retainOnDelete", r.get("retainOnDelete"))) if on
    ]
    return f"  [{', '.join(flags)}]" if flags else ""


_EXTENSION = "azure-native:kubernetesconfiguration:"
_HELM = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart")


def version_note(r: dict[str, Any]) -> str:
    """What version a release or an Azure extension will run: pinned, or which train follows upgrades."""
    inputs = r.get("inputs") or {}
    if r["type"].startswith(_EXTENSION) and r["type"].endswith(":Extension"):
        if inputs.get("version"):
            auto = " (auto-upgrade on!)" if inputs.get("autoUpgradeMinorVersion") is not False else ""
            return f"  version {inputs['version']}{auto}"
        return f"  version: unpinned, follows release train {inputs.get('releaseTrain') or 'stable'}"
    if r["type"] in _HELM and isinstance(inputs.get("version"), str):
        chart = str(inputs.get("chart")).rsplit("/", 1)[-1]
        # whether its values were checked against the chart's own schema (and why not)
        note = (
            f" ({cert_manager_schema.schema_note(inputs['version'])})"
            if chart == compat.CERT_MANAGER_CHART
            else ""
        )
        return f"  {chart} {inputs['version']}{note}"
    return ""


def render_table(report: dict[str, Any]) -> str:
    out: list[str] = []
    res = report["resources"]
    custom = sum(1 for r in res if r["custom"])
    out.append(f"{report['project']} / {report['stack']}: {len(res)} resources ({custom} custom)")
    out.append("")
    findings_by_urn = Counter(v["urn"] for v in report["policyViolations"])
    for depth, r, _last in _tree(report):
        mark = "" if r["custom"] else " (component)"
        flag = f"  !{findings_by_urn[r['urn']]}" if findings_by_urn.get(r["urn"]) else ""
        op = "= " if r.get("importId") else "+ "
        out.append(
            f"{'  ' * depth}{op if depth else ''}{r['type']}  {r['name']}{mark}{version_note(r)}{lifecycle(r)}{flag}"
        )
    cp = report["criticalPath"]
    out.append("")
    out.append(f"critical path: {cp['depth']} step(s)")
    for u in cp["urns"]:
        out.append(f"  -> {short_urn(u)}")
    out.append("")
    if report["outputs"]:
        out.append("outputs:")
        invented = report.get("inventedOutputs") or []
        for k, v in report["outputs"].items():
            mark = invented_mark(k, invented)
            out.append(f"  {k}: {json.dumps(v)}" + (f"  {mark}" if mark else ""))
        out.append("")
    vs = report["policyViolations"]
    if not vs:
        out.append("policy: no findings")
    else:
        counts = Counter(v["enforcementLevel"] for v in vs)
        out.append("policy findings: " + ", ".join(f"{n} {lvl}" for lvl, n in sorted(counts.items())))
        for v in vs:
            where = short_urn(v["urn"]) if v["urn"] else "(stack)"
            out.append(f"  [{v['enforcementLevel']}] {v['policy']}  {where}")
            for line in v["message"].splitlines() or [""]:
                out.append(f"      {line}")
    return "\n".join(out) + "\n"


def render_markdown(report: dict[str, Any]) -> str:
    """Heading with the status, the graph, counts, the type table, findings, the resource tree. A blocked plan
    (a mandatory violation) shows its findings right after the heading, before the graph and the table."""
    res = report["resources"]
    vs = report["policyViolations"]
    mandatory = sum(1 for v in vs if v["enforcementLevel"] == "mandatory")
    status = "❌ blocked by policy" if mandatory else "✅ no mandatory policy violation"
    imports = sum(1 for r in res if r.get("importId"))
    counts = (
        f"{len(res)} resources ({sum(1 for r in res if r['custom'])} custom), "
        f"{len(vs)} policy finding(s) ({mandatory} mandatory), critical path {report['criticalPath']['depth']} step(s)"
        + (f", {imports} to import." if imports else ".")
    )
    findings: list[str] = []
    if vs:
        findings += [
            "#### Policy findings",
            "",
            "| level | policy | resource | message |",
            "| --- | --- | --- | --- |",
        ]
        # Mandatory ones first: they are what blocks the plan.
        for v in sorted(vs, key=lambda v: v["enforcementLevel"] != "mandatory"):
            where = code(short_urn(v["urn"])) if v["urn"] else "(stack)"
            findings.append(
                f"| {v['enforcementLevel']} | {code(v['policy'])} | {where} | {md(v['message'])} |"
            )
        findings.append("")
    by_type = Counter(r["type"] for r in res)
    types = ["| type | count |", "| --- | ---: |"]
    types += [f"| {code(t)} | {n} |" for t, n in sorted(by_type.items())]
    types.append("")
    out = [f"### Offline plan: `{report['stack']}` — {status}", ""]
    if mandatory:
        out += [counts, "", *findings, mermaid_block(report), *types]
    else:
        out += [mermaid_block(report), counts, "", *types, *findings]
    out += ["<details><summary>Resources</summary>", "", "```"]
    for depth, r, _ in _tree(report):
        out.append(f"{'  ' * depth}{r['type']}  {r['name']}{version_note(r)}{lifecycle(r)}")
    out += ["```", "", "</details>", ""]
    return "\n".join(out)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "resource"


def write_out(report: dict[str, Any], out_dir: Path) -> int:
    """Writes what each custom resource would apply. Secrets stay masked. Returns the number of files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    count = 0
    for r in report["resources"]:
        if not r["custom"] or is_provider(r["type"]):
            continue
        t, inputs = r["type"], r["inputs"]
        if t == "kubernetes:helm.sh/v3:Release":
            d = out_dir / "helm" / _safe(r["name"])
            d.mkdir(parents=True, exist_ok=True)
            (d / "values.yaml").write_text(yaml.safe_dump(inputs.get("values") or {}, sort_keys=False))
            spec = {k: v for k, v in inputs.items() if k != "values"}
            (d / "release.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
            count += 2
        elif t.startswith("kubernetes:") and "kind" in inputs:
            d = out_dir / "manifests"
            d.mkdir(parents=True, exist_ok=True)
            kind = str(inputs.get("kind")).lower()
            (d / f"{kind}-{_safe(r['name'])}.yaml").write_text(yaml.safe_dump(inputs, sort_keys=False))
            count += 1
        else:
            d = out_dir / "resources"
            d.mkdir(parents=True, exist_ok=True)
            body = {"type": t, "name": r["name"], "inputs": inputs}
            if r.get("invented"):  # input paths whose values the offline plan invented
                body["invented"] = r["invented"]
            (d / f"{_safe(t.split(':')[-1])}-{_safe(r['name'])}.json").write_text(
                json.dumps(body, indent=2) + "\n"
            )
            count += 1
    return count
