"""A wave's gate as a stack (docs/fleet.md, "On Kubernetes"): the program in gate mode.

The Pulumi Kubernetes Operator orders stacks by `prerequisites` and counts a prerequisite only when its last
update succeeded: it gates on deployment, not on health. A wave's gate is a stack of this program whose config
is one entry, and whose update is the health gate, so any engine that orders stacks can wait on it:

    ml-diagnostics:fleetGate:
      fleet: fleet/prod.yaml
      environmentStack: prod
      wave: main
      revision: 3f5c0a9b1d2e4f60        # the wave's members at their revisions (`mldiag fleet plan`)
      members:
        - {stack: acme/ml-diagnostics/prod.gke-prod-tpu, target: gkeClusters/prod-tpu}
      failureTolerance: 0              # members that may be unhealthy
      soak: 900                        # seconds, counted from the last update of any member
      verifyWait: 600                  # seconds verify is polled until every member passes
      verifyInterval: 15
      approval: true
      approvedRevision: 3f5c0a9b1d2e4f60   # a person's approval of this revision, from the fleet's approvals file

Its update registers no resource. It verifies every member from the member's state, as `mldiag verify --stack`
does, polling until every member passes or `verifyWait` is over: a wave that is not healthy yet is waited for
inside the update, since the operator retries a failed update only three times before it marks the Stack
Stalled. It then waits out the soak and verifies once more; fails, naming them, when more members than the
tolerance are unhealthy; and, for a wave that needs approval, fails until `approvedRevision` is the wave's
revision. What it checked is its output `fleetGate`, the same on every update that checks the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ml_diagnostics.rules.names import quote
from program import config_input
from program.clock import Clock, SystemClock
from program.config_base import NAMESPACE, ConfigError

KEY = f"{NAMESPACE}:fleetGate"
OUTPUT = "fleetGate"
FIELDS = ("fleet", "environmentStack", "wave", "revision", "members")
OPTIONAL_FIELDS = (
    "failureTolerance",
    "soak",
    "verifyWait",
    "verifyInterval",
    "approval",
    "approvedRevision",
)
MAX_SECONDS = 7 * 24 * 3600
_REVISION = re.compile(r"[0-9a-f]{16}")
_STACK = re.compile(r"[A-Za-z0-9_.\-/]{1,300}")


@dataclass(frozen=True)
class GateMember:
    stack: str
    """The member's stack as the Pulumi CLI names it (`org/project/stack`)."""
    target: str
    """Its target, `kind/name`."""


@dataclass(frozen=True)
class Gate:
    fleet: str
    environment_stack: str
    wave: str
    revision: str
    members: tuple[GateMember, ...]
    failure_tolerance: int = 0
    soak: int = 0
    verify_wait: int = 600
    verify_interval: int = 10
    approval: bool = False
    approved_revision: str | None = None


@dataclass
class Health:
    """One member's verify pass."""

    healthy: bool
    failing: list[str] = field(default_factory=list)
    updated_at: float | None = None
    """When its stack was last updated (the state's manifest)."""


class Probe(Protocol):
    def health(self, member: GateMember) -> Health: ...


class GateFailed(Exception):
    """The gate does not pass: the message says which members, or that it waits for approval."""


# -- the config entry ---------------------------------------------------------------------------------------------
def configured(raw: Mapping[str, Any]) -> bool:
    return KEY in raw


def parse(raw: Mapping[str, Any]) -> Gate:
    """The gate of a stack's raw config; ConfigError naming every problem by its key path."""
    decoded, problems = config_input.decode({KEY: raw[KEY]})
    if problems:
        raise ConfigError(problems)
    value = decoded.get("fleetGate")
    if not isinstance(value, dict):
        raise ConfigError([f"{KEY}: must be a map with {', '.join(FIELDS)}"])
    out: list[str] = []
    allowed = (*FIELDS, *OPTIONAL_FIELDS)
    out += [
        f"{KEY}.{quote(str(k), 40)[1:-1]}: unknown key; allowed keys: {', '.join(allowed)}"
        for k in sorted(set(value) - set(allowed))
    ]
    out += [f"{KEY}.{k}: required key is missing" for k in FIELDS if k not in value]
    for k in ("fleet", "environmentStack", "wave", "revision"):
        if k in value and not (isinstance(value[k], str) and value[k]):
            out.append(f"{KEY}.{k}: must be a non-empty string")
    if isinstance(value.get("revision"), str) and not _REVISION.fullmatch(value["revision"]):
        out.append(f"{KEY}.revision: must be a wave revision, 16 hexadecimal digits (`mldiag fleet plan`)")
    approved = value.get("approvedRevision")
    if approved is not None and not (isinstance(approved, str) and _REVISION.fullmatch(approved)):
        out.append(f"{KEY}.approvedRevision: must be a wave revision, 16 hexadecimal digits")
    members = _members(value.get("members"), out)
    numbers = {}
    for k, low, high, default in (
        ("failureTolerance", 0, 100_000, 0),
        ("soak", 0, MAX_SECONDS, 0),
        ("verifyWait", 0, MAX_SECONDS, 600),
        ("verifyInterval", 1, 3600, 10),
    ):
        v = value.get(k, default)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            out.append(f"{KEY}.{k}: must be a whole number from {low} to {high}")
        numbers[k] = v
    if not isinstance(value.get("approval", False), bool):
        out.append(f"{KEY}.approval: must be true or false")
    if out:
        raise ConfigError(out)
    return Gate(
        value["fleet"],
        value["environmentStack"],
        value["wave"],
        value["revision"],
        members,
        numbers["failureTolerance"],
        numbers["soak"],
        numbers["verifyWait"],
        numbers["verifyInterval"],
        bool(value.get("approval", False)),
        approved,
    )


def _members(value: Any, out: list[str]) -> tuple[GateMember, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        out.append(f"{KEY}.members: must be a list of {{stack, target}}, at least one")
        return ()
    members = []
    for i, m in enumerate(value):
        at = f"{KEY}.members[{i}]"
        if not isinstance(m, dict) or set(m) != {"stack", "target"}:
            out.append(f"{at}: must be a map of stack and target")
            continue
        if not (isinstance(m["stack"], str) and _STACK.fullmatch(m["stack"])):
            out.append(f"{at}.stack: must be a stack name (`org/project/stack`)")
        elif not isinstance(m["target"], str) or "/" not in m["target"]:
            out.append(f"{at}.target: must be kind/name")
        else:
            members.append(GateMember(m["stack"], m["target"]))
    return tuple(members)


# -- the gate -------------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    gate: Gate
    health: dict[GateMember, Health]
    soaked_until: float | None

    def unhealthy(self) -> list[GateMember]:
        return [m for m in self.gate.members if not self.health[m].healthy]

    def to_json(self) -> dict[str, Any]:
        g = self.gate
        return {
            "fleet": g.fleet,
            "wave": g.wave,
            "revision": g.revision,
            "members": [
                {"stack": m.stack, "target": m.target, "healthy": h.healthy, "failing": h.failing}
                for m in g.members
                for h in [self.health[m]]
            ],
            "unhealthy": len(self.unhealthy()),
            "failureTolerance": g.failure_tolerance,
            "soakedUntil": int(self.soaked_until) if self.soaked_until is not None else None,
            "approval": g.approval,
            "approvedRevision": g.approved_revision,
        }


def check(gate: Gate, probe: Probe, clock: Clock, log: Callable[[str], None] = lambda line: None) -> Outcome:
    """Health polled up to verifyWait, the soak, verify once more, the tolerance and the approval; GateFailed
    (with the outcome as `.outcome`) when the gate does not pass."""
    deadline = clock.now() + gate.verify_wait
    while True:
        health = {m: probe.health(m) for m in gate.members}
        sick = [m for m in gate.members if not health[m].healthy]
        left = deadline - clock.now()
        if not sick or left <= 0:
            break
        log(
            f"wave {gate.wave}: waiting for {len(sick)} member(s) ({int(left)}s left): {_names(sick, health)}"
        )
        clock.sleep(min(gate.verify_interval, left))
    outcome = Outcome(gate, health, None)
    if len(sick) > gate.failure_tolerance:
        raise _failed(outcome, f"after {gate.verify_wait}s of verify")
    if gate.soak:
        updates = [h.updated_at for h in health.values() if h.updated_at is not None]
        until = (max(updates) if updates else clock.now()) + gate.soak
        outcome.soaked_until = until
        if until > clock.now():
            log(f"wave {gate.wave}: soaking until {int(until)} (unix time)")
            clock.sleep(until - clock.now())
            outcome.health = {m: probe.health(m) for m in gate.members}
            if len(outcome.unhealthy()) > gate.failure_tolerance:
                raise _failed(outcome, "after the soak")
    if gate.approval and gate.approved_revision != gate.revision:
        error = GateFailed(
            f"wave {gate.wave} of {gate.fleet} is healthy"
            + (" and soaked" if gate.soak else "")
            + f"; it waits for approval of revision {gate.revision}: add `{{wave: {gate.wave}, revision: "
            f"{gate.revision}}}` to {approvals_file(gate.fleet)}, then write and apply the operator's objects "
            "again (`mldiag fleet pko`)"
        )
        error.outcome = outcome  # type: ignore[attr-defined]
        raise error
    return outcome


def approvals_file(fleet: str) -> str:
    """`fleet/prod.yaml` -> `fleet/prod.approvals.yaml`: where a person approves a wave's revision."""
    path = Path(fleet)
    return str(path.with_name(f"{path.stem}.approvals.yaml"))


def _names(members: list[GateMember], health: dict[GateMember, Health]) -> str:
    return "; ".join(
        f"{m.target} ({m.stack}): {', '.join(health[m].failing[:3]) or 'unhealthy'}" for m in members
    )


def _failed(outcome: Outcome, when: str) -> GateFailed:
    sick = outcome.unhealthy()
    g = outcome.gate
    error = GateFailed(
        f"wave {g.wave} of {g.fleet} failed its gate {when}: {len(sick)} member(s) unhealthy, "
        f"{g.failure_tolerance} tolerated: {_names(sick, outcome.health)}"
    )
    error.outcome = outcome  # type: ignore[attr-defined]
    return error


# -- members' health from their state ------------------------------------------------------------------------
class StateProbe:
    """A member's verify pass from its state (`pulumi stack export --show-secrets`), as `mldiag verify --stack`."""

    def __init__(self, cwd: Path, options: dict[str, Any] | None = None) -> None:
        self.cwd = cwd
        self.options = options

    def health(self, member: GateMember) -> Health:
        from program import verify_stack

        try:
            deployment = verify_stack.export(member.stack, self.cwd)
        except verify_stack.StateUnavailable as e:
            return Health(False, [f"its state could not be read: {e}"])
        found = verify_stack.targets(verify_stack.resources(deployment))
        if not found:
            return Health(False, ["its stack holds no ml-diagnostics component"], _updated(deployment))
        results = verify_stack.run_once(found, self.options or verify_stack.default_options())
        failing = [f"{r.label} unreachable: {r.unreachable}" for r in results if r.unreachable]
        failing += [f"{r.label} {c.name}: {c.detail}" for r in results for c in r.failed]
        return Health(not failing, failing, _updated(deployment))


def _updated(deployment: dict[str, Any]) -> float | None:
    text = str((deployment.get("manifest") or {}).get("time") or "")
    text = re.sub(r"(\.\d{1,6})\d*", r"\1", text).replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(text).timestamp() if text else None
    except ValueError:
        return None


def main(raw: Mapping[str, Any]) -> None:
    """The gate stack's program: check, export what was checked, and fail the update when the gate does not pass."""
    import pulumi

    gate = parse(raw)
    log = pulumi.log.info
    try:
        outcome = check(gate, StateProbe(Path.cwd()), SystemClock(), log)
    except GateFailed as e:
        raise pulumi.RunError(str(e)) from None
    pulumi.export(OUTPUT, outcome.to_json())
    log(
        f"wave {gate.wave} of {gate.fleet} passed its gate: {len(gate.members) - len(outcome.unhealthy())} of "
        f"{len(gate.members)} member(s) healthy, {gate.failure_tolerance} tolerated"
    )
