"""What the loopback Google APIs share: an API's error answer (`ApiError`, written as Google's JSON error with
its status name), the credential side, `FakeAuth` (the OAuth token endpoint of a service-account ADC file,
and IAM Credentials' `generateAccessToken` for impersonation), and the `SimulatedClock` a client and a fake
share.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs

from dev.fakes.loopback import send_json
from ml_diagnostics.providers.google_rest import Clock


class SimulatedClock(Clock):
    """Simulated time shared by the client (sleep advances it) and the fake (operations end on it)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += max(0.0, seconds)

    def random(self) -> float:
        return 0.5


class ApiError(Exception):
    def __init__(self, code: int, status: str, message: str, reason: str = ""):
        self.code, self.status, self.message, self.reason = code, status, message, reason


STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class FakeAuth:
    """The credential side of a loopback "Google": an OAuth token endpoint (`/token`, for a
    service-account ADC file pointing at it) and the IAM Credentials `generateAccessToken` method
    (service account impersonation). With it set on the fake, every API call must carry the token the
    configuration should produce: the impersonated one when `service_account` is set, else the ADC one."""

    SOURCE_TOKEN = "ya29.adc-source-token"
    IMPERSONATED_TOKEN = "ya29.impersonated-token"

    def __init__(self, service_account: str | None = None):
        self.service_account = service_account
        self.token_requests: list[dict[str, list[str]]] = []
        self.iam_requests: list[tuple[str, Any, dict[str, str]]] = []

    def adc_file(self, endpoint: str, path: Any) -> str:
        """Writes a service-account ADC key file (a fresh RSA key) whose token URI is this fake."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        info = {
            "type": "service_account",
            "project_id": "p",
            "private_key_id": "fake-key-1",
            "private_key": pem.decode(),
            "client_email": "adc-source@p.iam.gserviceaccount.com",
            "client_id": "1",
            "token_uri": f"{endpoint}/token",
        }
        with open(path, "w") as fh:
            json.dump(info, fh)
        return str(path)

    def serve(self, h: BaseHTTPRequestHandler, path: str, body: Any, headers: dict[str, str]) -> bool:
        if path == "/token" and h.command == "POST":
            self.token_requests.append(parse_qs(body if isinstance(body, str) else ""))
            send_json(h, 200, {"access_token": self.SOURCE_TOKEN, "expires_in": 3600, "token_type": "Bearer"})
            return True
        m = re.fullmatch(r"/v1/projects/-/serviceAccounts/([^/:]+):generateAccessToken", path)
        if m and h.command == "POST":
            self.iam_requests.append((m[1], body, headers))
            if headers.get("authorization") != f"Bearer {self.SOURCE_TOKEN}":
                send_json(
                    h, 401, {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": "bad source"}}
                )
            elif m[1] != self.service_account:
                send_json(h, 403, {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": m[1]}})
            else:
                send_json(
                    h, 200, {"accessToken": self.IMPERSONATED_TOKEN, "expireTime": "2099-01-01T00:00:00Z"}
                )
            return True
        return False

    def check_api_call(self, headers: dict[str, str]) -> None:
        want = self.IMPERSONATED_TOKEN if self.service_account else self.SOURCE_TOKEN
        if headers.get("authorization") != f"Bearer {want}":
            raise ApiError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
