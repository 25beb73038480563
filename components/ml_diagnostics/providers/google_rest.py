"""A small Google REST client shared by the dynamic providers (Vertex AI, GKE).

- Credentials, created lazily on first request: Application Default Credentials
  (`google.auth.default()` + `AuthorizedSession`), optionally impersonating a service account
  (`google.auth.impersonated_credentials`). Emulator mode (`emulator=True`) sends no credentials at all
  and is refused unless the endpoint is on the loopback (127.0.0.1, localhost, ::1).
- `x-goog-user-project` header when a quota project is configured.
- Retries follow Google's guidance: truncated exponential backoff with jitter under a total deadline
  (minutes), `Retry-After` honoured; 408/429/500/502/503/504 and lost connections; idempotent calls only
  (GET, DELETE, PUT by default; pass `idempotent=` to override).
- Long-running operation polling (`PollSchedule`: 15 s, 30 s, then every 18 % of the time elapsed, at most
  30 s) under an overall deadline; Vertex
  (`done: true`) and GKE (`status: DONE`) operation shapes. An operation GET answered 404 shortly after
  the call that started it counts as pending (the operation is not visible everywhere at once).
- Errors are `GoogleApiError`s naming the resource, HTTP status, Google status/reason and message.

Nothing here is pickled: providers build a client inside each method from plain settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import requests
from google.rpc import code_pb2

from ml_diagnostics.providers.google_errors import (
    RETRYABLE_STATUS,
    GoogleApiError,
    OperationFailed,
    OperationTimeout,
    parse_error,
    rpc_status_name,
)
from ml_diagnostics.providers.google_retry import (
    GKE,
    POLL_SCHEDULE,
    VERTEX,
    Backoff,
    Clock,
    OperationStyle,
    PollSchedule,
    RetryPolicy,
    retry_after_seconds,
)
from ml_diagnostics.specs.google_endpoints import LOOPBACK_HOSTS, is_loopback_url

# Re-exported: the providers, tools and tests import these from here.
__all__ = [
    "CLOUD_PLATFORM_SCOPE",
    "GKE",
    "VERTEX",
    "Backoff",
    "Clock",
    "GoogleApiError",
    "GoogleRestClient",
    "OperationFailed",
    "OperationStyle",
    "OperationTimeout",
    "PollSchedule",
    "RetryPolicy",
    "retry_after_seconds",
    "rpc_status_name",
]

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


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
        impersonate_service_account: str | None = None,
        iam_endpoint: str | None = None,
        emulator: bool = False,
        session: requests.Session | None = None,
        clock: Clock | None = None,
        retry: RetryPolicy | None = None,
        poll_schedule: PollSchedule = POLL_SCHEDULE,
        timeout: tuple[float, float] = (10.0, 60.0),
        user_agent: str = "ml-diagnostics/1.0",
    ):
        if emulator and not is_loopback_url(base_url):
            raise ValueError(
                f"emulator mode sends no credentials, so only loopback endpoints ({', '.join(LOOPBACK_HOSTS)}) "
                f"are allowed; {urlsplit(base_url).netloc or base_url!r} is not one"
            )
        if emulator and impersonate_service_account:
            raise ValueError("emulator mode uses no credentials: impersonateServiceAccount cannot be set")
        self.base_url = base_url.rstrip("/")
        self.quota_project = quota_project
        self.impersonate_service_account = impersonate_service_account
        self.iam_endpoint = iam_endpoint
        self.emulator = emulator
        self.clock = clock or Clock()
        self.retry = retry or RetryPolicy()
        self.poll_schedule = poll_schedule
        self.timeout = timeout
        self.user_agent = user_agent
        self._session = session

    @property
    def session(self) -> requests.Session:
        if self._session is None:
            if self.emulator:
                self._session = requests.Session()
            else:
                self._session = self._authorized_session()
        return self._session

    def _authorized_session(self) -> requests.Session:
        import google.auth
        from google.auth.transport.requests import AuthorizedSession

        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
        sa = self.impersonate_service_account
        if sa:
            from google.auth import impersonated_credentials

            override = None
            if self.iam_endpoint:
                override = (
                    f"{self.iam_endpoint.rstrip('/')}/v1/projects/-/serviceAccounts/{sa}:generateAccessToken"
                )
            credentials = impersonated_credentials.Credentials(
                source_credentials=credentials,
                target_principal=sa,
                target_scopes=[CLOUD_PLATFORM_SCOPE],
                iam_endpoint_override=override,
            )
        return AuthorizedSession(credentials)

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

        Retries RETRYABLE_STATUS and connection errors only when the call is idempotent (default: by
        method), until the retry deadline. A non-idempotent call that fails this way raises at once; the
        caller decides (e.g. look for the resource or a running operation before calling again).
        """
        method = method.upper()
        full = self.url(url)
        resource = resource or urlsplit(full).path
        retry = idempotent if idempotent is not None else method in IDEMPOTENT_METHODS
        headers = {"User-Agent": self.user_agent}
        if self.quota_project:
            headers["x-goog-user-project"] = self.quota_project
        end = self.retry_end()
        attempt = 0
        while True:
            try:
                resp = self.session.request(
                    method, full, json=json, params=params, headers=headers, timeout=self.timeout
                )
            except requests.RequestException as e:
                if retry and self.pause(attempt, None, end):
                    attempt += 1
                    continue
                raise GoogleApiError(
                    resource,
                    f"no response after {attempt + 1} attempt(s): {type(e).__name__}: {e}",
                    method=method,
                    url=full,
                    status=rpc_status_name(code_pb2.UNAVAILABLE),
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
            wait = retry_after_seconds(resp.headers.get("Retry-After", ""))
            if retry and resp.status_code in RETRYABLE_STATUS and self.pause(attempt, wait, end):
                attempt += 1
                continue
            status, reason, message = parse_error(resp)
            raise GoogleApiError(
                resource,
                message or resp.reason or "request failed",
                method=method,
                url=full,
                http_status=resp.status_code,
                status=status,
                reason=reason,
                retry_after=wait,
            )

    def get_or_none(self, path: str, *, resource: str = "") -> dict[str, Any] | None:
        """GET; None when the API answers 404 (the resource does not exist)."""
        try:
            return self.request("GET", path, resource=resource)
        except GoogleApiError as e:
            if e.http_status == 404:
                return None
            raise

    def retry_end(self) -> float:
        """When retrying a call that starts now must stop (the retry deadline)."""
        return self.clock.monotonic() + self.retry.deadline

    def pause(self, attempt: int, retry_after: float | None, end: float) -> bool:
        """Sleeps before the next attempt; False when that would pass the retry deadline."""
        delay = self.retry.backoff.delay(attempt, self.clock.random())
        if retry_after is not None:
            delay = max(delay, retry_after)
        if self.clock.monotonic() + delay > end:
            return False
        self.clock.sleep(delay)
        return True

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
        when it finished with an error, OperationTimeout when the deadline passes first. A 404 within the
        retry deadline of the start counts as "not visible yet" and is polled again.
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
        not_found_until = start + self.retry.deadline
        attempt = 0
        while not (op and style.is_done(op)):
            now = self.clock.monotonic()
            if now >= end:
                raise OperationTimeout(resource, ref, deadline)
            delay = min(self.poll_schedule.delay(attempt, now - start, self.clock.random()), end - now)
            self.clock.sleep(delay)
            attempt += 1
            try:
                polled = self.request("GET", ref, resource=resource)
            except GoogleApiError as e:
                if e.http_status == 404 and self.clock.monotonic() < not_found_until:
                    continue  # brief 404 right after the call that started it: still pending
                raise
            op = polled
            if on_poll:
                on_poll(op)
        err = style.error_of(op)
        if err is not None:
            code, message = err
            raise OperationFailed(resource, ref, code, message)
        return op


def client(
    base_url: str,
    settings: Mapping[str, Any] | None,
    *,
    clock: Clock | None = None,
    session: requests.Session | None = None,
    retry: RetryPolicy | None = None,
    timeout: tuple[float, float] = (10.0, 60.0),
) -> GoogleRestClient:
    """The one way to build a client from the REST settings (`ml_diagnostics.google_api.rest_inputs`, snake_case:
    quota_project, impersonate_service_account, iam_endpoint, emulator, retry). `retry` overrides the settings'."""
    s = settings or {}
    return GoogleRestClient(
        base_url,
        quota_project=s.get("quota_project") or None,
        impersonate_service_account=s.get("impersonate_service_account") or None,
        iam_endpoint=s.get("iam_endpoint") or None,
        emulator=bool(s.get("emulator")),
        session=session,
        clock=clock,
        retry=retry or RetryPolicy.from_inputs(s.get("retry")),
        timeout=timeout,
    )
