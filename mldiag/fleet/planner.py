"""The rollout plan: a fleet file resolved against its environment stack's targets.

The environment (mldiag/fleet/environment.py: its stack file validated as the program validates it, each
target's revision) comes first, so a fleet over a broken stack file stops here. Then each wave's targets (by
name, or kind/name) and selector (labels; `kind` is built in) become its members: one per-cluster stack each,
`<environment>.<kind prefix>-<target>` (program/fleet_member.py). Every target is in exactly one wave, no wave
is empty, no tolerance is larger than its wave.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ml_diagnostics.rules.names import closest, quote
from mldiag.common import PROJECT
from mldiag.fleet.environment import (
    PROGRAM_PATHS,
    Environment,
    EnvironmentError,
    EnvTarget,
    environment_stack_file,
    member_revision,
    member_revisions,
    program_digest,
    read_environment,
    stack_config_dir,
)
from mldiag.fleet.model import Fleet, FleetError, Gate, WaveSpec, format_duration
from program import stack_file

__all__ = [  # the environment's names, read through the plan by most of the fleet
    "PROGRAM_PATHS",
    "Environment",
    "EnvironmentError",
    "EnvTarget",
    "environment_stack_file",
    "member_revision",
    "member_revisions",
    "program_digest",
    "read_environment",
    "stack_config_dir",
]


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
    index: int | None = field(default=None, hash=False, compare=False)
    """Its target's position among its kind's targets in the environment stack file."""

    def __hash__(self) -> int:
        # members key every record of a rollout: the hash of their identity, computed once
        cached: int | None = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.kind, self.name, self.prefix, self.stack, self.revision))
            object.__setattr__(self, "_hash", cached)
        return cached

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

    @cached_property
    def revision(self) -> str:
        """Its members at their revisions: what a wave's mark and its approval name (progress.wave_digest)."""
        from mldiag.fleet.progress import wave_digest

        return wave_digest(self.name, self.members)

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
    validated: str = ""
    """The digest of the program and of the environment's stack file validated for this plan
    (program/fleet_member.py: a member derived from it validates its own config alone)."""
    source: Environment | None = field(default=None, repr=False, compare=False)
    """The environment stack file this plan was made from, as read (None: a plan made without one)."""

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
                    "revision": w.revision,
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


def member_stack(environment_stack: str, prefix: str, name: str) -> str:
    return f"{environment_stack}.{prefix}-{name}"


_Key = tuple[str, str]  # a target's (kind, name)


def resolve(
    fleet: Fleet,
    environment: str,
    targets: list[EnvTarget],
    revisions: dict[tuple[str, str], str] | None = None,
) -> Plan:
    """The plan, or FleetError with every problem of the fleet against these targets."""
    index = _Targets.of(fleet.environment, targets)
    labels, problems = _labels(fleet, index)
    placed: dict[_Key, str] = {}
    waves: list[Wave] = []
    for spec in fleet.waves:
        members, selection_problems = _select(spec, index, labels, placed)
        problems += selection_problems
        problems += _wave_problems(spec, members, problems)
        waves.append(_wave(spec, members, fleet.environment, labels, revisions or {}))
    problems += _unplaced_problems(index, placed)
    if problems:
        raise FleetError(fleet.path, problems)
    return Plan(
        fleet.path, fleet.environment, environment, fleet.organization, fleet.policy_pack, tuple(waves)
    )


@dataclass(frozen=True)
class _Targets:
    """The environment's targets, found by `kind/name` or by a name that only one of them has."""

    environment: str
    """The environment stack's name (the fleet file's `environment`)."""
    targets: list[EnvTarget]
    by_ref: dict[str, EnvTarget]
    by_name: dict[str, list[EnvTarget]]
    refs: list[str]
    """What a wave or a label may write: every `kind/name`, and every name only one target has."""

    @classmethod
    def of(cls, environment: str, targets: list[EnvTarget]) -> _Targets:
        by_ref = {f"{t.kind}/{t.name}": t for t in targets}
        by_name: dict[str, list[EnvTarget]] = {}
        for t in targets:
            by_name.setdefault(t.name, []).append(t)
        refs = sorted({*by_ref, *(n for n, ts in by_name.items() if len(ts) == 1)})
        return cls(environment, targets, by_ref, by_name, refs)

    def find(self, ref: str, at: str) -> tuple[EnvTarget | None, list[str]]:
        """The target `ref` names, else the problem at `at` (an ambiguous name, an unknown target)."""
        if ref in self.by_ref:
            return self.by_ref[ref], []
        found = self.by_name.get(ref, [])
        if len(found) == 1:
            return found[0], []
        if len(found) > 1:
            choices = ", ".join(f"{t.kind}/{t.name}" for t in found)
            return None, [f"{at}: {quote(ref)} is ambiguous: write one of {choices}"]
        hint = closest(ref, self.refs)
        mean = f" (did you mean {hint!r}?)" if hint else ""
        listed = ", ".join(f"{t.kind}/{t.name}" for t in self.targets) or "none"
        return None, [f"{at}: unknown target {quote(ref)}{mean}; the targets of {self.environment}: {listed}"]


def _labels(fleet: Fleet, index: _Targets) -> tuple[dict[_Key, dict[str, str]], list[str]]:
    """Each target's labels (`kind`, then the fleet file's own), and the problems of the `labels` section."""
    labels: dict[_Key, dict[str, str]] = {(t.kind, t.name): {"kind": t.kind} for t in index.targets}
    problems: list[str] = []
    for ref, own in fleet.labels.items():
        labelled, found = index.find(ref, f"labels.{ref}")
        problems += found
        if labelled is not None:
            labels[(labelled.kind, labelled.name)].update(own)
    return labels, problems


def _select(
    spec: WaveSpec, index: _Targets, labels: dict[_Key, dict[str, str]], placed: dict[_Key, str]
) -> tuple[list[EnvTarget], list[str]]:
    """A wave's members, in order (the targets it names, then those its selector matches), and the problems
    of its targets and selector; `placed` (target -> its wave's name) gains the members."""
    members, problems = _named(spec, index, placed)
    if spec.selector:
        chosen = {(t.kind, t.name) for t in members}
        selected, refused = _matched(spec, index, labels, placed, chosen)
        members += selected
        problems += refused
    return members, problems


def _named(spec: WaveSpec, index: _Targets, placed: dict[_Key, str]) -> tuple[list[EnvTarget], list[str]]:
    """The wave's `targets`, each placed in it unless unknown, ambiguous or in a wave already."""
    members: list[EnvTarget] = []
    problems: list[str] = []
    for j, ref in enumerate(spec.targets):
        at = f"{spec.path}.targets[{j}]"
        named, found = index.find(ref, at)
        problems += found
        if named is not None:
            put, refused = _place(named, spec, at, placed)
            problems += refused
            if put:
                members.append(named)
    return members, problems


def _matched(
    spec: WaveSpec,
    index: _Targets,
    labels: dict[_Key, dict[str, str]],
    placed: dict[_Key, str],
    chosen: set[_Key],
) -> tuple[list[EnvTarget], list[str]]:
    """The targets the wave's selector matches, other than those it names (`chosen`), each placed in it
    unless in a wave already; a selector matching nothing in a wave that names no target is a problem."""
    members: list[EnvTarget] = []
    problems: list[str] = []
    selected = [
        t
        for t in index.targets
        if all(labels[(t.kind, t.name)].get(k) == v for k, v in spec.selector.items())
    ]
    for t in selected:
        if (t.kind, t.name) in chosen:
            continue
        put, refused = _place(t, spec, f"{spec.path}.selector", placed)
        problems += refused
        if put:
            members.append(t)
    if not selected and not spec.targets:
        problems.append(
            f"{spec.path}.selector: {_selector_text(spec)} selects no target; {_labels_text(index.targets, labels)}"
        )
    return members, problems


def _place(t: EnvTarget, spec: WaveSpec, at: str, placed: dict[_Key, str]) -> tuple[bool, list[str]]:
    """Puts `t` in this wave unless a wave has it already (a problem at `at` when that is another wave)."""
    key = (t.kind, t.name)
    if key in placed:
        if placed[key] != spec.name:
            return False, [
                f"{at}: {t.kind}/{t.name} is already in wave {placed[key]!r}; a target is in one wave only"
            ]
        return False, []
    placed[key] = spec.name
    return True, []


def _wave_problems(spec: WaveSpec, members: list[EnvTarget], found: list[str]) -> list[str]:
    """A wave that selects nothing (unless a problem `found` so far at its path says why), and a failure
    tolerance larger than the wave."""
    problems: list[str] = []
    if not members and (spec.targets or spec.selector) and not any(p.startswith(spec.path) for p in found):
        problems.append(f"{spec.path}: selects no target that is not in an earlier wave")
    if members and spec.tolerance.count is not None and spec.tolerance.count > len(members):
        problems.append(
            f"{spec.path}.failureTolerance: {spec.tolerance.count} is larger than the wave "
            f"({len(members)} cluster(s): {', '.join(t.name for t in members)}); allowed: 0 to {len(members)}, "
            'or a percentage ("25%")'
        )
    return problems


def _wave(
    spec: WaveSpec,
    members: list[EnvTarget],
    environment_stack: str,
    labels: dict[_Key, dict[str, str]],
    revisions: dict[_Key, str],
) -> Wave:
    return Wave(
        spec.name,
        tuple(
            Member(
                t.kind,
                t.name,
                t.prefix,
                member_stack(environment_stack, t.prefix, t.name),
                labels[(t.kind, t.name)],
                revisions.get((t.kind, t.name), ""),
                t.index,
            )
            for t in members
        ),
        spec.max_parallel,
        spec.tolerance.of(len(members)),
        str(spec.tolerance),
        spec.soak,
        spec.gate,
    )


def _unplaced_problems(index: _Targets, placed: dict[_Key, str]) -> list[str]:
    """Every target is in a wave."""
    return [
        f"waves: {t.kind}/{t.name} is in no wave; every target of {index.environment} must be in exactly one "
        "(name it in a wave's targets or give it a label a selector matches)"
        for t in index.targets
        if (t.kind, t.name) not in placed
    ]


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

    with (
        stack_file.collector_paused()
    ):  # millions of young objects, no cycles among them (program/stack_file/reader.py)
        fleet = read(fleet_path)
        env = read_environment(project_dir, fleet.environment)
        revisions = member_revisions(program_digest(project_dir), env.written, env.targets)
        return replace(
            resolve(fleet, env.environment, env.targets, revisions), validated=env.digest, source=env
        )


def settle() -> None:
    """Collects once, then freezes what the process holds, the plan included: it is immutable and lives as long as
    the command, and a rollout's collections would otherwise walk all of it again and again (at 10,000 clusters a
    third of the simulated rollout's time)."""
    import gc

    gc.collect()
    gc.freeze()
