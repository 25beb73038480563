"""A rollout's progress, kept where Pulumi keeps state: a tag on each member stack and a lease on the
environment's coordination stack. A rerun reads them back, so it resumes wherever it was stopped, from
any machine logged in to the same backend; nothing depends on a local file.

- **Member tag** `mldiag-fleet`: `v1;rev=<revision>;state=<state>;wave=<wave>;at=<unix time>[;soaked=<t>]
  [;approved=<t>][;why=<reason>]`, written when the member's update starts (`deploying`), when its gate
  passed (`verified`) or failed (`failed`), after its wave's soak (`soaked`) and approval (`approved`).
  A record of an older revision counts as nothing done.
- **Lease**: the output `lease` of the stack `<environment>.fleet`, written by an update of that stack, so
  the backend's stack lock makes taking it atomic: two rollouts of one environment never run at once. A
  lease names its holder (host, process) and expires unless renewed; a holder on this host whose process is
  gone is taken over at once, any other only after it expires or with `--take-over`.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, replace
from typing import Any

TAG = "mldiag-fleet"
VERSION = "v1"
STATES = ("deploying", "failed", "verified")
MAX_TAG_CHARS = 256
COORDINATOR_SUFFIX = "fleet"


@dataclass(frozen=True)
class Record:
    revision: str
    state: str
    wave: str
    at: int
    soaked: int | None = None
    approved: int | None = None
    why: str = ""

    def encode(self) -> str:
        parts = [VERSION, f"rev={self.revision}", f"state={self.state}", f"wave={self.wave}", f"at={self.at}"]
        if self.soaked is not None:
            parts.append(f"soaked={self.soaked}")
        if self.approved is not None:
            parts.append(f"approved={self.approved}")
        text = ";".join(parts)
        if self.why:
            room = MAX_TAG_CHARS - len(text) - len(";why=")
            why = "".join(c if c.isprintable() and c not in ";=" else " " for c in self.why)
            text += f";why={why[: max(0, room)]}"
        return text

    @staticmethod
    def decode(text: str | None) -> Record | None:
        """The record of a tag value; None for no tag or one this version cannot read (counts as not done)."""
        if not text or not text.startswith(VERSION + ";"):
            return None
        fields = dict(p.split("=", 1) for p in text.split(";")[1:] if "=" in p)
        try:
            rec = Record(
                fields["rev"],
                fields["state"],
                fields["wave"],
                int(fields["at"]),
                int(fields["soaked"]) if "soaked" in fields else None,
                int(fields["approved"]) if "approved" in fields else None,
                fields.get("why", ""),
            )
        except (KeyError, ValueError):
            return None
        return rec if rec.state in STATES else None

    def with_(self, **changes: Any) -> Record:
        return replace(self, **changes)


def current(record: Record | None, revision: str) -> Record | None:
    """The record if it is of this revision (an older one means the member has something new to deploy)."""
    return record if record is not None and record.revision == revision else None


# -- the lease ------------------------------------------------------------------------------------------------
class LeaseHeld(Exception):
    """Another rollout of this environment holds the lease."""


@dataclass(frozen=True)
class Holder:
    id: str
    host: str
    pid: int

    @staticmethod
    def this_process() -> Holder:
        return Holder(uuid.uuid4().hex[:12], socket.gethostname(), os.getpid())


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


def decide(
    existing: Any, holder: Holder, now: float, ttl: float, *, take_over: bool = False, release: bool = False
) -> dict[str, Any] | None:
    """The lease to write, given the one the stack holds; LeaseHeld when another live rollout has it.

    `release`: give up our own lease (None), leaving anyone else's as it is."""
    lease = existing if isinstance(existing, dict) and existing.get("holder") else None
    ours = lease is not None and lease.get("holder") == holder.id
    if release:
        return None if lease is None or ours else lease
    if lease is None or ours or take_over:
        return lease_value(holder, now, ttl)
    expired = float(lease.get("expires", 0)) <= now
    pid = int(lease.get("pid", 0) or 0)  # stack outputs give numbers back as floats
    dead_here = lease.get("host") == holder.host and not _alive(pid)
    if expired or dead_here:
        return lease_value(holder, now, ttl)
    raise LeaseHeld(
        f"another rollout holds this environment: holder {lease.get('holder')} on {lease.get('host')} (pid "
        f"{pid}) since {int(lease.get('since', 0))}, lease until {int(lease.get('expires', 0))} "
        "(unix time); wait for it, or if that run is gone, rerun with --take-over"
    )
