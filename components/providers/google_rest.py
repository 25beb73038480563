"""A small Google REST client shared by the dynamic providers (Vertex AI, GKE).

- Credentials: Application Default Credentials (`google.auth.default()` + `AuthorizedSession`), created
  lazily on first request. `anonymous=True` uses a plain `requests.Session` instead; it is only allowed
  together with a custom endpoint (tests against a loopback fake), never as an implicit fallback.
- `x-goog-user-project` header when a quota project is configured.
- Retries with exponential backoff and jitter on 429/500/502/503 and connection errors, for idempotent
  calls only (GET, DELETE, PUT by default; pass `idempotent=` to override).
- Long-running operation polling with backoff (1 s growing to 20 s) and an overall deadline; Vertex
  (`done: true`) and GKE (`status: DONE`) operation shapes.
- Errors are `GoogleApiError`s naming the resource, HTTP status, Google status/reason and message.

Nothing here is pickled: providers build a client inside each method from plain settings.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from google.rpc import code_pb2

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
RETRYABLE_STATUS = frozenset({429, 500, 502, 503})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


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
    ):
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
            status="DEADLINE_EXCEEDED",
        )


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


REQUEST_BACKOFF = Backoff(initial=1.0, multiplier=2.0, maximum=32.0, jitter=0.5)
POLL_BACKOFF = Backoff(initial=1.0, multiplier=1.5, maximum=20.0, jitter=0.1)


def _parse_error(resp: requests.Response) -> tuple[str, str, str]:
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


class GoogleRestClient:
    """Authenticated JSON calls to one Google API base URL.

    `base_url` is the API root including its version, e.g.
    `https://us-central1-aiplatform.googleapis.com/v1beta1` or `https://container.googleapis.com/v1`.
    Relative paths given to `request` and operation names given to `wait_operation` are joined to it.
    """

    def __init__(
        self,
        base_url: str,
        *,
        quota_project: str | None = None,
        anonymous: bool = False,
        custom_endpoint: bool = False,
        session: requests.Session | None = None,
        clock: Clock | None = None,
        max_attempts: int = 5,
        request_backoff: Backoff = REQUEST_BACKOFF,
        poll_backoff: Backoff = POLL_BACKOFF,
        timeout: tuple[float, float] = (10.0, 60.0),
        user_agent: str = "ml-diagnostics/1.0",
    ):
        if anonymous and not custom_endpoint:
            raise ValueError("anonymous (unauthenticated) calls are only allowed against a custom endpoint")
        self.base_url = base_url.rstrip("/")
        self.quota_project = quota_project
        self.anonymous = anonymous
        self.clock = clock or Clock()
        self.max_attempts = max(1, max_attempts)
        self.request_backoff = request_backoff
        self.poll_backoff = poll_backoff
        self.timeout = timeout
        self.user_agent = user_agent
        self._session = session

    @property
    def session(self) -> requests.Session:
        if self._session is None:
            if self.anonymous:
                self._session = requests.Session()
            else:
                import google.auth
                from google.auth.transport.requests import AuthorizedSession

                credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
                self._session = AuthorizedSession(credentials)
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            return path_or_url
        return f"{self.base_url}/{path_or_url.lstrip('/')}"

    def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        resource: str = "",
    ) -> dict[str, Any]:
        """One JSON call; returns the decoded body ({} when empty). Raises GoogleApiError.

        Retries 429/500/502/503 and connection errors only when the call is idempotent (default: by
        method). A non-idempotent call that fails this way raises at once; the caller decides (e.g. GET
        the resource to learn whether a create happened).
        """
        method = method.upper()
        full = self.url(url)
        resource = resource or urlsplit(full).path
        retry = idempotent if idempotent is not None else method in IDEMPOTENT_METHODS
        headers = {"User-Agent": self.user_agent}
        if self.quota_project:
            headers["x-goog-user-project"] = self.quota_project
        attempt = 0
        while True:
            try:
                resp = self.session.request(
                    method, full, json=json, params=params, headers=headers, timeout=self.timeout
                )
            except requests.RequestException as e:
                if retry and attempt + 1 < self.max_attempts:
                    self.clock.sleep(self.request_backoff.delay(attempt, self.clock.random()))
                    attempt += 1
                    continue
                raise GoogleApiError(
                    resource,
                    f"no response after {attempt + 1} attempt(s): {type(e).__name__}: {e}",
                    method=method,
                    url=full,
                    status="UNAVAILABLE",
                ) from None
            if resp.status_code < 400:
                if not resp.content:
                    return {}
                try:
                    return resp.json()
                except ValueError:
                    raise GoogleApiError(
                        resource,
                        "response is not JSON",
                        method=method,
                        url=full,
                        http_status=resp.status_code,
                    ) from None
            if retry and resp.status_code in RETRYABLE_STATUS and attempt + 1 < self.max_attempts:
                delay = self.request_backoff.delay(attempt, self.clock.random())
                retry_after = resp.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    delay = max(delay, min(float(retry_after), self.request_backoff.maximum))
                self.clock.sleep(delay)
                attempt += 1
                continue
            status, reason, message = _parse_error(resp)
            raise GoogleApiError(
                resource,
                message or resp.reason or "request failed",
                method=method,
                url=full,
                http_status=resp.status_code,
                status=status,
                reason=reason,
            )

    def wait_operation(
        self,
        operation: str | Mapping[str, Any],
        deadline: float,
        *,
        style: OperationStyle = VERTEX,
        resource: str = "",
        on_poll: Callable[[Mapping[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Polls an operation until done; returns the final operation. `deadline`: seconds from now.

        `operation` is an operation dict (as returned by the call that started it), its name
        (`projects/P/locations/L/operations/O`) or a full URL (GKE `selfLink`). Raises OperationFailed
        when it finished with an error, OperationTimeout when the deadline passes first.
        """
        if isinstance(operation, Mapping):
            op: dict[str, Any] = dict(operation)
            name = str(op.get("name") or "")
            # GKE v1 names are short ("operation-123"); its selfLink is the full URL.
            ref = name if "/" in name else str(op.get("selfLink") or name)
        else:
            op, ref = {}, operation
        if not ref:
            raise GoogleApiError(resource or "operation", "the operation has no name to poll")
        resource = resource or ref
        start = self.clock.monotonic()
        end = start + deadline
        attempt = 0
        while not (op and style.is_done(op)):
            now = self.clock.monotonic()
            if now >= end:
                raise OperationTimeout(resource, ref, deadline)
            delay = min(self.poll_backoff.delay(attempt, self.clock.random()), end - now)
            self.clock.sleep(delay)
            attempt += 1
            op = self.request("GET", ref, resource=resource)
            if on_poll:
                on_poll(op)
        err = style.error_of(op)
        if err is not None:
            code, message = err
            raise OperationFailed(resource, ref, code, message)
        return op
