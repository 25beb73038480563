"""Errors of the Google REST client: HTTP and operation failures, named by google.rpc status codes."""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
from google.rpc import code_pb2

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def rpc_status_name(code: int) -> str:
    """google.rpc.Code number -> name (operation errors carry the number only); "" if unknown."""
    try:
        return code_pb2.Code.Name(code)
    except ValueError:
        return ""


class GoogleApiError(Exception):
    """A failed Google API call (or one that never got an answer: `http_status` is None)."""

    def __init__(
        self,
        resource: str,
        message: str,
        *,
        method: str = "",
        url: str = "",
        http_status: int | None = None,
        status: str = "",
        reason: str = "",
        retry_after: float | None = None,
    ):
        self.retry_after = retry_after  # seconds the server asked to wait (Retry-After), if any
        self.resource = resource
        self.method = method
        self.url = url
        self.http_status = http_status
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = f" ({self.method} {urlsplit(self.url).path})" if self.method else ""
        parts = []
        if self.http_status is not None:
            parts.append(f"HTTP {self.http_status}")
        if self.status:
            parts.append(self.status)
        if self.reason:
            parts.append(f"reason {self.reason}")
        head = ", ".join(parts)
        return f"{self.resource}{where}: {head + ': ' if head else ''}{self.message}"

    @property
    def answer_lost(self) -> bool:
        """No answer, or a 5xx: the call may have taken effect."""
        return self.http_status is None or self.http_status >= 500

    @property
    def retryable(self) -> bool:
        return self.http_status is None or self.http_status in RETRYABLE_STATUS


class OperationFailed(GoogleApiError):
    """The long-running operation finished with an error."""

    def __init__(self, resource: str, operation: str, code: int | str | None, message: str):
        self.operation = operation
        self.code = code
        status = rpc_status_name(code) if isinstance(code, int) else str(code or "")
        label = f"code {code}" if isinstance(code, int) else ""
        super().__init__(
            resource,
            f"operation {operation} failed ({', '.join(p for p in (label, status) if p) or 'no code'}): {message}",
            status=status,
        )


class OperationTimeout(GoogleApiError):
    """The operation did not finish within the deadline (it may still be running)."""

    def __init__(self, resource: str, operation: str, deadline: float):
        self.operation = operation
        super().__init__(
            resource,
            f"operation {operation} still running after {deadline:.0f} s; it may still complete: check it "
            f"with GET on the operation, then run the update again",
            status=rpc_status_name(code_pb2.DEADLINE_EXCEEDED),
        )


def parse_error(resp: requests.Response) -> tuple[str, str, str]:
    """(status, reason, message) from a Google error body, tolerant of non-JSON bodies."""
    try:
        body = resp.json()
    except ValueError:
        return "", "", (resp.text or resp.reason or "").strip()[:500]
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return "", "", str(body)[:500]
    reason = ""
    for d in err.get("details") or []:
        if isinstance(d, dict) and d.get("reason"):
            reason = d["reason"]
            break
    return str(err.get("status", "")), reason, str(err.get("message", ""))
