"""A simulated executor and clock for the rollout (tests, `dev/bench/fleet.py`): the Executor interface of
mldiag/fleet/rollout.py with scripted outcomes, tags and a lease stack held in memory, and every call
recorded. Nothing runs and nothing is reached.

    sim = SimulatedExecutor({"prod.k8s-b": Script(deploy=["fail"]), "prod.k8s-c": Script(checks=[False, True])})
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from dev.fakes.k8s_api import FakeKubeApi, Request, _status
from mldiag.fleet.planner import Member
from mldiag.fleet.progress import Lock
from mldiag.fleet.rollout import Check, DeployFailed, LockConflict, OtherWay, StackUnavailable, StateInFlux


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
    locks: tuple[Lock, ...] = ()
    """The stack's lock as a killed update left it: every operation that takes the lock conflicts with it
    until `cancel` removes it."""
    pending: list[str] = field(default_factory=list)
    """What `reconcile` says it did about the pending operations a killed update left (then none are left);
    `refused:<why>` stops it (a person must decide), `unreachable:<why>` is its cluster unreachable."""


_PLAIN = Script()
"""What a member without a script of its own does (never changed: a script is replaced, not edited)."""


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
        lease_locks: tuple[Lock, ...] = (),
        own_resources: int = 0,
        lease_unavailable: bool = False,
        lease_in_flux: int = 0,
        on_call: Callable[[str, str], None] | None = None,
    ) -> None:
        self.scripts = scripts or {}
        self.clock = clock
        self.tags: dict[str, str] = {}
        self.wave_marks: dict[int, str] = {}
        self.lease: Any = None
        self.marked: Any = None
        self.lease_locked = lease_locked
        self.lease_locks = lease_locks
        """The coordination stack's lock held by these (until `cancel(None)`); `lease_locked`: by a nameless one."""
        self.lock_for: int | None = None
        """With `lease_locks`: they go away by themselves after this many more conflicts (a live rollout)."""
        self.own_resources = own_resources
        """Resources the environment stack itself manages (deployed by `pulumi up -s <env>`)."""
        self.lease_unavailable = lease_unavailable
        """The coordination stack cannot be written (a backend that takes no write)."""
        self.lease_in_flux = lease_in_flux
        """The coordination stack's state reads half-written this many more times (another rollout creating it)."""
        self.calls: list[tuple[str, str]] = []
        self.attempts: dict[tuple[str, str], int] = {}
        self.running = 0
        self.max_running = 0
        self.on_call = on_call
        self._lock = threading.Lock()
        self._lease_lock = threading.Lock()

    # One thread at most works on a stack at a time (the rollout's own rule), so a stack's attempts need no lock;
    # appending to `calls` is one atomic step in CPython. Locks here would make the clusters' threads queue on
    # them, and the benchmark (dev/bench/fleet.py) would measure the queue, not the rollout.
    def _next(self, op: str, stack: str, seq: list[Any]) -> Any:
        self.calls.append((op, stack))
        n = self.attempts.get((op, stack), 0)
        self.attempts[(op, stack)] = n + 1
        if self.on_call is not None:
            self.on_call(op, stack)
        return seq[min(n, len(seq) - 1)]

    def script(self, member: Member) -> Script:
        found = self.scripts.get(member.stack)
        return _PLAIN if found is None else found

    def _locked(self, member: Member) -> None:
        locks = self.script(member).locks
        if locks:
            with self._lock:
                self.calls.append(("locked", member.stack))
            raise LockConflict(f"stack {member.stack} is locked by another update", locks)

    def deploy(self, member: Member) -> None:
        self._locked(member)
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
        self.calls.append(("read tag", member.stack))
        return self.tags.get(member.stack)

    def write_record(self, member: Member, text: str) -> None:
        if self.script(member).tags == "unwritable":
            raise StackUnavailable(f"the progress tag of {member.stack} could not be written: simulated")
        self.calls.append(("tag", member.stack))
        self.tags[member.stack] = text

    def exclusive(self, decide: Callable[[Any], Any], mark: bool = False) -> Any:
        if self.lease_locks:
            if self.lock_for is not None:
                self.lock_for -= 1
                if self.lock_for < 0:
                    self.lease_locks, self.lock_for = (), None
            if self.lease_locks:
                with self._lock:
                    self.calls.append(("lease locked", ""))
                raise LockConflict("the coordination stack is locked by another update", self.lease_locks)
        if self.lease_in_flux > 0:
            self.lease_in_flux -= 1
            raise StateInFlux(
                "the lease stack prod.fleet could not be updated: failed to load checkpoint: EOF"
            )
        if self.lease_unavailable:
            raise StackUnavailable(
                "the lease stack prod.fleet could not be updated: simulated: operation not permitted"
            )
        if self.lease_locked or not self._lease_lock.acquire(blocking=False):
            raise LockConflict("the coordination stack is locked by another update")
        try:
            with self._lock:
                self.calls.append(("lease", ""))
            self.lease = decide(self.lease)
            if mark:
                self.marked = True
            return self.lease
        finally:
            self._lease_lock.release()

    def read_lease(self) -> Any:
        return self.lease

    def read_wave_mark(self, number: int) -> str | None:
        with self._lock:
            self.calls.append(("read mark", str(number)))
            return self.wave_marks.get(number)

    def write_wave_mark(self, number: int, text: str) -> None:
        with self._lock:
            self.calls.append(("mark", str(number)))
            self.wave_marks[number] = text

    def is_marked(self) -> bool:
        return bool(self.marked)

    def cancel(self, member: Member | None) -> None:
        with self._lock:
            self.calls.append(("cancel", member.stack if member else ""))
        if member is None:
            self.lease_locks = ()
        else:
            self.scripts[member.stack] = replace(self.script(member), locks=())

    def reconcile(self, member: Member, since: float | None) -> list[str]:
        self._locked(member)
        script = self.script(member)
        with self._lock:
            self.calls.append(("reconcile", member.stack))
        done = list(script.pending)
        for line in done:
            if line.startswith("refused:"):
                from mldiag.fleet.recovery import RecoveryRefused

                raise RecoveryRefused(line.removeprefix("refused:"))
            if line.startswith("unreachable:"):
                raise DeployFailed(line.removeprefix("unreachable:"))
        self.scripts[member.stack] = replace(script, pending=[])
        return done

    def check_one_way(self) -> None:
        if self.own_resources:
            raise OtherWay(
                f"environment prod is deployed by its own stack ({self.own_resources} resource(s))"
            )

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


class ReleaseRecordsApi(FakeKubeApi):
    """The loopback Kubernetes fake that also takes DELETE of a Secret (a Helm release record), as the
    recovery of an interrupted install removes a record of nothing (mldiag/fleet/recovery.py)."""

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        path = urlsplit(h.path).path
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/secrets/([^/]+)", path)
        if method != "DELETE" or m is None:
            return super()._handle(h, method)
        with self._lock:
            self.requests.append(Request(method, path, {}, h.headers.get("Authorization", "")))
            found = self.objects.pop(("/api/v1", "secrets", m[1], m[2]), None)
        body = (
            {"kind": "Status", "apiVersion": "v1", "status": "Success"}
            if found
            else _status(404, "NotFound", f'secrets "{m[2]}" not found')
        )
        data = json.dumps(body).encode()
        h.send_response(200 if found else 404)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
