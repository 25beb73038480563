"""A loopback fake of the Vertex AI Model Development Cluster REST API (v1beta1).

A real HTTP server on 127.0.0.1 in the test process. It implements create (with
`modelDevelopmentClusterId`), get, patch (honouring `updateMask` with full replacement of repeated fields
and maps, `updateMode` node image rules, and the whole-payload compare when the mask is missing), delete
and operations, with a configurable operation duration on a shared (simulated) clock, and injected
faults: HTTP errors (429, 503, 409, 404, ...), dropped connections and failing operations.

A body is checked as the real service checks it (the API's own lowerCamelCase field names, an unknown one
400 INVALID_ARGUMENT; the rules and defaults of a cluster): dev/fakes/vertex_schema.py. Set `auth` to demand
the credentials a configuration should produce (dev/fakes/google_api.py).
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dev.fakes.google_api import STATUS_NAMES, ApiError, FakeAuth, SimulatedClock
from dev.fakes.loopback import send_json
from dev.fakes.vertex_schema import (
    SCHEMA,
    UPDATABLE,
    check_shape,
    fill_defaults,
    get_path,
    set_path,
    snake,
    validate_cluster,
)

DEFAULT_IMAGE = "projects/vertex-ai-slurm/global/images/slurm-2026-01"
CLUSTER_TYPE = "type.googleapis.com/google.cloud.aiplatform.v1beta1.ModelDevelopmentCluster"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]


@dataclass
class Fault:
    method: str
    path_contains: str
    status: int | None  # None: drop the connection
    times: int
    body_status: str = ""
    message: str = ""
    after: bool = False  # the request takes effect first; then the fault (the answer is lost)
    retry_after: str = ""  # Retry-After header of the error answer


@dataclass
class Operation:
    name: str
    kind: str  # create | update | delete
    cluster: str
    done_at: float
    error: dict[str, Any] | None = None
    done: bool = False
    response: dict[str, Any] = field(default_factory=dict)
    polls: int = 0
    noticed_at: float | None = None
    hidden_polls: int = 0  # GETs answered 404 before the operation is visible


class FakeVertexApi:
    """Start with `with FakeVertexApi() as api:`; `api.endpoint` is the base URL (no version)."""

    def __init__(self, clock: SimulatedClock | None = None, operation_seconds: float = 30.0):
        self.clock = clock or SimulatedClock()
        self.operation_seconds = operation_seconds
        self.requests: list[Recorded] = []
        self.clusters: dict[str, dict[str, Any]] = {}
        self.running_images: dict[tuple[str, str], str] = {}
        self.default_images: dict[str, str] = {}
        self.operations: dict[str, Operation] = {}
        self.faults: list[Fault] = []
        self.next_operation_error: dict[str, Any] | None = None
        # mask paths (API spelling, e.g. "displayName") answered 400 like a field the service will not update
        self.refuse_mask: set[str] = set()
        # answer the `updateMode` query parameter 400, as an API that does not know it would
        self.reject_update_mode = False
        # operations of 0 s come back done in the answer that starts them (Google's APIs may answer so): a
        # client on the wall clock then never sleeps for its first poll
        self.finish_at_once = False
        # GETs of a new operation answered 404 before it becomes visible (eventual consistency).
        self.operation_not_found_polls = 0
        # Credentials the API demands (None: any or none), and the token/IAM endpoints that issue them.
        self.auth: FakeAuth | None = None
        self._lock = threading.RLock()
        self._op_seq = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------------
    def __enter__(self) -> FakeVertexApi:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out in two writes: without this, Nagle + delayed ACK add ~40 ms each
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                fake._serve(self)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread:
            self._thread.join(timeout=5)

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- test controls ------------------------------------------------------------------------------------
    def inject(
        self,
        method: str,
        path_contains: str,
        status: int | None,
        *,
        times: int = 1,
        body_status: str = "",
        message: str = "",
        after: bool = False,
        retry_after: str = "",
    ) -> None:
        """The next `times` matching requests fail with `status` (None: the connection is dropped);
        `after=True`: the request takes effect first, then fails (its answer is lost)."""
        self.faults.append(
            Fault(method, path_contains, status, times, body_status, message, after, retry_after)
        )

    def fail_next_operation(self, code: int = 9, message: str = "injected failure") -> None:
        self.next_operation_error = {"code": code, "message": message}

    def api_requests(self) -> list[Recorded]:
        """Requests to the API other than operation polls (no token or IAM calls)."""
        return [
            r
            for r in self.requests
            if "/operations/" not in r.path and r.path != "/token" and "/serviceAccounts/" not in r.path
        ]

    def put_cluster(self, name: str, cluster: dict[str, Any]) -> None:
        with self._lock:
            c = copy.deepcopy(cluster)
            c["name"] = name
            c.setdefault("clusterStatus", {"state": "RUNNING"})
            self.clusters[name] = c

    # -- HTTP ---------------------------------------------------------------------------------------------
    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        url = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {k.lower(): v for k, v in h.headers.items()}
        with self._lock:
            self.requests.append(Recorded(h.command, url.path, query, body, headers))
            if self.auth is not None and self.auth.serve(h, url.path, body, headers):
                return
            fault = self._take_fault(h.command, url.path)
        if fault is not None and fault.after:
            with self._lock, contextlib.suppress(ApiError):
                self._advance()
                self._route(h.command, url.path, query, body)
        if fault is not None and fault.status is None:
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)
            return
        extra_headers: dict[str, str] = {}
        try:
            if self.auth is not None:
                self.auth.check_api_call(headers)
            if fault is not None:
                if fault.retry_after:
                    extra_headers["Retry-After"] = fault.retry_after
                raise ApiError(
                    fault.status,
                    fault.body_status or STATUS_NAMES.get(fault.status, "UNKNOWN"),
                    fault.message or "injected fault",
                )
            with self._lock:
                self._advance()
                code, out = self._route(h.command, url.path, query, body)
        except ApiError as e:
            err: dict[str, Any] = {"code": e.code, "message": e.message, "status": e.status}
            if e.reason:
                err["details"] = [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": e.reason,
                        "domain": "aiplatform.googleapis.com",
                    }
                ]
            code, out = e.code, {"error": err}
        send_json(h, code, out, extra_headers)

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for f in self.faults:
            if f.times > 0 and f.method == method and f.path_contains in path:
                f.times -= 1
                return f
        return None

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, dict[str, Any]]:
        m = re.fullmatch(r"/v1(?:beta1)?/(projects/[^/]+/locations/[^/]+)/modelDevelopmentClusters", path)
        if m and method == "POST":
            return 200, self._create(m[1], query, body)
        m = re.fullmatch(
            r"/v1(?:beta1)?/(projects/[^/]+/locations/[^/]+/modelDevelopmentClusters/[^/]+)", path
        )
        if m:
            name = m[1]
            if method == "GET":
                return 200, self._cluster(name)
            if method == "PATCH":
                return 200, self._patch(name, query, body)
            if method == "DELETE":
                return 200, self._delete(name)
        m = re.fullmatch(r"/v1(?:beta1)?/(projects/[^/]+/locations/[^/]+/operations/[^/]+)", path)
        if m and method == "GET":
            return 200, self._get_operation(m[1])
        m = re.fullmatch(
            r"/v1(?:beta1)?/(projects/[^/]+/locations/[^/]+/modelDevelopmentClusters/[^/]+)/operations", path
        )
        if m and method == "GET":  # the cluster's operations (google.longrunning ListOperations)
            ops = [self._operation_json(o) for o in self.operations.values() if o.cluster == m[1]]
            return 200, {"operations": ops} if ops else {}
        raise ApiError(404, "NOT_FOUND", f"no route for {method} {path}")

    # -- behaviour ----------------------------------------------------------------------------------------
    def _cluster(self, name: str) -> dict[str, Any]:
        if name not in self.clusters:
            raise ApiError(
                404, "NOT_FOUND", f'ModelDevelopmentCluster "{name}" not found.', "RESOURCE_NOT_FOUND"
            )
        return copy.deepcopy(self.clusters[name])

    def _default_image(self, machine_type: str) -> str:
        return self.default_images.get(machine_type, DEFAULT_IMAGE)

    def _start_operation(self, parent: str, kind: str, cluster: str) -> dict[str, Any]:
        self._op_seq += 1
        name = f"{parent}/operations/{1000 + self._op_seq}"
        op = Operation(
            name, kind, cluster, self.clock.monotonic() + self.operation_seconds, self.next_operation_error
        )
        self.next_operation_error = None
        op.hidden_polls = self.operation_not_found_polls
        self.operations[name] = op
        if self.finish_at_once and self.operation_seconds <= 0:
            self._advance()
            return self._operation_json(op)
        return {
            "name": name,
            "metadata": {
                "@type": "type.googleapis.com/google.cloud.aiplatform.v1beta1.GenericOperationMetadata"
            },
        }

    def _advance(self) -> None:
        now = self.clock.monotonic()
        for op in self.operations.values():
            if op.done or now < op.done_at:
                continue
            op.done = True
            c = self.clusters.get(op.cluster)
            if op.error:
                if c is not None:
                    c["clusterStatus"] = {
                        "state": "ERROR",
                        "error": dict(op.error),
                        "detail": op.error["message"],
                    }
                continue
            if op.kind == "delete":
                self.clusters.pop(op.cluster, None)
                op.response = {"@type": "type.googleapis.com/google.protobuf.Empty"}
            elif c is not None:
                c["clusterStatus"] = {"state": "RUNNING"}
                c["updateTime"] = f"t+{now:.0f}s"
                op.response = {"@type": CLUSTER_TYPE, **copy.deepcopy(c)}

    def _get_operation(self, name: str) -> dict[str, Any]:
        op = self.operations.get(name)
        if op is None or op.hidden_polls > 0:
            if op is not None:
                op.hidden_polls -= 1
            raise ApiError(404, "NOT_FOUND", f"operation {name} not found")
        op.polls += 1
        return self._operation_json(op)

    def _operation_json(self, op: Operation) -> dict[str, Any]:
        name = op.name
        out: dict[str, Any] = {"name": name}
        if op.done:
            if op.noticed_at is None:
                op.noticed_at = self.clock.monotonic()
            out["done"] = True
            if op.error:
                out["error"] = dict(op.error)
            else:
                out["response"] = copy.deepcopy(op.response)
        return out

    def _create(self, parent: str, query: dict[str, str], body: Any) -> dict[str, Any]:
        cid = query.get("modelDevelopmentClusterId") or query.get("model_development_cluster_id")
        if not cid:
            raise ApiError(400, "INVALID_ARGUMENT", "modelDevelopmentClusterId is required")
        if not isinstance(body, dict):
            raise ApiError(400, "INVALID_ARGUMENT", "body must be a ModelDevelopmentCluster")
        check_shape(body, SCHEMA, "")
        name = f"{parent}/modelDevelopmentClusters/{cid}"
        if name in self.clusters:
            raise ApiError(
                409,
                "ALREADY_EXISTS",
                f'ModelDevelopmentCluster "{name}" already exists.',
                "RESOURCE_ALREADY_EXISTS",
            )
        c = copy.deepcopy(body)
        validate_cluster(c)
        fill_defaults(name, c)
        c["name"] = name
        c["createTime"] = f"t+{self.clock.monotonic():.0f}s"
        c["clusterStatus"] = {"state": "PROVISIONING"}
        for p in c.get("nodePools") or []:
            self.running_images[(name, p["id"])] = p.get("nodeImage") or self._default_image(
                p["machineSpec"]["machineType"]
            )
        self.clusters[name] = c
        return self._start_operation(parent, "create", name)

    def _patch(self, name: str, query: dict[str, str], body: Any) -> dict[str, Any]:
        old = self._cluster(name)
        if not isinstance(body, dict):
            raise ApiError(400, "INVALID_ARGUMENT", "body must be a ModelDevelopmentCluster")
        check_shape(body, SCHEMA, "")
        if self.reject_update_mode and "updateMode" in query:
            raise ApiError(
                400,
                "INVALID_ARGUMENT",
                'Invalid JSON payload received. Unknown name "updateMode": Cannot bind query parameter.',
            )
        mode = query.get("updateMode", "UPDATE_MODE_UNSPECIFIED")
        if mode not in ("UPDATE_MODE_UNSPECIFIED", "USER_ONLY", "USER_AND_SERVICE"):
            raise ApiError(400, "INVALID_ARGUMENT", f"invalid updateMode {mode!r}")
        mask = [p for p in query.get("updateMask", "").split(",") if p]
        if not mask:  # no mask: the whole payload is compared, what it omits is deleted
            paths = list(UPDATABLE)
        else:
            paths = []
            for p in mask:
                sp = snake(p)
                if p in self.refuse_mask:
                    raise ApiError(400, "INVALID_ARGUMENT", f"update_mask path {p!r} cannot be updated")
                if sp not in UPDATABLE:
                    raise ApiError(400, "INVALID_ARGUMENT", f"update_mask path {p!r} is not updatable")
                paths.append(sp)
        new = copy.deepcopy(old)
        for p in paths:
            set_path(new, UPDATABLE[p], get_path(body, UPDATABLE[p]))
        validate_cluster(new, old)
        if "node_pools" in paths:
            old_pools = {p["id"]: p for p in old.get("nodePools") or []}
            for p in new.get("nodePools") or []:
                key = (name, p["id"])
                if p.get("nodeImage"):
                    image = p["nodeImage"]
                elif mode == "USER_ONLY" and key in self.running_images and p["id"] in old_pools:
                    image = self.running_images[key]
                else:
                    image = self._default_image(p["machineSpec"]["machineType"])
                self.running_images[key] = image
                p["nodeImage"] = image
            fill_defaults(name, new)
        new["clusterStatus"] = {"state": "UPDATING"}
        self.clusters[name] = new
        return self._start_operation(name.split("/modelDevelopmentClusters/")[0], "update", name)

    def _delete(self, name: str) -> dict[str, Any]:
        c = self._cluster(name)
        self.clusters[name]["clusterStatus"] = {**(c.get("clusterStatus") or {}), "state": "STOPPING"}
        return self._start_operation(name.split("/modelDevelopmentClusters/")[0], "delete", name)
