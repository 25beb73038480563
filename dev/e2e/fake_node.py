"""A node of the loopback control plane with no kubelet behind it: what verify's Diagon checks need to pass
for real (pods scheduled, Running and ready, their logs read through the API server).

- the Node object, with the labels a DaemonSet selects, Ready, and its kubelet endpoint: a TLS server on
  127.0.0.1 that answers `containerLogs` requests (the API server proxies `kubectl logs` there and, without
  --kubelet-certificate-authority, does not check its certificate);
- its Lease in kube-node-lease, renewed every few seconds, so the node lifecycle controller keeps it Ready;
- a loop doing what the scheduler and a kubelet would do for the pods meant for this node (a DaemonSet's:
  node affinity on its name): bind them, report them Running and ready with their containers' images, and
  finish their deletion. `pulumi up` awaits a DaemonSet's rollout, which then completes.
"""

from __future__ import annotations

import contextlib
import datetime
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dev.e2e.control_plane import ControlPlane
from dev.fakes.tls import loopback_certificate

RENEW_SECONDS = 5.0
KUBELET_SECONDS = 1.0


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FakeNode:
    def __init__(self, cp: ControlPlane, name: str, labels: dict[str, str], log: str) -> None:
        self.cp, self.name, self.labels, self.log = cp, name, labels, log
        self.log_requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._dir = tempfile.TemporaryDirectory(prefix="fake-node-")

    # -- the kubelet's log endpoint --------------------------------------------------------------------------
    def _serve(self) -> int:
        import ssl

        node = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                node.log_requests.append(self.path)
                body = node.log.encode() if self.path.startswith("/containerLogs/") else b"not found"
                self.send_response(200 if self.path.startswith("/containerLogs/") else 404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        cert, key, _ = loopback_certificate(Path(self._dir.name), "fake-kubelet")
        context.load_cert_chain(cert, key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        self._threads.append(thread)
        return int(self._server.server_address[1])

    # -- the node ---------------------------------------------------------------------------------------------
    def start(self) -> FakeNode:
        port = self._serve()
        resp = self.cp.api(
            "POST", "/api/v1/nodes", json={"metadata": {"name": self.name, "labels": self.labels}}
        )
        assert resp.status_code == 201, resp.text
        now = _now()
        status = {
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "fake node",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            }
        }
        resp = self.cp.api(
            "PATCH",
            f"/api/v1/nodes/{self.name}/status",
            json=status,
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert resp.ok, resp.text
        lease = {
            "metadata": {"name": self.name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": self.name, "leaseDurationSeconds": 40, "renewTime": _now()},
        }
        resp = self.cp.api(
            "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", json=lease
        )
        assert resp.status_code in (201, 409), resp.text
        for loop in (self._renew, self._kubelet):
            thread = threading.Thread(target=loop, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _renew(self) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.name}"
        while not self._stop.wait(RENEW_SECONDS):
            with contextlib.suppress(Exception):  # the control plane may be going away
                self.cp.api(
                    "PATCH",
                    path,
                    json={"spec": {"renewTime": _now()}},
                    headers={"Content-Type": "application/merge-patch+json"},
                )

    def _kubelet(self) -> None:
        while not self._stop.wait(KUBELET_SECONDS):
            with contextlib.suppress(Exception):  # the control plane may be going away; the next pass retries
                self.sync()

    def _mine(self, pod: dict[str, Any]) -> bool:
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            return bool(spec["nodeName"] == self.name)
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or {}
        return any(
            f.get("key") == "metadata.name" and self.name in (f.get("values") or [])
            for term in required.get("nodeSelectorTerms") or []
            for f in term.get("matchFields") or []
        )

    def sync(self) -> None:
        """One pass over the pods meant for this node."""
        for pod in self.cp.get("/api/v1/pods")["items"]:
            if not self._mine(pod):
                continue
            meta = pod["metadata"]
            ns, name = meta["namespace"], meta["name"]
            if meta.get("deletionTimestamp"):
                self.cp.api("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}?gracePeriodSeconds=0")
                continue
            if not pod["spec"].get("nodeName"):
                binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": self.name}}
                self.cp.api("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", json=binding)
            if (pod.get("status") or {}).get("phase") != "Running":
                self._run(ns, name, pod["spec"]["containers"])

    def _run(self, ns: str, name: str, containers: list[dict[str, Any]]) -> None:
        now = _now()
        statuses = [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": f"{c['image']}@sha256:{'0' * 64}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for c in containers
        ]
        conditions = [
            {"type": t, "status": "True", "lastTransitionTime": now}
            for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ]
        status = {
            "status": {
                "phase": "Running",
                "conditions": conditions,
                "containerStatuses": statuses,
                "hostIP": "127.0.0.1",
                "podIP": "127.0.0.1",
                "startTime": now,
            }
        }
        self.cp.api(
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            json=status,
            headers={"Content-Type": "application/merge-patch+json"},
        )

    def stop(self) -> None:
        """Stops the loops and the log server and deletes the node; a second call does nothing."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=10)
        with contextlib.suppress(Exception):  # the control plane may be gone already
            self.cp.api("DELETE", f"/api/v1/nodes/{self.name}")
        self._dir.cleanup()

    def __enter__(self) -> FakeNode:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
