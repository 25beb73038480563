"""Loopback fake of the Kubernetes API server: a real HTTP(S) server in the test process.

Serves what `mldiag.verify` reads: `/version`, namespaces, nodes, secrets (Helm release records), pods and their
logs, events, configmaps, Deployments, DaemonSets, MutatingWebhookConfigurations, CustomResourceDefinitions and
IngressClasses, with list label selectors (`a=b`,
`limit`/`continue` paging,
`a!=b`, `a in (x,y)`, `a`) and the `type=` field selector on secrets. It answers only GET: anything else
is 405 and recorded, so a test can assert that nothing was changed. Optional TLS (`start(tls=...)`) and a
required bearer token (`token=`) model a real cluster endpoint.

The objects it serves are built by dev/fakes/k8s_objects.py (named here too).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dev.fakes.k8s_objects import (  # noqa: F401 (the builders, named here for the tests)
    config_map,
    crd,
    daemon_set,
    deployment,
    event,
    helm_owned,
    helm_release_secret,
    ingress_class,
    mutating_webhook,
    namespace,
    pending_pod,
    pod,
    terminating_namespace,
)
from dev.fakes.loopback import LoopbackServer, send, send_json

# (api prefix, plural) -> namespaced?
KINDS = {
    ("/api/v1", "namespaces"): False,
    ("/api/v1", "nodes"): False,
    ("/api/v1", "secrets"): True,
    ("/api/v1", "pods"): True,
    ("/api/v1", "events"): True,
    ("/api/v1", "configmaps"): True,
    ("/apis/apps/v1", "deployments"): True,
    ("/apis/apps/v1", "daemonsets"): True,
    ("/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations"): False,
    ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions"): False,
    ("/apis/networking.k8s.io/v1", "ingressclasses"): False,
}
VERSION = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.2",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2026-06-17T18:46:16Z",
    "goVersion": "go1.24.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}
_PATH = re.compile(
    r"^(?P<prefix>/api/v1|/apis/[^/]+/v1)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>log))?$"
)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    authorization: str


@dataclass
class FakeKubeApi(LoopbackServer):
    METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

    token: str | None = None  # required bearer token; None: any (or none)
    objects: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)
    logs: dict[tuple[str, str, str], str | Callable[[], str]] = field(default_factory=dict)
    forbidden: set[tuple[str, str]] = field(default_factory=set)  # (plural, namespace or "") -> 403
    requests: list[Request] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- objects ---------------------------------------------------------------------------------

    def put(self, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        prefix = next(p for (p, pl) in KINDS if pl == plural)
        meta = obj["metadata"]
        self.objects[(prefix, plural, meta.get("namespace", ""), meta["name"])] = obj
        return obj

    def get(self, plural: str, ns: str, name: str) -> dict[str, Any]:
        prefix = next(p for (p, pl) in KINDS if pl == plural)
        return self.objects[(prefix, plural, ns, name)]

    def delete(self, plural: str, ns: str, name: str) -> None:
        prefix = next(p for (p, pl) in KINDS if pl == plural)
        del self.objects[(prefix, plural, ns, name)]

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method != "GET"]

    @property
    def host_port(self) -> str:
        return self.url.split("://", 1)[1]

    # --- request handling ------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(h.path)
        query = parse_qs(parts.query)
        auth = h.headers.get("Authorization", "")
        with self._lock:
            self.requests.append(Request(method, parts.path, query, auth))
        if self.token is not None and auth != f"Bearer {self.token}":
            return send_json(h, 401, _status(401, "Unauthorized", "Unauthorized"))
        if method != "GET":
            return send_json(
                h, 405, _status(405, "MethodNotAllowed", f"{method} is not allowed by this fake")
            )
        if parts.path in ("/version", "/version/"):
            return send_json(h, 200, VERSION)
        m = _PATH.match(parts.path)
        if not m or (m["prefix"], m["plural"]) not in KINDS:
            return send_json(h, 404, _status(404, "NotFound", f"no route for {parts.path}"))
        prefix, ns, plural, name = m["prefix"], m["ns"] or "", m["plural"], m["name"]
        if (plural, ns) in self.forbidden:
            msg = f'{plural} is forbidden: User "verify" cannot list resource "{plural}" in namespace "{ns}"'
            return send_json(h, 403, _status(403, "Forbidden", msg))
        if m["sub"] == "log":
            return self._log(h, ns, name, query)
        if name is None:
            return send_json(h, 200, self._list(prefix, plural, ns, query))
        obj = self.objects.get((prefix, plural, ns, name))
        if obj is None:
            return send_json(h, 404, _status(404, "NotFound", f'{plural} "{name}" not found'))
        return send_json(h, 200, obj)

    def _list(self, prefix: str, plural: str, ns: str, query: dict[str, list[str]]) -> dict[str, Any]:
        selector = (query.get("labelSelector") or [""])[0]
        fields = (query.get("fieldSelector") or [""])[0]
        items = [
            o
            for (p, pl, n, _), o in sorted(self.objects.items(), key=lambda kv: kv[0])
            if (p, pl) == (prefix, plural)
            and (not ns or n == ns)
            and matches(selector, o["metadata"].get("labels") or {})
            and _fields_match(fields, o)
        ]
        # limit/continue as the API server pages a list (the token here: the next item's index)
        start = int((query.get("continue") or ["0"])[0])
        limit = int((query.get("limit") or ["0"])[0])
        end = start + limit if limit else len(items)
        meta: dict[str, Any] = {"resourceVersion": "1"}
        if end < len(items):
            meta["continue"] = str(end)
        return {"kind": "List", "apiVersion": "v1", "metadata": meta, "items": items[start:end]}

    def _log(self, h: BaseHTTPRequestHandler, ns: str, name: str, query: dict[str, list[str]]) -> None:
        container = (query.get("container") or [""])[0]
        text = self.logs.get((ns, name, container))
        if text is None:
            return send_json(h, 404, _status(404, "NotFound", f"no log for {ns}/{name}/{container}"))
        text = text() if callable(text) else text
        tail = (query.get("tailLines") or [""])[0]
        lines = text.splitlines(keepends=True)
        if tail:
            lines = lines[-int(tail) :]
        send(h, 200, "".join(lines).encode(), "text/plain")


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def matches(selector: str, labels: dict[str, str]) -> bool:
    """Kubernetes label selector semantics for `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`."""
    for term in re.findall(r"[^,(]+(?:\([^)]*\))?", selector):
        term = term.strip()
        if not term:
            continue
        if m := re.fullmatch(r"(\S+)\s+(in|notin)\s+\(([^)]*)\)", term):
            values = {v.strip() for v in m[3].split(",")}
            if (labels.get(m[1]) in values) != (m[2] == "in"):
                return False
        elif "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = re.split(r"==?", term, maxsplit=1)
            if labels.get(k) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _fields_match(selector: str, obj: dict[str, Any]) -> bool:
    for term in filter(None, selector.split(",")):
        k, v = term.split("=", 1)
        got: Any = obj
        for part in k.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        if got != v:
            return False
    return True
