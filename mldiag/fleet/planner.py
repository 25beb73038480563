"""The rollout plan: a fleet file resolved against its environment stack's targets.

The environment stack file is validated as the program validates it (`program.config.parse`, the offline
plan's way: secrets stay ciphertext), so a fleet over a broken stack file stops here. Then each wave's
targets (by name, or kind/name) and selector (labels; `kind` is built in) become its members: one
per-cluster stack each, `<environment>.<kind prefix>-<target>` (program/fleet_member.py). Every target is in
exactly one wave, no wave is empty, no tolerance is larger than its wave.

A member's revision is a digest of what its update deploys: the program's files, the environment-wide keys
of the stack file and the member's own target entry (secrets as their ciphertext). Progress recorded at an
older revision counts as not done (mldiag/fleet/progress.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ml_diagnostics.rules.names import closest, quote
from mldiag.fleet.model import Fleet, FleetError, Gate, WaveSpec, format_duration
from mldiag.plan.common import PROJECT
from program import stack_file
from program.config_base import NAMESPACE
from program.stack_file import SecretLeaf, StackFileError

# What the program's update depends on besides the stack file (the member revision's program part).
PROGRAM_PATHS = ("Pulumi.yaml", "__main__.py", "requirements.txt", "program", "components/ml_diagnostics")


@dataclass(frozen=True)
class Member:
    """One target of the environment, deployed by its own stack."""

    kind: str
    name: str
    prefix: str
    stack: str
    """The member stack's name, `<environment>.<prefix>-<name>`."""
    labels: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    revision: str = ""

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class Wave:
    name: str
    members: tuple[Member, ...]
    max_parallel: int
    tolerance: int
    """How many of its clusters may fail (the count, also for a percentage)."""
    tolerance_text: str
    soak: int
    gate: Gate

    def describe_gate(self) -> str:
        parts = [
            f"verify (wait {format_duration(self.gate.verify_wait)})" if self.gate.verify else "no verify"
        ]
        percent = f" ({self.tolerance_text})" if self.tolerance_text.endswith("%") else ""
        parts.append(f"tolerate {self.tolerance} failed{percent}")
        if self.soak:
            parts.append(f"soak {format_duration(self.soak)}")
        if self.gate.approval:
            parts.append("approval")
        return ", ".join(parts)


@dataclass(frozen=True)
class Plan:
    fleet: Path
    environment_stack: str
    environment: str
    """The stack's `environment` (dev, staging, prod)."""
    organization: str | None
    policy_pack: bool
    waves: tuple[Wave, ...]

    @property
    def members(self) -> list[Member]:
        return [m for w in self.waves for m in w.members]

    def qualified(self, stack: str) -> str:
        """The stack name the Pulumi CLI is given (`org/project/stack` when the fleet names an organization)."""
        return f"{self.organization}/{PROJECT}/{stack}" if self.organization else stack

    def to_json(self) -> dict[str, Any]:
        return {
            "fleet": str(self.fleet),
            "environmentStack": self.environment_stack,
            "environment": self.environment,
            "waves": [
                {
                    "name": w.name,
                    "maxParallel": w.max_parallel,
                    "failureTolerance": w.tolerance,
                    "failureToleranceAsWritten": w.tolerance_text,
                    "soakSeconds": w.soak,
                    "gate": {
                        "verify": w.gate.verify,
                        "verifyWaitSeconds": w.gate.verify_wait,
                        "verifyIntervalSeconds": w.gate.verify_interval,
                        "approval": w.gate.approval,
                    },
                    "clusters": [
                        {
                            "target": m.ref,
                            "stack": self.qualified(m.stack),
                            "labels": m.labels,
                            "revision": m.revision,
                        }
                        for m in w.members
                    ],
                }
                for w in self.waves
            ],
        }


@dataclass(frozen=True)
class EnvTarget:
    kind: str
    name: str
    prefix: str
    entry: Any
    """The target's entry as the stack file holds it (secrets as SecretLeaf ciphertext)."""


class EnvironmentError(Exception):
    """The environment stack file is missing or invalid (its problems, with their key paths)."""


def stack_config_dir(project_dir: Path) -> Path:
    project_file = project_dir / "Pulumi.yaml"
    try:
        doc, _ = stack_file.parse_text(stack_file.read_text(project_file), str(project_file))
    except StackFileError as e:
        raise EnvironmentError(str(e)) from None
    return project_dir / str((doc or {}).get("stackConfigDir", "."))


def environment_stack_file(project_dir: Path, stack: str) -> Path:
    return stack_config_dir(project_dir) / f"Pulumi.{stack}.yaml"


def read_environment(project_dir: Path, stack: str) -> tuple[str, list[EnvTarget], dict[str, Any]]:
    """(its `environment`, its targets in the program's order, the stack file's config as written)."""
    from program.config import ConfigError, parse
    from program.fleet_member import KEY as MEMBER_KEY
    from program.kinds.table import KINDS

    path = environment_stack_file(project_dir, stack)
    try:
        raw, secret_keys = stack_file.offline_config(path, NAMESPACE)
        written = stack_file.read(path, NAMESPACE).config
    except StackFileError as e:
        raise EnvironmentError(str(e)) from None
    if MEMBER_KEY in raw:
        raise EnvironmentError(
            f"{path}: {MEMBER_KEY} is set: that is a fleet member's key, not an environment's"
        )
    try:
        cfg = parse(raw, secret_keys)
    except ConfigError as e:
        raise EnvironmentError(f"{path}: {e}") from None
    targets = []
    for kind in KINDS:
        entries = written.get(f"{NAMESPACE}:{kind.key}") or []
        for i, t in enumerate(getattr(cfg, kind.field)):
            targets.append(EnvTarget(kind.key, t.name, kind.prefix, entries[i] if i < len(entries) else None))
    return str(cfg.environment), targets, written


def _canonical(value: Any) -> Any:
    if isinstance(value, SecretLeaf):
        return {"secure": value.ciphertext}
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def program_digest(project_dir: Path) -> str:
    h = hashlib.sha256()
    for rel in PROGRAM_PATHS:
        base = project_dir / rel
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for p in files:
            if "__pycache__" in p.parts or p.suffix == ".pyc":
                continue
            h.update(str(p.relative_to(project_dir)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def member_revision(program: str, written: dict[str, Any], target: EnvTarget) -> str:
    from program.kinds.table import KINDS

    kind_keys = {f"{NAMESPACE}:{k.key}" for k in KINDS}
    shared = {k: v for k, v in sorted(written.items()) if k not in kind_keys}
    doc = json.dumps(
        {"program": program, "shared": _canonical(shared), "target": [target.kind, _canonical(target.entry)]},
        sort_keys=True,
    )
    return hashlib.sha256(doc.encode()).hexdigest()[:12]


def member_stack(environment_stack: str, prefix: str, name: str) -> str:
    return f"{environment_stack}.{prefix}-{name}"


def resolve(
    fleet: Fleet,
    environment: str,
    targets: list[EnvTarget],
    revisions: dict[tuple[str, str], str] | None = None,
) -> Plan:
    """The plan, or FleetError with every problem of the fleet against these targets."""
    problems: list[str] = []
    by_ref = {f"{t.kind}/{t.name}": t for t in targets}
    by_name: dict[str, list[EnvTarget]] = {}
    for t in targets:
        by_name.setdefault(t.name, []).append(t)
    refs = sorted({*by_ref, *(n for n, ts in by_name.items() if len(ts) == 1)})

    def lookup(ref: str, at: str) -> EnvTarget | None:
        if ref in by_ref:
            return by_ref[ref]
        found = by_name.get(ref, [])
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            problems.append(
                f"{at}: {quote(ref)} is ambiguous: write one of {', '.join(f'{t.kind}/{t.name}' for t in found)}"
            )
            return None
        hint = closest(ref, refs)
        mean = f" (did you mean {hint!r}?)" if hint else ""
        listed = ", ".join(f"{t.kind}/{t.name}" for t in targets) or "none"
        problems.append(
            f"{at}: unknown target {quote(ref)}{mean}; the targets of {fleet.environment}: {listed}"
        )
        return None

    labels: dict[tuple[str, str], dict[str, str]] = {(t.kind, t.name): {"kind": t.kind} for t in targets}
    for ref, own in fleet.labels.items():
        if (labelled := lookup(ref, f"labels.{ref}")) is not None:
            labels[(labelled.kind, labelled.name)].update(own)

    placed: dict[tuple[str, str], str] = {}
    waves: list[Wave] = []
    for spec in fleet.waves:
        members: list[EnvTarget] = []
        chosen: set[tuple[str, str]] = set()
        for j, ref in enumerate(spec.targets):
            at = f"{spec.path}.targets[{j}]"
            named = lookup(ref, at)
            if named is not None and _place(named, spec, at, placed, problems):
                members.append(named)
                chosen.add((named.kind, named.name))
        if spec.selector:
            selected = [
                t
                for t in targets
                if all(labels[(t.kind, t.name)].get(k) == v for k, v in spec.selector.items())
            ]
            for t in selected:
                if (t.kind, t.name) in chosen:
                    continue
                if _place(t, spec, f"{spec.path}.selector", placed, problems):
                    members.append(t)
            if not selected and not spec.targets:
                problems.append(
                    f"{spec.path}.selector: {_selector_text(spec)} selects no target; {_labels_text(targets, labels)}"
                )
        if (
            not members
            and (spec.targets or spec.selector)
            and not any(p.startswith(spec.path) for p in problems)
        ):
            problems.append(f"{spec.path}: selects no target that is not in an earlier wave")
        tolerance = spec.tolerance.of(len(members))
        if members and spec.tolerance.count is not None and spec.tolerance.count > len(members):
            problems.append(
                f"{spec.path}.failureTolerance: {spec.tolerance.count} is larger than the wave "
                f"({len(members)} cluster(s): {', '.join(t.name for t in members)}); allowed: 0 to {len(members)}, "
                'or a percentage ("25%")'
            )
        waves.append(
            Wave(
                spec.name,
                tuple(
                    Member(
                        t.kind,
                        t.name,
                        t.prefix,
                        member_stack(fleet.environment, t.prefix, t.name),
                        labels[(t.kind, t.name)],
                        (revisions or {}).get((t.kind, t.name), ""),
                    )
                    for t in members
                ),
                spec.max_parallel,
                tolerance,
                str(spec.tolerance),
                spec.soak,
                spec.gate,
            )
        )
    for t in targets:
        if (t.kind, t.name) not in placed:
            problems.append(
                f"waves: {t.kind}/{t.name} is in no wave; every target of {fleet.environment} must be in exactly one "
                "(name it in a wave's targets or give it a label a selector matches)"
            )
    if problems:
        raise FleetError(fleet.path, problems)
    return Plan(
        fleet.path, fleet.environment, environment, fleet.organization, fleet.policy_pack, tuple(waves)
    )


def _place(
    t: EnvTarget,
    spec: WaveSpec,
    at: str,
    placed: dict[tuple[str, str], str],
    problems: list[str],
) -> bool:
    key = (t.kind, t.name)
    if key in placed:
        if placed[key] != spec.name:
            problems.append(
                f"{at}: {t.kind}/{t.name} is already in wave {placed[key]!r}; a target is in one wave only"
            )
        return False
    placed[key] = spec.name
    return True


def _selector_text(spec: WaveSpec) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in spec.selector.items()) + "}"


def _labels_text(targets: list[EnvTarget], labels: dict[tuple[str, str], dict[str, str]]) -> str:
    shown = [
        f"{t.name} {{{', '.join(f'{k}: {v}' for k, v in sorted(labels[(t.kind, t.name)].items()))}}}"
        for t in targets[:20]
    ]
    return "the targets' labels: " + ("; ".join(shown) if shown else "no targets")


def load(fleet_path: Path, project_dir: Path) -> Plan:
    """Reads and validates the fleet file and its environment stack; FleetError or EnvironmentError."""
    from mldiag.fleet.model import read

    fleet = read(fleet_path)
    environment, targets, written = read_environment(project_dir, fleet.environment)
    program = program_digest(project_dir)
    revisions = {(t.kind, t.name): member_revision(program, written, t) for t in targets}
    return resolve(fleet, environment, targets, revisions)
