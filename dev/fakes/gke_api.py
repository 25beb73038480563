"""Loopback fake of the GKE API (container.googleapis.com/v1): a real HTTP server in the test process.

Implements what the adopt resource uses: GET/PUT `projects/P/locations/L/clusters/C` and
GET `projects/P/locations/L/operations/O`. Every request is recorded (method, path, query, body,
headers). Faults are injected per call: `fail_next(...)` answers the next matching request(s) with an
error; `operation_polls` makes operations report RUNNING that many times before DONE (0 with `finish_at_once`:
DONE in the answer that starts them, so a client on the wall clock never sleeps); `operation_error`
makes the next operation end DONE with that error (and the cluster unchanged).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dev.fakes.loopback import LoopbackServer, send_json

_CLUSTER = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/clusters/([^/:]+)$")
_OPERATION = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/operations/([^/]+)$")

_REASONS = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}
_REASONS |= {500: "INTERNAL", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 409: "ALREADY_EXISTS"}


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]


@dataclass
class _Fault:
    method: str
    path_re: re.Pattern[str]
    status: int
    message: str
    times: int
    reason: str
    after: bool = False


@dataclass
class _Operation:
    name: str
    project: str
    location: str
    cluster: str
    polls_left: int
    error: dict[str, Any] | None
    apply: dict[str, Any]
    done: bool = False


@dataclass
class FakeGkeApi(LoopbackServer):
    METHODS = ("GET", "PUT", "POST")

    clusters: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    operation_polls: int = 1
    finish_at_once: bool = False
    operation_error: dict[str, Any] | None = None
    _faults: list[_Fault] = field(default_factory=list)
    _operations: dict[str, _Operation] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- test controls -------------------------------------------------------------------------

    def add_cluster(
        self, project: str, location: str, name: str, *, version: str, managed: bool | None = False
    ) -> dict[str, Any]:
        cluster: dict[str, Any] = {
            "name": name,
            "location": location,
            "selfLink": f"{self.url}/v1/projects/{project}/locations/{location}/clusters/{name}",
            "currentMasterVersion": version,
            "endpoint": "203.0.113.10",
            "status": "RUNNING",
        }
        if managed is not None:
            cluster["managedMachineLearningDiagnosticsConfig"] = {"enabled": managed}
        self.clusters[(project, location, name)] = cluster
        return cluster

    def managed(self, project: str, location: str, name: str) -> bool | None:
        cfg = self.clusters[(project, location, name)].get("managedMachineLearningDiagnosticsConfig")
        return None if cfg is None else cfg.get("enabled", False)

    def add_operation(self, project: str, location: str, cluster: str, *, polls: int = 0) -> _Operation:
        """An operation started elsewhere (an upgrade, another tool) that the cluster is busy with."""
        name = f"operation-{len(self._operations) + 1:04d}"
        op = _Operation(name, project, location, cluster, polls_left=polls, error=None, apply={})
        self._operations[name] = op
        return op

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        message: str = "",
        times: int = 1,
        reason: str = "",
        *,
        after: bool = False,
    ) -> None:
        """The next `times` matching requests get this error (`reason`: the google.rpc status name);
        `after=True`: the request takes effect first (its real answer is lost)."""
        fault = _Fault(
            method, re.compile(path_regex), status, message or f"injected {status}", times, reason, after
        )
        self._faults.append(fault)

    def calls(self, method: str | None = None) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests if method in (None, r.method)]

    # --- request handling ----------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with self._lock:
            self.requests.append(
                Request(method, parts.path, parse_qs(parts.query), body, dict(h.headers.items()))
            )
            status, payload = self._route(method, parts.path, body)
        send_json(h, status, payload)

    @staticmethod
    def _error(status: int, message: str, reason: str = "") -> tuple[int, dict[str, Any]]:
        reason = reason or _REASONS.get(status, "UNKNOWN")
        return status, {"error": {"code": status, "message": message, "status": reason}}

    def _route(self, method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        for fault in self._faults:
            if fault.times > 0 and fault.method == method and fault.path_re.search(path):
                fault.times -= 1
                if fault.after:
                    fault.times, saved = 0, fault.times
                    self._route(method, path, body)
                    fault.times = saved
                return self._error(fault.status, fault.message, fault.reason)
        if m := _CLUSTER.match(path):
            project, location, name = m.groups()
            cluster = self.clusters.get((project, location, name))
            if cluster is None:
                return self._error(
                    404, f"Not found: projects/{project}/locations/{location}/clusters/{name}."
                )
            if method == "GET":
                return 200, cluster
            if method == "PUT":
                return self._update(project, location, name, body)
        if (m := _OPERATION.match(path)) and method == "GET":
            project, location, op_name = m.groups()
            op = self._operations.get(op_name)
            if op is None or (op.project, op.location) != (project, location):
                return self._error(
                    404, f"Not found: projects/{project}/locations/{location}/operations/{op_name}."
                )
            return 200, self._poll(op)
        return self._error(404, f"no route for {method} {path}")

    def _update(self, project: str, location: str, name: str, body: Any) -> tuple[int, dict[str, Any]]:
        update = (body or {}).get("update")
        if not isinstance(update, dict) or not update:
            return self._error(400, "Invalid value for field 'update': must not be empty.")
        running = [o.name for o in self._operations.values() if o.cluster == name and not o.done]
        if running:  # GKE runs one operation per cluster at a time
            return self._error(
                400, f"Cluster is running incompatible operation {running[0]}.", "FAILED_PRECONDITION"
            )
        op_name = f"operation-{len(self._operations) + 1:04d}"
        self._operations[op_name] = _Operation(
            name=op_name,
            project=project,
            location=location,
            cluster=name,
            polls_left=self.operation_polls,
            error=self.operation_error,
            apply=update,
        )
        self.operation_error = None
        if self.finish_at_once and self.operation_polls == 0:
            return 200, self._poll(self._operations[op_name])
        return 200, self._op_json(self._operations[op_name])

    def _poll(self, op: _Operation) -> dict[str, Any]:
        if not op.done:
            if op.polls_left > 0:
                op.polls_left -= 1
            else:
                op.done = True
                if op.error is None:
                    cfg = op.apply.get("desiredManagedMachineLearningDiagnosticsConfig")
                    if cfg is not None:
                        cluster = self.clusters[(op.project, op.location, op.cluster)]
                        cluster["managedMachineLearningDiagnosticsConfig"] = {
                            "enabled": bool(cfg.get("enabled"))
                        }
        return self._op_json(op)

    def _op_json(self, op: _Operation) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": op.name,
            "operationType": "UPDATE_CLUSTER",
            "status": "DONE" if op.done else "RUNNING",
            "selfLink": f"{self.url}/v1/projects/{op.project}/locations/{op.location}/operations/{op.name}",
            "targetLink": f"{self.url}/v1/projects/{op.project}/locations/{op.location}/clusters/{op.cluster}",
            "location": op.location,
        }
        if op.done and op.error is not None:
            out["error"] = op.error
            out["statusMessage"] = op.error.get("message", "")
        return out
