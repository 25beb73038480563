"""A simulated executor and clock for the rollout (tests, `dev/bench/fleet.py`): the Executor interface of
mldiag/fleet/rollout.py with scripted outcomes, tags and a lease stack held in memory, and every call
recorded. Nothing runs and nothing is reached.

    sim = SimulatedExecutor({"prod.k8s-b": Script(deploy=["fail"]), "prod.k8s-c": Script(checks=[False, True])})
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mldiag.fleet.planner import Member
from mldiag.fleet.rollout import Check, DeployFailed, LockConflict, StackUnavailable


class SimulatedCrash(BaseException):
    """The process dies here (not an Exception: nothing in the rollout catches it)."""


@dataclass
class Script:
    """What one member stack does, attempt by attempt (the last entry repeats)."""

    deploy: list[str] = field(default_factory=lambda: ["ok"])
    """ok | fail | lock | unavailable | crash, per update."""
    checks: list[bool] = field(default_factory=lambda: [True])
    """Each verify pass: passes or fails."""
    deploy_seconds: float = 0.0
    """Simulated time an update takes (the clock advances by it)."""
    refresh: str = "clean"
    """What `refresh_preview` (drift) finds: clean | drift | unavailable."""
    tags: str = "ok"
    """ok | unavailable: reading the stack's progress tag fails (`status`)."""


class SimulatedClock:
    """Time moves only when someone sleeps (or `advance`s)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)
            self.t += max(0.0, seconds)

    advance = sleep


class SimulatedExecutor:
    def __init__(
        self,
        scripts: dict[str, Script] | None = None,
        clock: SimulatedClock | None = None,
        *,
        lease_locked: bool = False,
        on_call: Callable[[str, str], None] | None = None,
    ) -> None:
        self.scripts = scripts or {}
        self.clock = clock
        self.tags: dict[str, str] = {}
        self.lease: Any = None
        self.lease_locked = lease_locked
        self.calls: list[tuple[str, str]] = []
        self.attempts: dict[tuple[str, str], int] = {}
        self.running = 0
        self.max_running = 0
        self.on_call = on_call
        self._lock = threading.Lock()
        self._lease_lock = threading.Lock()

    def _next(self, op: str, stack: str, seq: list[Any]) -> Any:
        with self._lock:
            self.calls.append((op, stack))
            n = self.attempts.get((op, stack), 0)
            self.attempts[(op, stack)] = n + 1
        if self.on_call is not None:
            self.on_call(op, stack)
        return seq[min(n, len(seq) - 1)]

    def script(self, member: Member) -> Script:
        return self.scripts.get(member.stack, Script())

    def deploy(self, member: Member) -> None:
        script = self.script(member)
        outcome = self._next("deploy", member.stack, script.deploy)
        with self._lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            if script.deploy_seconds and self.clock is not None:
                self.clock.sleep(script.deploy_seconds)
            if outcome == "fail":
                raise DeployFailed(f"simulated: the update of {member.stack} failed")
            if outcome == "lock":
                raise LockConflict(f"stack {member.stack} is locked by another update")
            if outcome == "unavailable":
                raise StackUnavailable(f"stack {member.stack} could not be selected")
            if outcome == "crash":
                raise SimulatedCrash(member.stack)
        finally:
            with self._lock:
                self.running -= 1

    def check(self, member: Member) -> Check:
        ok = self._next("check", member.stack, self.script(member).checks)
        return Check(True) if ok else Check(False, [f"{member.ref} simulated.check: not ready"])

    def read_record(self, member: Member) -> str | None:
        if self.script(member).tags == "unavailable":
            raise StackUnavailable(f"the tags of {member.stack} could not be read")
        with self._lock:
            return self.tags.get(member.stack)

    def write_record(self, member: Member, text: str) -> None:
        with self._lock:
            self.calls.append(("tag", member.stack))
            self.tags[member.stack] = text

    def exclusive(self, decide: Callable[[Any], Any]) -> Any:
        if self.lease_locked or not self._lease_lock.acquire(blocking=False):
            raise LockConflict("the coordination stack is locked by another update")
        try:
            with self._lock:
                self.calls.append(("lease", ""))
            self.lease = decide(self.lease)
            return self.lease
        finally:
            self._lease_lock.release()

    def refresh_preview(self, member: Member) -> dict[str, Any]:
        found = self._next("refresh", member.stack, [self.script(member).refresh])
        if found == "unavailable":
            raise StackUnavailable(f"stack {member.stack} does not exist (never updated)")
        if found == "clean":
            return {"changes": {}, "resources": []}
        urn = f"urn:pulumi:{member.stack}::ml-diagnostics::kubernetes:core/v1:Namespace::{member.prefix}-{member.name}-ns"
        return {
            "changes": {"update": 1},
            "resources": [
                {"urn": urn, "type": "kubernetes:core/v1:Namespace", "op": "update", "diffs": ["metadata"]}
            ],
        }

    def deployed(self) -> list[str]:
        return [s for op, s in self.calls if op == "deploy"]
