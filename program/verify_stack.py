"""Verify from a stack's state: `mldiag verify --stack ORG/PROJECT/STACK` checks any stack that uses the
components, whatever program and language registered them.

The Pulumi CLI exports the stack (`pulumi stack export --show-secrets`: the stack's own secrets provider
decrypts; the values stay in memory). Every outermost `mldiag:index:*` component is one target: its
`verifyRecord` output (ml_diagnostics.verify_record) says what to check, and the kind whose section it is
runs the same checks `mldiag verify STACK` runs on the record a stack file gives. A cluster is reached the
way the stack reaches it: the kubeconfig and context of the Kubernetes provider its resources use (GKE: the
cluster's endpoint and CA from the GKE API, as the config route does).

A component deployed before it recorded `verifyRecord` is checked from what its resources' inputs and its
older outputs say exactly, by the state hook of the kind that declares one (program/kinds/<kind>/state.py:
the in-cluster components, GKE, Model Development Clusters); where they do not (an Azure ML extension), the
target fails with what to do, never a pass. The same hooks say how a cluster is reached.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ml_diagnostics import plugin, verify_record
from ml_diagnostics.verify_record import VerifyRecord
from program.verify.from_state import TOKEN, Resource
from program.verify.result import TargetResult, Unreachable

SECRET_SIG = "4dabf18193072939515e22adb298388d"
UPGRADE_FIX = (
    "run `pulumi up` for this stack with ml-diagnostics {version} or later (it records what verify needs in the "
    "component's verifyRecord output, changing no resource), then verify again"
)


class StateUnavailable(Exception):
    """The stack's state cannot be read (the Pulumi CLI failed, no such stack, not a state export)."""


@dataclass
class Target:
    """One outermost component: what to check and how to reach it."""

    component: Resource
    record: VerifyRecord | None
    problem: str = ""
    """Why it cannot be checked (no record and nothing exact to rebuild it from, a record of another shape)."""
    from_inputs: bool = False
    """The record was rebuilt from the resources (a state from before verifyRecord)."""
    access: Any = None
    descendants: list[Resource] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.component.type.removeprefix(TOKEN)


def export(stack: str, cwd: Path) -> dict[str, Any]:
    """The stack's deployment, secrets decrypted by the stack's own secrets provider."""
    cmd = ["pulumi", "stack", "export", "--show-secrets", "--stack", stack]
    try:
        run = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise StateUnavailable("--stack needs the Pulumi CLI on PATH (`pulumi login` done)") from None
    except subprocess.TimeoutExpired:
        raise StateUnavailable(f"`{' '.join(cmd)}` did not answer within 300 s") from None
    if run.returncode != 0:  # stderr only: stdout carries decrypted values
        raise StateUnavailable(f"`{' '.join(cmd)}` failed: {run.stderr.strip()[:500]}")
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        raise StateUnavailable(f"`{' '.join(cmd)}` did not print JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("deployment"), dict):
        raise StateUnavailable(f"`{' '.join(cmd)}` printed no deployment")
    return doc["deployment"]


def plain(value: Any) -> Any:
    """A state value with its secrets as their plaintext (an export with --show-secrets)."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270":
            if "plaintext" not in value:
                raise StateUnavailable(
                    "the export holds encrypted secrets: it must be made with --show-secrets"
                )
            return plain(json.loads(value["plaintext"]))
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def resources(deployment: dict[str, Any]) -> list[Resource]:
    out = []
    for r in deployment.get("resources") or []:
        if not isinstance(r, dict) or "urn" not in r or "type" not in r:
            continue
        provider = r.get("provider")
        out.append(
            Resource(
                urn=r["urn"],
                type=r["type"],
                parent=r.get("parent"),
                custom=bool(r.get("custom")),
                inputs=plain(r.get("inputs") or {}),
                outputs=plain(r.get("outputs") or {}),
                provider=provider.rsplit("::", 1)[0] if isinstance(provider, str) else None,
            )
        )
    return out


def targets(found: list[Resource]) -> list[Target]:
    """Every outermost ml-diagnostics component, in the state's order, with its record and access."""
    by_urn = {r.urn: r for r in found}

    def ancestors(r: Resource) -> list[Resource]:
        out, seen = [], set()
        while r.parent and r.parent in by_urn and r.parent not in seen:
            seen.add(r.parent)
            r = by_urn[r.parent]
            out.append(r)
        return out

    out: list[Target] = []
    tops = [
        r
        for r in found
        if r.type.startswith(TOKEN) and not any(a.type.startswith(TOKEN) for a in ancestors(r))
    ]
    for top in tops:
        descendants = [r for r in found if top in ancestors(r)]
        target = _with_record(top, descendants)
        target.descendants = descendants
        access = _access(target.record.section) if target.record is not None else None
        if access is not None:
            try:
                target.access = access(descendants, by_urn)
            except Unreachable as e:
                target.access = e
        out.append(target)
    return out


def _with_record(top: Resource, descendants: list[Resource]) -> Target:
    value = top.outputs.get(verify_record.OUTPUT)
    if value is not None:
        try:
            return Target(top, verify_record.read(value))
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            return Target(
                top,
                None,
                f"its {verify_record.OUTPUT} cannot be read: {where + ': ' if where else ''}{first['msg']}",
            )
    rebuilt, problem = _from_resources(top, descendants)
    if rebuilt is None:
        return Target(top, None, problem)
    return Target(top, verify_record.read(rebuilt), from_inputs=True)


def _from_resources(top: Resource, descendants: list[Resource]) -> tuple[dict[str, Any] | None, str]:
    """The record of a component from before verifyRecord, by the state hook of the kind that rebuilds it
    (program/kinds/<kind>/state.py), from what is exact in the state; else why not."""
    for hook in _hooks():
        if top.type.removeprefix(TOKEN) in getattr(hook, "COMPONENTS", ()) and top.type.startswith(TOKEN):
            rebuilt: tuple[dict[str, Any] | None, str] = hook.rebuild(top, descendants)
            return rebuilt
    return None, (
        f"deployed before ml-diagnostics recorded what verify needs ({verify_record.OUTPUT}), and its resources do "
        "not say it exactly"
    )


def _hooks() -> list[Any]:
    """The kinds' state hooks (program/verify/from_state.py), in the table's order."""
    from program.kinds.table import KINDS

    return [k.from_state.load() for k in KINDS if k.from_state is not None]


def _access(section: str) -> Any:
    """How the cluster of a record of this section is reached, when its kind's state hook says."""
    from program.kinds.table import KINDS

    for k in KINDS:
        if k.section == section and k.from_state is not None:
            return getattr(k.from_state.load(), "access", None)
    return None


def cloud_options() -> list[Any]:
    """Each cloud's verify options (program/clouds), once, from the table of kinds."""
    from program.clouds import clouds_of
    from program.kinds.table import KINDS

    return [o for cloud in clouds_of(KINDS) for o in cloud.options]


def default_options() -> dict[str, Any]:
    """Verify's options at their defaults (the fleet gates run verify so)."""
    return {"log_lines": 500, "all_logs": False, **{o.dest: o.default for o in cloud_options()}}


def run_once(found: list[Target], options: dict[str, Any]) -> list[TargetResult]:
    """Each target's checks by the kind whose section its record is; an unreachable one is reported."""
    from program.kinds.context import VerifyContext
    from program.kinds.table import KINDS

    by_section = {k.section: k for k in KINDS}
    ctx = VerifyContext(None, options=options)
    results: list[TargetResult] = []
    for target in found:
        result = TargetResult(target.kind, target.component.name)
        results.append(result)
        if target.record is None:
            result.add(
                "verify.record",
                False,
                f"not checked: {target.problem}",
                UPGRADE_FIX.format(version=plugin.VERSION),
            )
            continue
        section = target.record.section
        try:
            if isinstance(target.access, Unreachable):
                raise target.access
            by_section[section].check.load()(getattr(target.record, section), target.access, ctx, result)
        except Unreachable as e:
            result.unreachable = str(e)
    return results
