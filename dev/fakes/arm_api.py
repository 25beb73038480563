"""Loopback fake of Azure Resource Manager: a real HTTP server answering GET on resource ids.

`put(resource_id, body)` stores a resource; GET `<id>?api-version=...` returns it (404 with an ARM error
body otherwise; a missing api-version is 400 like ARM). POST answers only the registered `actions` (ARM's
list* actions are reads); anything else is 405 and recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dev.fakes.loopback import LoopbackServer, send_json


@dataclass
class FakeArm(LoopbackServer):
    METHODS = ("GET", "POST", "PUT", "DELETE")

    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, api-version)
    # path (lowercase) -> (HTTP status, ARM error code, message) answered instead of the resource
    errors: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    # action path (lowercase, e.g. .../listClusterUserCredential) -> the body a POST answers
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def put(self, resource_id: str, body: dict[str, Any]) -> dict[str, Any]:
        stored = {"id": resource_id, "name": resource_id.rsplit("/", 1)[-1], **body}
        self.resources[resource_id.lower()] = stored
        return stored

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        version = (parse_qs(parts.query).get("api-version") or [""])[0]
        self.requests.append((method, parts.path, version))
        if method not in ("GET", "POST") or (method == "POST" and parts.path.lower() not in self.actions):
            status, body = 405, {"error": {"code": "MethodNotAllowed", "message": "read-only fake"}}
        elif not version:
            status, body = (
                400,
                {"error": {"code": "MissingApiVersionParameter", "message": "api-version missing"}},
            )
        elif (err := self.errors.get(parts.path.lower())) is not None:
            status, body = err[0], {"error": {"code": err[1], "message": err[2]}}
        elif method == "POST":
            status, body = 200, self.actions[parts.path.lower()]
        elif (res := self.resources.get(parts.path.lower())) is not None:
            status, body = 200, res
        else:
            status, body = 404, {"error": {"code": "ResourceNotFound", "message": f"{parts.path} not found"}}
        send_json(h, status, body)
