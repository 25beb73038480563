"""A rollout's progress, kept where Pulumi keeps state: a tag on each member stack and a lease on the
environment's coordination stack. A rerun reads them back, so it resumes wherever it was stopped, from
any machine logged in to the same backend; nothing depends on a local file.

- **Member tag** `mldiag-fleet`: `v1;rev=<revision>;state=<state>;wave=<wave>;at=<unix time>[;by=<holder>;
  host=<host>;pid=<pid>][;soaked=<t>][;approved=<t>][;why=<reason>]`, written when the member's update starts
  (`deploying`, with the rollout that runs it), when its gate passed (`verified`) or failed (`failed`), after
  its wave's soak (`soaked`) and approval (`approved`). A record of an older revision counts as nothing done;
  a `deploying` one found by the next run is an interrupted update (mldiag/fleet/recovery.py).
- **Wave mark** `mldiag-fleet-wave-<n>` on the coordination stack `<environment>.fleet`: `v1;wave=<name>;
  rev=<digest of its members' revisions>;at=<unix time>`, written once wave n is complete (gate passed, soaked,
  approved). A leg of a later wave (`fleet run --cluster`) reads one mark per earlier wave instead of every
  member's tag; a mark of other revisions counts as nothing, and the tags decide.
- **Lease**: the output `lease` of the stack `<environment>.fleet`, written by an update of that stack, so
  the backend's stack lock makes taking it atomic: two rollouts of one environment never run at once. A
  lease names its holder (host, process) and expires unless renewed; a holder on this host whose process is
  gone is taken over at once, any other only after it expires or with `--take-over`.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

TAG = "mldiag-fleet"
VERSION = "v1"
STATES = ("deploying", "failed", "verified")
MAX_TAG_CHARS = 256
COORDINATOR_SUFFIX = "fleet"
SKEW = 60.0
"""Seconds of clock difference allowed between hosts (a lock's time, a record's, a cluster's object's)."""


@dataclass(frozen=True)
class Holder:
    """A rollout: its lease's id, the host and the process that run it."""

    id: str
    host: str
    pid: int

    @staticmethod
    def this_process() -> Holder:
        return Holder(uuid.uuid4().hex[:12], socket.gethostname(), os.getpid())


@dataclass(frozen=True)
class Record:
    revision: str
    state: str
    wave: str
    at: int
    soaked: int | None = None
    approved: int | None = None
    why: str = ""
    by: Holder | None = None
    """The rollout that wrote a `deploying` record (who ran the update, should it be interrupted)."""

    def encode(self) -> str:
        parts = [VERSION, f"rev={self.revision}", f"state={self.state}", f"wave={self.wave}", f"at={self.at}"]
        if self.by is not None:
            parts += [f"by={_plain(self.by.id)}", f"host={_plain(self.by.host)}", f"pid={self.by.pid}"]
        if self.soaked is not None:
            parts.append(f"soaked={self.soaked}")
        if self.approved is not None:
            parts.append(f"approved={self.approved}")
        text = ";".join(parts)
        if self.why:
            room = MAX_TAG_CHARS - len(text) - len(";why=")
            text += f";why={_plain(self.why)[: max(0, room)]}"
        return text

    @staticmethod
    def decode(text: str | None) -> Record | None:
        """The record of a tag value; None for no tag or one this version cannot read (counts as not done)."""
        if not text or not text.startswith(VERSION + ";"):
            return None
        fields = dict(p.split("=", 1) for p in text.split(";")[1:] if "=" in p)
        try:
            by = Holder(fields["by"], fields["host"], int(fields["pid"])) if "by" in fields else None
            rec = Record(
                fields["rev"],
                fields["state"],
                fields["wave"],
                int(fields["at"]),
                int(fields["soaked"]) if "soaked" in fields else None,
                int(fields["approved"]) if "approved" in fields else None,
                fields.get("why", ""),
                by,
            )
        except (KeyError, ValueError):
            return None
        return rec if rec.state in STATES else None

    def with_(self, **changes: Any) -> Record:
        return replace(self, **changes)


def _plain(text: str) -> str:
    return "".join(c if c.isprintable() and c not in ";=" else " " for c in text)


def wave_tag(number: int) -> str:
    return f"{TAG}-wave-{number}"


def wave_digest(name: str, members: Any) -> str:
    """What a wave's mark stands for: its name and each member's target and revision, in the wave's order."""
    h = hashlib.sha256(name.encode())
    for m in members:
        h.update(f"\n{m.ref}={m.revision}".encode())
    return h.hexdigest()[:16]


def wave_mark(name: str, revision: str, at: int) -> str:
    return f"{VERSION};wave={name};rev={revision};at={at}"


def wave_marked(text: str | None, name: str, revision: str) -> bool:
    """The mark says this wave is complete at this revision (its members' revisions: Wave.revision)."""
    if not text or not text.startswith(VERSION + ";"):
        return False
    fields = dict(p.split("=", 1) for p in text.split(";")[1:] if "=" in p)
    return fields.get("wave") == name and fields.get("rev") == revision


def current(record: Record | None, revision: str) -> Record | None:
    """The record if it is of this revision (an older one means the member has something new to deploy)."""
    return record if record is not None and record.revision == revision else None


# -- the lease ------------------------------------------------------------------------------------------------
class LeaseHeld(Exception):
    """Another rollout of this environment holds the lease."""


def lease_value(holder: Holder, now: float, ttl: float) -> dict[str, Any]:
    return {
        "holder": holder.id,
        "host": holder.host,
        "pid": holder.pid,
        "since": int(now),
        "expires": int(now + ttl),
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def gone_here(host: str, pid: int) -> bool:
    """The process ran on this host and is not running any more."""
    return host == socket.gethostname() and pid > 0 and not _alive(pid)


def held(existing: Any) -> dict[str, Any] | None:
    """The lease the coordination stack holds (None: nobody's)."""
    return existing if isinstance(existing, dict) and existing.get("holder") else None


def describe(lease: dict[str, Any]) -> str:
    pid = int(lease.get("pid", 0) or 0)  # stack outputs give numbers back as floats
    return f"holder {lease.get('holder')} on {lease.get('host')} (pid {pid})"


def takeover(existing: Any, holder: Holder, now: float, *, take_over: bool = False) -> str | None:
    """Why another rollout's lease may be taken: its process is gone from this host, it expired, or
    `--take-over`; None when it may not (or when there is no other rollout's lease)."""
    lease = held(existing)
    if lease is None or lease.get("holder") == holder.id:
        return None
    if gone_here(str(lease.get("host")), int(lease.get("pid", 0) or 0)):
        return "its process is gone from this host"
    if float(lease.get("expires", 0)) <= now:
        return f"it expired at {int(lease.get('expires', 0))} (unix time)"
    return "--take-over" if take_over else None


def decide(
    existing: Any, holder: Holder, now: float, ttl: float, *, take_over: bool = False, release: bool = False
) -> dict[str, Any] | None:
    """The lease to write, given the one the stack holds; LeaseHeld when another live rollout has it.

    `release`: give up our own lease (None), leaving anyone else's as it is."""
    lease = held(existing)
    ours = lease is not None and lease.get("holder") == holder.id
    if release:
        return None if lease is None or ours else lease
    if lease is None or ours or takeover(existing, holder, now, take_over=take_over):
        return lease_value(holder, now, ttl)
    raise LeaseHeld(
        f"another rollout holds this environment: {describe(lease)} since {int(lease.get('since', 0))}, lease "
        f"until {int(lease.get('expires', 0))} (unix time); wait for it, or if that run is gone, rerun with "
        "--take-over"
    )


# -- stack locks ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lock:
    """A stack's lock as the backend names its holder (a file backend's lock: user, host, pid, time)."""

    user: str
    host: str
    pid: int
    at: str = ""
    """The backend's timestamp of the lock (RFC 3339), when it says."""

    def text(self) -> str:
        return f"{self.user}@{self.host} (pid {self.pid})" + (f" at {self.at}" if self.at else "")

    @property
    def since(self) -> float | None:
        """The lock's time as a unix time (None when the backend gave none)."""
        if not self.at:
            return None
        text = re.sub(r"(\.\d{1,6})\d*", r"\1", self.at).replace("Z", "+00:00")
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError:
            return None


_LOCK_HOLDER = re.compile(r"created by (\S+?)@(\S+) \(pid (\d+)\)(?: at (\S+))?")


def locks_in(text: str) -> tuple[Lock, ...]:
    """The holders a lock conflict's error names, once each (none for a backend that names nobody)."""
    found = [Lock(u, h, int(p), at or "") for u, h, p, at in _LOCK_HOLDER.findall(text)]
    return tuple(dict.fromkeys(found))
