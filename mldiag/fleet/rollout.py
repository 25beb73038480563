"""The rollout: waves in order, each cluster's update and gate, the wave's tolerance, soak and approval.

The engine that runs an update is injected (`Executor`): mldiag/fleet/executor.py drives the Pulumi
Automation API; tests and the benchmark inject a simulated one, with a simulated clock. Progress goes to
the executor's stack tags after every step (mldiag/fleet/progress.py), so a rerun continues where this one
stopped.

Per wave:
1. Every cluster not yet verified at its revision runs, at most `maxParallel` at a time: its update, then
   its gate (verify's checks, polled until they pass or `verifyWait` runs out). One cluster's failure does
   not stop the others; once more clusters failed than the wave tolerates, no further cluster starts
   (those running finish) and the rollout stops: the next wave never starts.
2. Soak: the wave waits `soak` after its last cluster passed, then runs verify once more on each cluster;
   a cluster failing it counts against the tolerance.
3. Approval, when the wave's gate asks for it: `--approve WAVE`, or a yes at the prompt.
A wave that is complete at the current revisions is skipped; a wave left unfinished (a crash, a failed
gate, a lock) retries its failed and unfinished clusters.

One file (over 450 lines) because it is one state machine: waves, members, gates, soak and approval read
and write the same records in one order, and splitting it would spread that order over modules.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol

from mldiag.exit_codes import Exit
from mldiag.fleet import progress, testhook
from mldiag.fleet.model import format_duration
from mldiag.fleet.planner import Member, Plan, Wave
from mldiag.fleet.progress import Holder, LeaseHeld, Lock, Record
from program.clock import Clock, SystemClock

EXIT_OK, EXIT_GATE, EXIT_INVALID, EXIT_STACK = Exit.OK, Exit.FINDING, Exit.INVALID, Exit.UNREACHABLE
RENEW_TICK = 30.0
LEASE_TTL = 3600.0
LEASE_LOCK_WAIT = 120.0
"""How long a rollout waits for the coordination stack's lock while another rollout writes its lease."""
LEASE_LOCK_POLL = 2.0
STATE_IN_FLUX_TRIES = 5
"""How often a rollout reads the coordination stack again when another process was writing its state."""


class DeployFailed(Exception):
    """The update ran and failed (the reason: the engine's last error lines)."""


class LockConflict(Exception):
    """The stack is locked by another update (`locks`: its holders, when the backend names them)."""

    def __init__(self, message: str, locks: tuple[Lock, ...] = ()) -> None:
        super().__init__(message)
        self.locks = locks


class OtherWay(Exception):
    """The environment is deployed by its own stack (`pulumi up -s <env>`), not by member stacks."""


class StackUnavailable(Exception):
    """The stack could not be created, selected, read or run (backend, login, secrets provider)."""


class SoakNotOver(Exception):
    """The wave's soak ends later than the gate may wait (`Options.max_wait`)."""


class StateInFlux(StackUnavailable):
    """The stack's state could not be read because another process was creating or writing it (a file
    backend's checkpoint read empty: `failed to load checkpoint: EOF`); reading it again a moment later works."""


@dataclass
class Check:
    """One pass of a cluster's verify checks."""

    ok: bool
    failing: list[str] = field(default_factory=list)
    unreachable: str = ""

    def summary(self) -> str:
        if self.unreachable:
            return f"unreachable: {self.unreachable}"
        return "; ".join(self.failing[:5]) + (
            f" (+{len(self.failing) - 5} more)" if len(self.failing) > 5 else ""
        )


class Executor(Protocol):
    def deploy(self, member: Member) -> None:
        """The member stack's update; DeployFailed, LockConflict or StackUnavailable."""

    def check(self, member: Member) -> Check:
        """One pass of verify's checks of the member's target (read-only); StackUnavailable."""

    def read_record(self, member: Member) -> str | None:
        """The member stack's progress tag (None: no tag, or no stack yet); StackUnavailable."""

    def write_record(self, member: Member, text: str) -> None: ...

    def exclusive(self, decide: Callable[[Any], Any], mark: bool = False) -> Any:
        """Under the coordination stack's lock: its current lease -> `decide` -> the lease it keeps.
        LockConflict when another update holds the lock; what `decide` raises propagates. `mark`: also
        record there that member stacks deploy the environment's targets (program/fleet_member.py)."""

    def read_lease(self) -> Any:
        """The coordination stack's lease as last written, read without its lock (None: none)."""

    def cancel(self, member: Member | None) -> None:
        """Removes the lock of the member's stack (None: of the coordination stack): `pulumi cancel`."""

    def reconcile(self, member: Member, since: float | None) -> list[str]:
        """Settles what an interrupted update of the member left (its pending operations, against its
        cluster); what was done, one line each (empty: nothing was pending). `since`: when that update
        started, if known. LockConflict, StackUnavailable (recovery.RecoveryRefused: a person must decide),
        DeployFailed (its cluster could not be reached)."""

    def check_one_way(self) -> None:
        """OtherWay when the environment stack itself manages resources (it is deployed by `pulumi up`)."""

    def is_marked(self) -> bool:
        """The coordination stack records that member stacks deploy the environment (`exclusive(mark=True)`)."""

    def read_wave_mark(self, number: int) -> str | None:
        """Wave `number`'s mark on the coordination stack (None: none, or no coordination stack); StackUnavailable."""

    def write_wave_mark(self, number: int, text: str) -> None:
        """Records that wave `number` is complete (progress.wave_mark); StackUnavailable."""


@dataclass
class MemberOutcome:
    member: Member
    state: str
    """verified | failed | done earlier | not started | not run (the stack could not be run)."""
    seconds: float = 0.0
    why: str = ""


@dataclass
class WaveOutcome:
    wave: Wave
    status: str
    """passed | done earlier | failed | awaiting approval | soaking | stopped | not started."""
    _members: list[MemberOutcome] = field(default_factory=list)
    soak_seconds: float = 0.0
    seconds: float = 0.0
    every: str = ""
    """Every member's state, when they all have this one (a wave skipped as done earlier, or never started): its
    members' outcomes are made only when read (a rerun of 10,000 clusters makes none)."""

    @property
    def members(self) -> list[MemberOutcome]:
        if self.every and not self._members:
            return [MemberOutcome(m, self.every) for m in self.wave.members]
        return self._members

    @members.setter
    def members(self, value: list[MemberOutcome]) -> None:
        self._members = value

    @property
    def slowest(self) -> float:
        return max((m.seconds for m in self.members), default=0.0)


@dataclass
class Report:
    plan: Plan
    waves: list[WaveOutcome]
    exit_code: int
    message: str
    wall_seconds: float = 0.0

    @property
    def ideal_seconds(self) -> float:
        """What the waves that ran would take with no overhead: each one's slowest cluster plus its soak."""
        return sum(
            w.slowest + w.soak_seconds for w in self.waves if w.status not in ("done earlier", "not started")
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "environmentStack": self.plan.environment_stack,
            "exitCode": self.exit_code,
            "message": self.message,
            "wallSeconds": round(self.wall_seconds, 3),
            "idealSeconds": round(self.ideal_seconds, 3),
            "waves": [
                {
                    "name": w.wave.name,
                    "status": w.status,
                    "seconds": round(w.seconds, 3),
                    "soakSeconds": round(w.soak_seconds, 3),
                    "clusters": [
                        {
                            "target": m.member.ref,
                            "stack": self.plan.qualified(m.member.stack),
                            "state": m.state,
                            "seconds": round(m.seconds, 3),
                            "why": m.why,
                        }
                        for m in w.members
                    ],
                }
                for w in self.waves
            ],
        }


@dataclass
class Options:
    approve: frozenset[str] = frozenset()
    """Waves approved in advance (`--approve WAVE`)."""
    approver: Callable[[Wave], bool] | None = None
    """Asked for a wave whose gate needs approval and that is not approved in advance (a prompt)."""
    take_over: bool = False
    lease_ttl: float = LEASE_TTL
    max_wait: float | None = None
    """The longest a soak is waited out here (a CI job's time); a longer one stops the gate, saying when it ends."""
    after_wave: Callable[[], None] | None = None
    """Called as each wave ends: `mldiag fleet run` settles the process (planner.settle), so a later wave's
    collections never walk an earlier wave's outcomes again (the rollout's cost stays linear in its clusters)."""


def _quiet(line: str) -> None:
    """No log (the default): nothing is formatted, no lock taken."""


def _lease_of(holder: Holder) -> dict[str, Any]:
    return {"holder": holder.id, "host": holder.host, "pid": holder.pid}


def _not_started(wave: Wave) -> WaveOutcome:
    return WaveOutcome(wave, "not started", every="not started")


class _Abort(Exception):
    def __init__(self, cause: Exception, outcomes: dict[Member, MemberOutcome]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.outcomes = outcomes


class Lease:
    """The environment's lease, taken, renewed and given back through `Executor.exclusive`."""

    def __init__(
        self,
        executor: Executor,
        clock: Clock,
        ttl: float,
        take_over: bool,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.executor, self.clock, self.ttl, self.take_over = executor, clock, ttl, take_over
        self.holder = Holder.this_process()
        self.expires = 0.0
        self.held = False
        self.log = log
        self.replaced: dict[str, Any] | None = None
        """The lease of a rollout that is gone (expired, its process gone, --take-over) that this one took."""

    def _decide(self, existing: Any) -> Any:
        why = progress.takeover(existing, self.holder, self.clock.now(), take_over=self.take_over)
        lease = progress.decide(existing, self.holder, self.clock.now(), self.ttl, take_over=self.take_over)
        if why is not None:
            self.replaced = dict(existing, why=why)
        return lease

    def acquire(self, mark: bool = False) -> None:
        lease = self._locked(lambda: self.executor.exclusive(self._decide, mark))
        self.held, self.expires = True, float(lease["expires"])
        if self.replaced is not None:
            self.log(
                f"lease: took over the lease of {progress.describe(self.replaced)}: {self.replaced['why']}"
            )

    def _locked(self, write: Callable[[], Any]) -> Any:
        """`write` under the coordination stack's lock: a lock whose rollout is gone is cleared (saying so),
        one held by a live update is waited for (another rollout writing its lease), a while."""
        deadline = self.clock.now() + LEASE_LOCK_WAIT
        cleared: set[Lock] = set()
        forced = False
        in_flux = 0
        while True:
            try:
                return write()
            except StateInFlux:
                # two rollouts started together: the other one is creating the coordination stack
                in_flux += 1
                if in_flux >= STATE_IN_FLUX_TRIES:
                    raise
                self.clock.sleep(LEASE_LOCK_POLL)
            except LockConflict as e:
                stale = [lock for lock in e.locks if self._gone(lock)]
                if e.locks and len(stale) == len(e.locks) and not cleared.issuperset(stale):
                    self.executor.cancel(None)
                    cleared |= set(stale)
                    self.log(
                        f"lease: cleared the lock of the coordination stack held by "
                        f"{', '.join(lock.text() for lock in stale)}: {self._why_gone(stale[0])}"
                    )
                    continue
                if not e.locks and self.take_over and not forced:
                    self.executor.cancel(None)  # a backend that names no holder: --take-over says it is gone
                    forced = True
                    self.log("lease: cleared the lock of the coordination stack: --take-over")
                    continue
                if self.clock.now() >= deadline:
                    raise LockConflict(self._still_locked(e), e.locks) from None
                self.clock.sleep(LEASE_LOCK_POLL)

    def _gone(self, lock: Lock) -> bool:
        """A lock of the coordination stack whose rollout is gone: its process is gone from this host; or the
        lease was last written from its host and expired (or --take-over says that run is gone)."""
        if progress.gone_here(lock.host, lock.pid) or self.take_over:
            return True
        lease = progress.held(self.executor.read_lease())
        return (
            lease is not None
            and lease.get("host") == lock.host
            and float(lease.get("expires", 0)) <= self.clock.now()
        )

    def _why_gone(self, lock: Lock) -> str:
        if progress.gone_here(lock.host, lock.pid):
            return "its process is gone from this host"
        return "--take-over" if self.take_over else "the lease it was writing expired"

    def _still_locked(self, e: LockConflict) -> str:
        by = ", ".join(lock.text() for lock in e.locks) or "another update"
        lease = progress.held(self.executor.read_lease())
        holder = (
            f"; the lease is held by {progress.describe(lease)} until {int(lease.get('expires', 0))} (unix time)"
            if lease is not None
            else ""
        )
        return (
            f"the coordination stack stayed locked for more than {LEASE_LOCK_WAIT:.0f}s by {by}, another rollout "
            f"taking or giving back its lease{holder}; wait for it, or if that run is gone, rerun with --take-over"
        )

    def renew_if_due(self) -> None:
        if self.held and self.expires - self.clock.now() < self.ttl / 2:
            lease = self._locked(
                lambda: self.executor.exclusive(
                    lambda existing: progress.decide(existing, self.holder, self.clock.now(), self.ttl)
                )
            )
            self.expires = float(lease["expires"])

    def release(self) -> None:
        if self.held:
            self._locked(
                lambda: self.executor.exclusive(
                    lambda existing: progress.decide(
                        existing, self.holder, self.clock.now(), self.ttl, release=True
                    )
                )
            )
            self.held = False


class Rollout:
    def __init__(
        self,
        plan: Plan,
        executor: Executor,
        clock: Clock | None = None,
        options: Options | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.plan, self.executor = plan, executor
        self.clock = clock or SystemClock()
        self.options = options or Options()
        self._log = log or _quiet
        self._log_lock = threading.Lock()
        self.lease: Lease | None = None
        self.holder = Holder.this_process()
        self.records: dict[Member, Record | None] = {}
        self.recorded: dict[Member, Record | None] = {}
        """Each member's record as read, of any revision (an interrupted update's, to resume it)."""
        self.started = self.clock.now()

    def log(self, line: str) -> None:
        if self._log is _quiet:
            return
        text = f"[fleet {self.clock.now() - self.started:6.0f}s] {line}"
        with self._log_lock:  # held for the write alone: the clusters' threads would queue on it
            self._log(text)

    # -- records ----------------------------------------------------------------------------------------------
    def read(self, members: tuple[Member, ...] | list[Member]) -> dict[Member, Record | None]:
        """The members' records of their current revisions, read from their stacks (and kept)."""
        for m in members:
            self.recorded[m] = Record.decode(self.executor.read_record(m))
            self.records[m] = progress.current(self.recorded[m], m.revision)
        return {m: self.records[m] for m in members}

    def write(self, member: Member, record: Record) -> None:
        self.executor.write_record(member, record.encode())
        self.records[member] = record

    def _in(self, wave: Wave, *states: str) -> list[Member]:
        return [m for m in wave.members if (r := self.records.get(m)) is not None and r.state in states]

    def _verified(self, wave: Wave) -> dict[Member, Record]:
        return {
            m: r for m in wave.members if (r := self.records.get(m)) is not None and r.state == "verified"
        }

    # -- the whole rollout ------------------------------------------------------------------------------------
    def run(self) -> Report:
        self.started = self.clock.now()
        refused = self._one_way()
        if refused is not None:
            return refused
        lease = Lease(self.executor, self.clock, self.options.lease_ttl, self.options.take_over, self.log)
        lease.holder = self.holder
        try:
            lease.acquire(mark=True)
        except LeaseHeld as e:
            return self._report([], EXIT_STACK, str(e))
        except (LockConflict, StackUnavailable) as e:
            return self._report(
                [], EXIT_STACK, f"the lease of {self.plan.environment_stack} could not be taken: {e}"
            )
        self.lease = lease
        testhook.stop("leased")
        outcomes: list[WaveOutcome] = []
        code: int = EXIT_OK
        message = "every wave passed"
        try:
            for wave in self.plan.waves:
                outcome, code, message = self._wave(wave)
                outcomes.append(outcome)
                if self.options.after_wave is not None:
                    self.options.after_wave()
                if code != EXIT_OK:
                    break
            else:
                code, message = EXIT_OK, "every wave passed"
        except LeaseHeld as e:
            lease.held = False  # taken over: it is not ours to give back
            code, message = EXIT_STACK, f"the lease was lost: {e}"
        except (LockConflict, StackUnavailable) as e:
            code, message = EXIT_STACK, f"the lease could not be renewed: {e}"
        finally:
            outcomes += [_not_started(w) for w in self.plan.waves[len(outcomes) :]]
            try:
                lease.release()
            except (LockConflict, StackUnavailable, LeaseHeld) as e:
                self.log(f"warning: the lease could not be given back ({e}); it expires by itself")
        return self._report(outcomes, code, message)

    def _one_way(self) -> Report | None:
        """A report refusing the rollout when the environment stack itself deploys the targets."""
        try:
            self.executor.check_one_way()
        except OtherWay as e:
            return self._report([], EXIT_INVALID, str(e))
        except (LockConflict, StackUnavailable) as e:
            return self._report(
                [], EXIT_STACK, f"the environment stack {self.plan.environment_stack} could not be read: {e}"
            )
        return None

    def _report(self, waves: list[WaveOutcome], code: int, message: str) -> Report:
        return Report(self.plan, waves, code, message, self.clock.now() - self.started)

    def _wave(self, wave: Wave) -> tuple[WaveOutcome, int, str]:
        t0 = self.clock.now()
        if self._marked(wave):
            self.log(f"wave {wave.name}: complete at these revisions (its mark), skipped")
            return WaveOutcome(wave, "done earlier", every="done earlier"), EXIT_OK, ""
        try:
            records = self.read(wave.members)
        except StackUnavailable as e:
            return WaveOutcome(wave, "stopped"), EXIT_STACK, f"wave {wave.name}: {e}"
        outcome = WaveOutcome(wave, "passed", [MemberOutcome(m, "done earlier") for m in wave.members])
        if self.complete(wave, records):
            self.log(f"wave {wave.name}: complete at these revisions, skipped")
            self._mark(wave)
            outcome.status = "done earlier"
            return outcome, EXIT_OK, ""
        todo = [m for m in wave.members if (r := records[m]) is None or r.state != "verified"]
        self.log(
            f"wave {wave.name}: {len(todo)} of {len(wave.members)} cluster(s) to update ({wave.describe_gate()})"
        )
        try:
            ran = self._members(wave, todo)
        except _Abort as e:
            self._merge(outcome, e.outcomes)
            outcome.status, outcome.seconds = "stopped", self.clock.now() - t0
            return outcome, EXIT_STACK, f"wave {wave.name}: {e.cause}; nothing else was started"
        self._merge(outcome, ran)
        return self._gate_phase(wave, outcome, t0)

    @staticmethod
    def _merge(outcome: WaveOutcome, ran: dict[Member, MemberOutcome]) -> None:
        outcome.members = [ran.get(o.member, o) for o in outcome.members]

    def _gate_phase(
        self, wave: Wave, outcome: WaveOutcome, t0: float, approval_later: bool = False
    ) -> tuple[WaveOutcome, int, str]:
        """Tolerance, soak (then verify once more), approval, over the wave's records."""
        unfinished = [
            m.stack for m in wave.members if (r := self.records.get(m)) is None or r.state == "deploying"
        ]
        failed = self._in(wave, "failed")
        if unfinished or len(failed) > wave.tolerance:
            outcome.status, outcome.seconds = "failed", self.clock.now() - t0
            return outcome, EXIT_GATE, self._failed_message(wave, failed, unfinished)
        soak_from = self.clock.now()
        unsoaked = {m: r for m, r in self._verified(wave).items() if r.soaked is None}
        if unsoaked and wave.soak:
            last_pass = max(r.at for r in self._verified(wave).values())
            try:
                self._soak(wave, last_pass + wave.soak)
            except SoakNotOver as e:
                outcome.status, outcome.seconds = "soaking", self.clock.now() - t0
                return outcome, EXIT_GATE, str(e)
            for m, rec in unsoaked.items():
                check = self.executor.check(m) if wave.gate.verify else Check(True)
                if check.ok:
                    self.write(m, rec.with_(soaked=int(self.clock.now())))
                    continue
                why = f"verify failed after the soak: {check.summary()}"
                self.write(m, rec.with_(state="failed", why=why, at=int(self.clock.now())))
                self.log(f"wave {wave.name}: {m.stack} {why}")
                self._merge(outcome, {m: MemberOutcome(m, "failed", 0.0, why)})
            outcome.soak_seconds = self.clock.now() - soak_from
            failed = self._in(wave, "failed")
            if len(failed) > wave.tolerance:
                outcome.status, outcome.seconds = "failed", self.clock.now() - t0
                return outcome, EXIT_GATE, self._failed_message(wave, failed, [])
        else:
            for m, rec in unsoaked.items():
                self.write(m, rec.with_(soaked=rec.at))
        passing = self._verified(wave)
        if wave.gate.approval and any(r.approved is None for r in passing.values()):
            approved = wave.name in self.options.approve or (
                self.options.approver is not None and self.options.approver(wave)
            )
            if self.lease is not None:
                self.lease.renew_if_due()
            if not approved:
                outcome.status, outcome.seconds = "awaiting approval", self.clock.now() - t0
                if approval_later:
                    return outcome, EXIT_OK, f"wave {wave.name} passed; its approval is the next job"
                return (
                    outcome,
                    EXIT_GATE,
                    f"wave {wave.name} passed and waits for approval: rerun with --approve {wave.name}",
                )
            for m, rec in passing.items():
                self.write(m, rec.with_(approved=int(self.clock.now())))
            self.log(f"wave {wave.name}: approved")
        outcome.seconds = self.clock.now() - t0
        self.log(f"wave {wave.name}: passed ({len(failed)} failed, {wave.tolerance} tolerated)")
        self._mark(wave)
        return outcome, EXIT_OK, ""

    def _marked(self, wave: Wave) -> bool:
        """The wave's mark says it is complete at its members' revisions (a rerun then reads none of their tags);
        a mark that cannot be read is no mark."""
        try:
            text = self.executor.read_wave_mark(self.plan.waves.index(wave) + 1)
        except (LockConflict, StackUnavailable):
            return False
        return progress.wave_marked(text, wave.name, wave.revision)

    def _mark(self, wave: Wave) -> None:
        """Records on the coordination stack that the wave is complete (an earlier-wave check of a later leg
        reads it); best effort: without it, that check reads the wave's tags."""
        number = self.plan.waves.index(wave) + 1
        try:
            if not progress.wave_marked(self.executor.read_wave_mark(number), wave.name, wave.revision):
                self.executor.write_wave_mark(
                    number, progress.wave_mark(wave.name, wave.revision, int(self.clock.now()))
                )
        except (LockConflict, StackUnavailable) as e:
            self.log(
                f"wave {wave.name}: its completion could not be recorded on the coordination stack ({e})"
            )

    def _failed_message(self, wave: Wave, failed: list[Member], unfinished: list[str]) -> str:
        why = "; ".join(f"{m.stack}: {r.why}" for m in failed if (r := self.records.get(m)) is not None)
        not_run = f"; not updated: {', '.join(unfinished)}" if unfinished else ""
        return (
            f"wave {wave.name} failed its gate: {len(failed)} cluster(s) failed, {wave.tolerance} tolerated "
            f"({why or 'none'}){not_run}; the next wave was not started; fix the cause and rerun to resume this wave"
        )

    def complete(self, wave: Wave, records: dict[Member, Record | None]) -> bool:
        """Every cluster has a record of its revision, at most `tolerance` failed, the others soaked (and
        approved when the gate asks for it)."""
        if any(r is None or r.state == "deploying" for r in records.values()):
            return False
        failed = sum(1 for r in records.values() if r is not None and r.state == "failed")
        if failed > wave.tolerance:
            return False
        passing = [r for r in records.values() if r is not None and r.state == "verified"]
        if any(r.soaked is None for r in passing):
            return False
        return not (wave.gate.approval and any(r.approved is None for r in passing))

    def _soak(self, wave: Wave, until: float) -> None:
        left = until - self.clock.now()
        if self.options.max_wait is not None and left > self.options.max_wait:
            raise SoakNotOver(
                f"wave {wave.name} soaks until {int(until)} (unix time), {format_duration(left)} from now: longer "
                f"than this gate may wait (--max-wait {format_duration(self.options.max_wait)}); nothing was "
                "verified. Run the gate again once the soak is over"
            )
        if left > 0:
            self.log(f"wave {wave.name}: soaking {format_duration(left)}")
        # reached whether or not the verify outlasted the soak: a kill point never depends on the clock
        testhook.stop(f"soak:{wave.name}")
        while (left := until - self.clock.now()) > 0:
            self.clock.sleep(min(left, RENEW_TICK))
            if self.lease is not None:
                self.lease.renew_if_due()

    # -- the clusters of a wave -------------------------------------------------------------------------------
    def _members(self, wave: Wave, todo: list[Member]) -> dict[Member, MemberOutcome]:
        """The wave's clusters on maxParallel workers, each taking the next one in order until none is left,
        more failed than the wave tolerates, or a stack could not be run (then no further cluster starts; those
        running finish). This thread keeps the lease meanwhile; it is not woken per cluster. The workers share
        only thread-safe deques (no lock to queue on: a cluster's own work is what takes the time)."""
        if not todo:
            return {}
        pending = deque(todo)
        done: deque[tuple[Member, MemberOutcome]] = deque()
        failed: deque[Member] = deque()
        stop: deque[Exception] = deque()
        crashed: deque[BaseException] = deque()

        def take() -> Member | None:
            if stop or crashed or len(failed) > wave.tolerance:
                return None
            try:
                return pending.popleft()
            except IndexError:
                return None

        def work() -> None:
            while (m := take()) is not None:
                try:
                    result = self.member(wave, m)
                except (LockConflict, StackUnavailable) as e:
                    stop.append(e)
                    done.append((m, MemberOutcome(m, "not run", why=str(e))))
                    continue
                except BaseException as e:  # the process dies here (a simulated crash): start nothing more
                    crashed.append(e)
                    raise
                if result.state == "failed":
                    failed.append(m)
                done.append((m, result))

        workers = min(wave.max_parallel, len(todo))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fleet") as pool:
            running = [pool.submit(work) for _ in range(workers)]
            while running:
                _, left = wait(running, timeout=RENEW_TICK)
                running = list(left)
                if self.lease is not None:
                    try:
                        self.lease.renew_if_due()
                    except LeaseHeld:
                        pending.clear()
                        raise
        out = dict(done)
        for m in pending:
            out[m] = MemberOutcome(m, "not started")
        if crashed:
            raise crashed[0]
        if stop:
            raise _Abort(stop[0], out)
        return out

    def member(self, wave: Wave, m: Member) -> MemberOutcome:
        """One cluster: its update, then its gate; the outcome recorded on its stack. An update an earlier run
        left interrupted (its record still `deploying`, its rollout gone) is settled first: its stale lock
        cleared, its pending operations reconciled with the cluster (mldiag/fleet/recovery.py)."""
        t0 = self.clock.now()
        interrupted = self._interrupted(wave, m)
        cleared: set[Lock] = set()
        try:
            self._recover(wave, m, interrupted, cleared)
            self.write(m, Record(m.revision, "deploying", wave.name, int(t0), by=self.holder))
            self.log(f"wave {wave.name}: {m.stack} updating")
            testhook.stop(f"update:{m.stack}")
            self._update(wave, m, interrupted, cleared)
        except DeployFailed as e:
            return self._finish(wave, m, t0, f"update failed: {e}")
        why = self.gate(m, wave) if wave.gate.verify else None
        testhook.stop(f"tag:{m.stack}")
        return self._finish(wave, m, t0, why or "")

    def _interrupted(self, wave: Wave, m: Member) -> Record | None:
        """The member's `deploying` record left by a rollout that is gone (its update was interrupted), or None:
        no such record, or its rollout may still be running (then nothing of it is touched)."""
        before = self.recorded.get(m)
        if before is None or before.state != "deploying" or before.by == self.holder:
            return None
        by = f" by {progress.describe(_lease_of(before.by))}" if before.by else ""
        gone = self._writer_gone(before)
        if gone is None:
            self.log(
                f"wave {wave.name}: {m.stack}: its update of {before.at} (unix time){by} may still run: left alone "
                "(if that run is gone, rerun with --take-over)"
            )
            return None
        self.log(
            f"wave {wave.name}: {m.stack}: its update of {before.at} (unix time){by} was interrupted ({gone}); "
            "settling what it left"
        )
        return before

    def _writer_gone(self, rec: Record) -> str | None:
        """Why the rollout that wrote a `deploying` record is known to be gone; None when it may still run."""
        replaced = self.lease.replaced if self.lease is not None else None
        if rec.by is not None and progress.gone_here(rec.by.host, rec.by.pid):
            return "its rollout's process is gone from this host"
        if replaced is not None and rec.by is not None and replaced.get("holder") == rec.by.id:
            return f"its rollout's lease was taken over: {replaced['why']}"
        if replaced is not None and rec.at <= float(replaced.get("since", 0)):
            return "it predates the lease of a gone rollout this one took over"
        if self.options.take_over:
            return "--take-over"
        return None

    def _update(self, wave: Wave, m: Member, interrupted: Record | None, cleared: set[Lock]) -> None:
        while True:
            try:
                self.executor.deploy(m)
                return
            except LockConflict as e:
                if interrupted is None or not self._clear(wave, m, interrupted, e, cleared):
                    raise
                self._recover(wave, m, interrupted, cleared)

    def _recover(self, wave: Wave, m: Member, interrupted: Record | None, cleared: set[Lock]) -> None:
        """What an interrupted update left settled before the member's update (nothing when nothing is
        pending). An interrupted update of a gone rollout is taken over first (its record rewritten by this
        rollout, so a kill now is resumed by the next run too), and its stale lock cleared on the way."""
        while True:
            try:
                if interrupted is not None:
                    self.executor.write_record(m, interrupted.with_(by=self.holder).encode())
                done = self.executor.reconcile(m, float(interrupted.at) if interrupted else None)
                break
            except LockConflict as e:
                if interrupted is None or not self._clear(wave, m, interrupted, e, cleared):
                    raise
        if interrupted is not None and not done:
            done = ["nothing was left pending: the update runs again"]
        for line in done:
            self.log(f"wave {wave.name}: {m.stack}: {line}")

    def _clear(self, wave: Wave, m: Member, interrupted: Record, e: LockConflict, cleared: set[Lock]) -> bool:
        """Clears a member stack's lock held by the interrupted update (saying so); False for any other lock,
        which is never touched."""
        if not e.locks or cleared.issuperset(e.locks):
            return False
        reasons = [self._stale(interrupted, lock) for lock in e.locks]
        if any(r is None for r in reasons):
            return False
        self.executor.cancel(m)
        cleared |= set(e.locks)
        for lock, why in zip(e.locks, reasons, strict=True):
            self.log(f"wave {wave.name}: {m.stack}: cleared the lock of {lock.text()}: {why}")
        return True

    def _stale(self, interrupted: Record, lock: Lock) -> str | None:
        """Why a lock is the interrupted update's (whose rollout is gone): it is no older than that update's
        record, and it was taken on that rollout's host, or its process is gone from this host; None if not."""
        since = lock.since
        if since is not None and since < interrupted.at - progress.SKEW:
            return None
        if progress.gone_here(lock.host, lock.pid):
            return "its process is gone from this host (the interrupted update)"
        replaced = self.lease.replaced if self.lease is not None else None
        hosts = {interrupted.by.host if interrupted.by else None, replaced.get("host") if replaced else None}
        if lock.host in hosts:
            return f"taken on {lock.host} by the interrupted update, whose rollout is gone"
        return None

    def _finish(self, wave: Wave, m: Member, t0: float, why: str) -> MemberOutcome:
        now = self.clock.now()
        state = "failed" if why else "verified"
        self.write(m, Record(m.revision, state, wave.name, int(now), why=why))
        self.log(f"wave {wave.name}: {m.stack} {state}{f': {why}' if why else ''} ({now - t0:.0f}s)")
        return MemberOutcome(m, state, now - t0, why)

    def gate(self, m: Member, wave: Wave) -> str | None:
        """Polls the member's verify checks until they pass (None) or `verifyWait` is over (why not)."""
        wait_s, interval = wave.gate.verify_wait, wave.gate.verify_interval
        deadline = self.clock.now() + wait_s
        checks = 0
        testhook.stop(f"gate:{m.stack}")
        while True:
            check = self.executor.check(m)
            checks += 1
            if check.ok:
                return None
            left = deadline - self.clock.now()
            if left <= 0:
                return f"verify did not pass within {format_duration(wait_s)} ({checks} check(s)): {check.summary()}"
            self.clock.sleep(min(interval, left))

    # -- one cluster or one gate (the GitHub workflow's jobs) ---------------------------------------------------
    def earlier_incomplete(self, wave: Wave) -> list[str]:
        """The earlier waves that are not complete at the current revisions (a later wave must not start): a
        wave's mark when it has one of these revisions, else its members' tags."""
        out = []
        for w in self.plan.waves:
            if w is wave:
                break
            if self._marked(w):
                continue
            if self.complete(w, self.read(w.members)):
                self._mark(w)
            else:
                out.append(w.name)
        return out

    def run_one(self, member: Member) -> Report:
        """The update and gate of one cluster, once every earlier wave is complete."""
        self.started = self.clock.now()
        wave = next(w for w in self.plan.waves if member in w.members)
        refused = self._one_way()
        if refused is not None:
            return refused
        try:
            if not self.executor.is_marked():
                Lease(self.executor, self.clock, self.options.lease_ttl, False, self.log)._locked(
                    lambda: self.executor.exclusive(lambda existing: existing, mark=True)
                )
            if blocked := self.earlier_incomplete(wave):
                return self._report(
                    [WaveOutcome(wave, "not started")],
                    EXIT_GATE,
                    f"{member.stack} is in wave {wave.name}; earlier wave(s) not complete: {', '.join(blocked)}",
                )
            rec = self.read([member])[member]
            if rec is not None and rec.state == "verified":
                done = WaveOutcome(wave, "done earlier", [MemberOutcome(member, "done earlier")])
                return self._report(
                    [done], EXIT_OK, f"{member.stack} is verified at revision {member.revision}"
                )
            outcome = self.member(wave, member)
        except (LockConflict, StackUnavailable) as e:
            return self._report([WaveOutcome(wave, "stopped")], EXIT_STACK, f"{member.stack}: {e}")
        code = EXIT_OK if outcome.state == "verified" else EXIT_GATE
        return self._report([WaveOutcome(wave, outcome.state, [outcome])], code, outcome.why or "verified")

    def run_gate(self, wave: Wave, approve: bool = False) -> Report:
        """The wave's gate over its recorded outcomes: tolerance, soak, verify again, and with `approve`
        the approval. Without it, a wave that waits for approval passes (the approval is the next job)."""
        self.started = self.clock.now()
        if approve:
            self.options = Options(
                approve=self.options.approve | {wave.name},
                lease_ttl=self.options.lease_ttl,
                max_wait=self.options.max_wait,
            )
        try:
            records = self.read(wave.members)
            outcome = WaveOutcome(
                wave,
                "passed",
                [MemberOutcome(m, r.state if r else "not started") for m, r in records.items()],
            )
            if self.complete(wave, records):
                outcome.status = "done earlier"
                self._mark(wave)
                return self._report([outcome], EXIT_OK, f"wave {wave.name} is complete")
            outcome, code, message = self._gate_phase(wave, outcome, self.started, approval_later=not approve)
        except (LockConflict, StackUnavailable) as e:
            return self._report([WaveOutcome(wave, "stopped")], EXIT_STACK, f"wave {wave.name}: {e}")
        return self._report([outcome], code, message or f"wave {wave.name} passed")
