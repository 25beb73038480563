"""Time as the waiting parts of the product see it (a fleet's rollout and gate, verify's --wait): a protocol the
tests satisfy with a simulated clock (dev/fakes/fleet.py), so no outcome depends on how fast a machine is."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock time (unix seconds): what records and leases shared between machines are stamped with."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class MonotonicClock:
    """Elapsed time only (a wait's deadline): never moved by the system clock being set."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))
