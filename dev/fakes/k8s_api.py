"""Loopback fake of the Kubernetes API server: a real HTTP(S) server in the test process.

Serves what `mldiag.verify` reads: `/version`, namespaces, nodes, secrets (Helm release records), pods and their
logs, events, configmaps, Deployments, DaemonSets, MutatingWebhookConfigurations, CustomResourceDefinitions and
IngressClasses, with list label selectors (`a=b`,
`limit`/`continue` paging,
`a!=b`, `a in (x,y)`, `a`) and the `type=` field selector on secrets. It answers only GET: anything else
is 405 and recorded, so a test can assert that nothing was changed. Optional TLS (`start(tls=...)`) and a
required bearer token (`token=`) model a real cluster endpoint.

The builders at the bottom make complete objects (the official client validates required fields).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dev.fakes.loopback import LoopbackServer
from program.in_cluster import helm

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

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        prefix = next(p for (p, pl) in KINDS if pl == plural)
        return self.objects[(prefix, plural, namespace, name)]

    def delete(self, plural: str, namespace: str, name: str) -> None:
        prefix = next(p for (p, pl) in KINDS if pl == plural)
        del self.objects[(prefix, plural, namespace, name)]

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
            return self._send(h, 401, _status(401, "Unauthorized", "Unauthorized"))
        if method != "GET":
            return self._send(
                h, 405, _status(405, "MethodNotAllowed", f"{method} is not allowed by this fake")
            )
        if parts.path in ("/version", "/version/"):
            return self._send(h, 200, VERSION)
        m = _PATH.match(parts.path)
        if not m or (m["prefix"], m["plural"]) not in KINDS:
            return self._send(h, 404, _status(404, "NotFound", f"no route for {parts.path}"))
        prefix, ns, plural, name = m["prefix"], m["ns"] or "", m["plural"], m["name"]
        if (plural, ns) in self.forbidden:
            msg = f'{plural} is forbidden: User "verify" cannot list resource "{plural}" in namespace "{ns}"'
            return self._send(h, 403, _status(403, "Forbidden", msg))
        if m["sub"] == "log":
            return self._log(h, ns, name, query)
        if name is None:
            return self._send(h, 200, self._list(prefix, plural, ns, query))
        obj = self.objects.get((prefix, plural, ns, name))
        if obj is None:
            return self._send(h, 404, _status(404, "NotFound", f'{plural} "{name}" not found'))
        return self._send(h, 200, obj)

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

    def _log(self, h: BaseHTTPRequestHandler, ns: str, pod: str, query: dict[str, list[str]]) -> None:
        container = (query.get("container") or [""])[0]
        text = self.logs.get((ns, pod, container))
        if text is None:
            return self._send(h, 404, _status(404, "NotFound", f"no log for {ns}/{pod}/{container}"))
        text = text() if callable(text) else text
        tail = (query.get("tailLines") or [""])[0]
        lines = text.splitlines(keepends=True)
        if tail:
            lines = lines[-int(tail) :]
        data = "".join(lines).encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)


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


# --- builders ------------------------------------------------------------------------------------


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def helm_release_secret(
    release: str, ns: str, revision: int, status: str, chart: str, version: str, description: str = ""
) -> dict[str, Any]:
    """A Helm v3 release record as `helm install` writes it (values included, as Helm keeps them)."""
    record = {
        "name": release,
        "namespace": ns,
        "version": revision,
        "info": {"status": status, "description": description or f"{status} by helm"},
        "chart": {"metadata": {"name": chart, "version": version, "apiVersion": "v2"}},
        "config": {"token": "s3cr3t-value-in-release-values"},
        "manifest": "---\n# Source: chart/templates/x.yaml\n",
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": helm.RELEASE_SECRET_TYPE,
        "metadata": {
            "name": f"sh.helm.release.v1.{release}.v{revision}",
            "namespace": ns,
            "labels": {"owner": "helm", "name": release, "version": str(revision), "status": status},
        },
        "data": {"release": helm.encode(record)},
    }


def _template(labels: dict[str, str], container: str, image: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {"containers": [{"name": container, "image": image}]}}


def deployment(
    name: str,
    ns: str,
    *,
    release: str | None = None,
    replicas: int = 1,
    available: int = 1,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    annotations = (
        {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns} if release else {}
    )
    ok = available >= replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations, "labels": labels or {}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": _template({"app": name}, name, f"example.com/{name}:1"),
        },
        "status": {
            "replicas": replicas,
            "availableReplicas": available,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True" if ok else "False",
                    "reason": "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
                    "message": "Deployment has minimum availability."
                    if ok
                    else "Deployment does not have minimum availability.",
                }
            ],
        },
    }


def mutating_webhook(name: str, release: str, ns: str, ca_bundle: str) -> dict[str, Any]:
    hook = {
        "name": "mldiagnostics.injection.webhook.example",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"service": {"name": "webhook", "namespace": ns, "path": "/mutate"}},
    }
    if ca_bundle:
        hook["clientConfig"]["caBundle"] = ca_bundle
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": name,
            "annotations": {
                "meta.helm.sh/release-name": release,
                "meta.helm.sh/release-namespace": ns,
                "cert-manager.io/inject-ca-from": f"{ns}/webhook-cert",
            },
        },
        "webhooks": [hook],
    }


def daemon_set(
    name: str,
    ns: str,
    image: str,
    *,
    desired: int,
    ready: int,
    node_selector: dict[str, str] | None = None,
    affinity_labels: list[str] | None = None,
) -> dict[str, Any]:
    template = _template({"name": name}, name, image)
    if node_selector:
        template["spec"]["nodeSelector"] = node_selector
    if affinity_labels:
        terms = [{"matchExpressions": [{"key": k, "operator": "Exists"}]} for k in affinity_labels]
        template["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"matchLabels": {"name": name}}, "template": template},
        "status": {
            "currentNumberScheduled": desired,
            "desiredNumberScheduled": desired,
            "numberMisscheduled": 0,
            "numberReady": ready,
            "numberAvailable": ready,
        },
    }


def pod(
    name: str,
    ns: str,
    container: str,
    image: str,
    *,
    node: str,
    ready: bool = True,
    waiting: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {"startedAt": "2026-11-30T10:00:00Z"}}
    if waiting:
        state = {"waiting": {"reason": waiting, "message": f"{waiting} for {image}"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {"name": container}},
        "spec": {"nodeName": node, "containers": [{"name": container, "image": image}]},
        "status": {
            "phase": "Running" if not waiting else "Pending",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {
                    "name": container,
                    "image": image,
                    "imageID": "",
                    "ready": ready,
                    "restartCount": 0,
                    "state": state,
                }
            ],
        },
    }


def event(
    namespace: str, name: str, involved: str, reason: str, message: str, kind: str = "DaemonSet"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": kind, "name": involved, "namespace": namespace},
        "reason": reason,
        "message": message,
        "type": "Warning",
    }


def helm_owned(release: str | None, ns: str = "azureml") -> dict[str, Any]:
    return {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns} if release else {}


def config_map(name: str, ns: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def terminating_namespace(name: str) -> dict[str, Any]:
    obj = namespace(name)
    obj["metadata"]["deletionTimestamp"] = "2026-11-30T10:00:00Z"
    obj["status"] = {"phase": "Terminating"}
    return obj


def crd(name: str, *, release: str | None = None, release_ns: str = "azureml") -> dict[str, Any]:
    plural, group = name.split(".", 1)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "annotations": helm_owned(release, release_ns)},
        "spec": {
            "group": group,
            "names": {"plural": plural, "kind": plural.capitalize().rstrip("s")},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }


def ingress_class(
    name: str, controller: str, *, release: str | None = None, release_ns: str = "azureml"
) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": name, "annotations": helm_owned(release, release_ns)},
        "spec": {"controller": controller},
    }


def pending_pod(name: str, ns: str, message: str) -> dict[str, Any]:
    """A pod the scheduler cannot place (e.g. `0/3 nodes are available: 3 Insufficient cpu.`)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {}},
        "spec": {"containers": [{"name": "main", "image": "example.com/x:1"}]},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
            ],
        },
    }
