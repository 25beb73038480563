"""Timing of the Google REST client: clock, backoff with jitter under a deadline (Google's retry guidance),
Retry-After, and how to read the two long-running operation shapes (Vertex, GKE)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any


class Clock:
    """Time source; tests and the benchmark pass a simulated one."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def random(self) -> float:
        return random.random()


@dataclass(frozen=True)
class OperationStyle:
    """How to read an operation: when it is done and what its error is."""

    name: str
    is_done: Callable[[Mapping[str, Any]], bool]
    error_of: Callable[[Mapping[str, Any]], tuple[int | str | None, str] | None]


def _vertex_error(op: Mapping[str, Any]) -> tuple[int | str | None, str] | None:
    err = op.get("error")
    if not err:
        return None
    return err.get("code"), err.get("message", "")


def _gke_error(op: Mapping[str, Any]) -> tuple[int | str | None, str] | None:
    err = op.get("error")
    if err and (err.get("code") or err.get("message")):
        return err.get("code"), err.get("message", "")
    if op.get("statusMessage"):  # older GKE operations report failure only here
        return None, op["statusMessage"]
    return None


# google.longrunning.Operation (Vertex AI and most APIs): {"name", "done": true, "error": {code, message}}
VERTEX = OperationStyle("vertex", lambda op: bool(op.get("done")), _vertex_error)
# container.googleapis.com/v1 Operation: {"name", "selfLink", "status": "DONE", "error": {code, message}}
GKE = OperationStyle("gke", lambda op: op.get("status") == "DONE", _gke_error)


@dataclass(frozen=True)
class Backoff:
    initial: float = 1.0
    multiplier: float = 2.0
    maximum: float = 32.0
    jitter: float = 0.5  # the delay is drawn from [(1 - jitter) * d, d]

    def delay(self, attempt: int, rnd: float) -> float:
        d = min(self.maximum, self.initial * self.multiplier**attempt)
        return d * (1.0 - self.jitter * rnd)


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of one call: backoff between attempts, all within `deadline` seconds (Google's guidance)."""

    backoff: Backoff = Backoff()
    deadline: float = 300.0

    @classmethod
    def from_inputs(cls, settings: Mapping[str, Any] | None) -> RetryPolicy:
        """From the resources' `retry` input (googleApi.retry: deadline_minutes, initial_delay_seconds, ...)."""
        s = settings or {}
        d = cls()
        return cls(
            Backoff(
                initial=float(s.get("initial_delay_seconds") or d.backoff.initial),
                multiplier=float(s.get("multiplier") or d.backoff.multiplier),
                maximum=float(s.get("max_delay_seconds") or d.backoff.maximum),
                jitter=d.backoff.jitter,
            ),
            deadline=60.0 * float(s.get("deadline_minutes") or d.deadline / 60.0),
        )


@dataclass(frozen=True)
class PollSchedule:
    """When to poll a long-running operation: twice `first` apart, then every `share` of the time it has run
    (at most `maximum`), each delay drawn from [(1 - jitter) * d, d].

    The interval grows with the elapsed time, so completion is noticed late by about share / 2 of the
    operation's duration (at most `share`), and a long one still costs few requests. Against a fixed
    2 s + 10 s poller: no more polls at any duration from 30 s to an hour (`dev/bench/lro.py`).
    """

    first: float = 15.0
    share: float = 0.18
    maximum: float = 30.0
    jitter: float = 0.1

    def delay(self, attempt: int, elapsed: float, rnd: float) -> float:
        d = self.first if attempt < 2 else min(self.maximum, max(self.share * elapsed, 1.0))
        return d * (1.0 - self.jitter * rnd)


POLL_SCHEDULE = PollSchedule()


def retry_after_seconds(value: str, now: float | None = None) -> float | None:
    """Retry-After as delta-seconds or an HTTP date; None when absent or unreadable."""
    value = (value or "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
