"""A loopback Kubernetes cluster: etcd, kube-apiserver, kube-controller-manager and kube-scheduler on
127.0.0.1, and kwok as the kubelet of every node.

No container runs anywhere: kwok (Kubernetes SIG Scheduling's simulator) plays the kubelet of each Node
object (dev/e2e/node_pools.py makes them), driven by the Stages of dev/e2e/kwok/stages.yaml: it reports the
node Ready and renews its Lease, and a pod that the real scheduler bound to it Running and ready (or
crash-looping, when asked). Placement, taints, capacity, DaemonSet rollout and node health are decided by
the real scheduler and controllers. Pod logs come through the API server from kwok's kubelet endpoint
(`kubectl logs` does the same), from the file `ControlPlane.pod_log` names (a ClusterLogs of kwok).

Keys and certificates are generated per run (openssl): a CA, the API server's and kwok's serving
certificates for 127.0.0.1, and the service-account signing key. The admin credential is a static bearer token
(`--token-auth-file`, group system:masters). Every port is picked free on 127.0.0.1 and nothing binds
any other address. `ControlPlane` is a context manager: whatever it started is stopped on exit, also
when start-up fails half way.

The controller manager is what makes workloads behave: with it and zero nodes a DaemonSet reports its
observedGeneration (so awaits finish) and namespace/foreground deletions complete.

    python -m dev.e2e.control_plane BIN_DIR    # start, print the kubeconfig path, wait for Ctrl-C
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import requests
import yaml

READY_TIMEOUT_SECONDS = 120.0
STOP_GRACE_SECONDS = 2.0
STAGES = Path(__file__).resolve().parent / "kwok" / "stages.yaml"
REPO = Path(__file__).resolve().parents[2]


STARTS = 3
"""Starts of a plane before its error stands: a port picked free may be taken before its process binds it (by
another worker's plane, or an outgoing connection's ephemeral port), and that start is retried on new ports."""


class PortTaken(RuntimeError):
    """A process of the plane exited at start because its port was taken after it was picked."""


def free_ports(n: int) -> list[int]:
    """`n` distinct ports free on 127.0.0.1 now (each socket held until all are picked)."""
    with contextlib.ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def generate_pki(d: Path) -> None:
    """ca.{crt,key}, apiserver.{crt,key} (SAN IP 127.0.0.1, DNS localhost), kubelet.{crt,key} (kwok's serving
    certificate, SAN IP 127.0.0.1: the API server checks it with --kubelet-certificate-authority), sa.{key,pub}."""
    d.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/CN=ml-diagnostics-e2e-ca", cwd=d)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "apiserver.key", "-out", "apiserver.csr",
             "-subj", "/CN=kube-apiserver", cwd=d)  # fmt: skip
    (d / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n"
    )
    _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "apiserver.crt", "-days", "2", "-extfile", "san.ext", cwd=d)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "kubelet.key", "-out", "kubelet.csr",
             "-subj", "/CN=kwok-kubelet", cwd=d)  # fmt: skip
    (d / "kubelet.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "kubelet.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "kubelet.crt", "-days", "2", "-extfile", "kubelet.ext", cwd=d)  # fmt: skip
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def extra_bin(name: str) -> Path:
    """The bin dir of a toolchain extra (dev/e2e/toolchain.sh --extra NAME restores it); nothing is built."""
    out = subprocess.run(
        ["bash", str(REPO / "dev/e2e/toolchain.sh"), "--extra-bin", name],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip())


# what each process runs from: the toolchain's bin dir, or an extra's
EXTRAS = {"kube-scheduler": "scheduler", "kwok": "kwok"}


class ControlPlane:
    """`with ControlPlane(bin_dir) as cp:` -> cp.kubeconfig (path), cp.server, cp.token, cp.api(...).

    `cp.set_pod_log(text)` sets what kwok serves as every container's log."""

    def __init__(
        self, bin_dir: str | Path, workdir: str | Path | None = None, *, lease_seconds: int = 40
    ) -> None:
        """lease_seconds: the nodes' Lease duration (kwok renews it at a quarter of that); the node lifecycle
        controller's grace period follows it. Thousands of nodes (dev/bench/cluster.py) take a longer one."""
        self.bin = Path(bin_dir)
        self.lease_seconds = lease_seconds
        self.exes = {name: extra_bin(extra) / name for name, extra in EXTRAS.items()}
        missing = [str(exe) for exe in self.exes.values() if not os.access(exe, os.X_OK)]
        if missing:
            raise FileNotFoundError(
                f"missing {', '.join(missing)}: run `dev/e2e/toolchain.sh --extra kwok` and `--extra scheduler`"
            )
        self._own_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="mldiag-k8s-"))
        self.token = secrets.token_hex(16)
        self.procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []
        self.starts = 0
        """How many starts it took (a start whose port was taken is retried: STARTS)."""
        self.server = ""
        self.kubeconfig = self.dir / "kubeconfig.yaml"
        self.pod_log = self.dir / "pod.log"
        self.session = requests.Session()
        self.session.trust_env = False  # our CA, not REQUESTS_CA_BUNDLE; no proxy for 127.0.0.1

    # -- lifecycle ----------------------------------------------------------------------------------------
    def __enter__(self) -> ControlPlane:
        self.starts = 0
        try:
            while True:
                self.starts += 1
                try:
                    self.start()
                    return self
                except PortTaken:
                    if self.starts >= STARTS:
                        raise
                    self._stop_processes()
                    shutil.rmtree(self.dir / "etcd", ignore_errors=True)
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 - closed in stop()
        proc = subprocess.Popen(
            [str(self.exes.get(name, self.bin / name)), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append((name, proc, log))

    def start(self) -> None:
        pki = self.dir / "pki"
        generate_pki(pki)
        (self.dir / "tokens.csv").write_text(f'{self.token},admin,admin,"system:masters"\n')

        # every port at once: distinct, and a taken one is found at the first wait, before anything is created
        etcd_client, etcd_peer, api_port, manager_port, scheduler_port, kwok_port = free_ports(6)
        self._spawn(
            "etcd",
            [
                "--name=e2e",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-cluster=e2e=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        self._wait(lambda: requests.get(f"http://127.0.0.1:{etcd_client}/health", timeout=2).ok, "etcd")

        self.server = f"https://127.0.0.1:{api_port}"
        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--token-auth-file={self.dir / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.96.0.0/24",
                "--allow-privileged=true",
                "--profiling=false",
                "--enable-priority-and-fairness=false",
                "--endpoint-reconciler-type=none",
                # logs, exec: to kwok's kubelet endpoint (the node's InternalIP and daemonEndpoints port)
                f"--kubelet-certificate-authority={pki / 'ca.crt'}",
                "--kubelet-preferred-address-types=InternalIP",
                "--v=1",
            ],
        )
        self.session.headers["Authorization"] = f"Bearer {self.token}"
        self.session.verify = str(pki / "ca.crt")
        self._wait(lambda: self.session.get(f"{self.server}/readyz", timeout=3).ok, "kube-apiserver")
        self._write_kubeconfig()

        self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={manager_port}",
                "--leader-elect=false",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--use-service-account-credentials=false",
                "--controllers=*",
                f"--node-monitor-grace-period={max(50, self.lease_seconds + 10)}s",
                "--profiling=false",
                "--v=1",
            ],
        )
        # The token controller puts the root CA into every namespace: a sign that the controllers run.
        self._wait(
            lambda: (
                self.session.get(
                    f"{self.server}/api/v1/namespaces/default/configmaps/kube-root-ca.crt", timeout=3
                ).ok
            ),
            "kube-controller-manager",
        )
        self._spawn(
            "kube-scheduler",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={scheduler_port}",
                "--leader-elect=false",
                "--profiling=false",
                "--v=1",
            ],
        )
        self.pod_log.write_text("")
        (self.dir / "kwok-logs.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kwok.x-k8s.io/v1alpha1",
                    "kind": "ClusterLogs",
                    "metadata": {"name": "every-pod"},
                    "spec": {"selector": {}, "logs": [{"logsFile": str(self.pod_log), "follow": False}]},
                }
            )
        )
        self._spawn(
            "kwok",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--config={STAGES}",
                f"--config={self.dir / 'kwok-logs.yaml'}",
                "--manage-all-nodes=true",
                "--node-ip=127.0.0.1",
                f"--node-port={kwok_port}",
                f"--server-address=127.0.0.1:{kwok_port}",
                f"--tls-cert-file={pki / 'kubelet.crt'}",
                f"--tls-private-key-file={pki / 'kubelet.key'}",
                f"--node-lease-duration-seconds={self.lease_seconds}",
                "--cidr=10.0.0.0/16",
            ],
        )
        kwok_ca = str(pki / "ca.crt")
        self._wait(
            lambda: requests.get(f"https://127.0.0.1:{kwok_port}/healthz", verify=kwok_ca, timeout=3).ok,
            "kwok",
        )

    def _write_kubeconfig(self) -> None:
        ca = (self.dir / "pki" / "ca.crt").read_bytes()
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": base64.b64encode(ca).decode(),
                    },
                }
            ],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
            "current-context": "e2e",
        }
        self.kubeconfig.write_text(yaml.safe_dump(doc))

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while True:
            for name, proc, _ in self.procs:
                if proc.poll() is not None:
                    tail = (self.dir / f"{name}.log").read_text(errors="replace").strip().splitlines()[-3:]
                    said = f"{name} exited with {proc.returncode}: " + " | ".join(tail)
                    raise (PortTaken if "address already in use" in said else RuntimeError)(said)
            with contextlib.suppress(requests.RequestException):
                if ready():
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not ready after {READY_TIMEOUT_SECONDS:.0f}s; see {self.dir}")
            time.sleep(0.25)

    def stop(self) -> None:
        self._stop_processes()
        self.session.close()
        if self._own_dir and not os.environ.get("MLDIAG_E2E_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def _stop_processes(self) -> None:
        for _, proc, _ in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for _, proc, log in reversed(self.procs):
            try:
                # kube-apiserver's graceful stop waits about 11 s for its in-flight connections once a
                # cluster has served pods; a throwaway plane loses nothing by being killed after a moment
                proc.wait(timeout=STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
            log.close()
        self.procs.clear()

    def set_pod_log(self, text: str) -> None:
        """Every container's log from now on (kwok reads the file at each request, in the CRI log format)."""
        lines = [f"2026-01-01T00:00:00.000000000Z stdout F {line}" for line in text.splitlines()]
        self.pod_log.write_text("".join(line + "\n" for line in lines))

    # -- API helpers --------------------------------------------------------------------------------------
    def api(self, method: str, path: str, **kw) -> requests.Response:
        return self.session.request(method, f"{self.server}{path}", timeout=30, **kw)

    def get(self, path: str) -> dict:
        r = self.api("GET", path)
        r.raise_for_status()
        return r.json()


def main(argv: list[str]) -> int:
    with ControlPlane(argv[0]) as cp:
        print(f"kubeconfig: {cp.kubeconfig}\nserver: {cp.server}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
