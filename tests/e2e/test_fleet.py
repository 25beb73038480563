"""Fleet rollouts on the real engine (issue 29): three loopback control planes are three clusters of one
environment stack; `mldiag fleet run` rolls them out in two waves through the Automation API, one member
stack each, with verify as the gate. The tests build on each other, in file order:

1. two rollouts started together: one rolls out, the other stops at once naming it (whichever wins the race to
   create the lease stack); wave 1's gate fails on one cluster (its webhook has no CA): the rollout stops, and
   nothing of wave 2 changes (no stack, nothing in its API server);
2. the CA arrives (the fix, made in that cluster): a rerun resumes at wave 1's unfinished cluster, leaves
   the one that passed alone and completes wave 2; `fleet status` says so;
3. drift made directly in one cluster's API server is reported for that cluster only;
4. another rollout holding the environment's lease stops this one before anything runs (`--take-over` takes it);
5. a member stack locked by another update is reported (exit 3) and not retried; once the lock is gone, a rerun
   updates only the cluster whose entry changed;
6. the environment stack itself, deployed by its member stacks now, previews with a warning that `pulumi up`
   refuses (one way per environment).

Kills, an API server that goes away, an unwritable backend and `fleet adopt` are in test_fleet_faults.py.

The rollout's wall time is printed against the ideal (each wave's slowest cluster plus its soak) and kept in
the e2e figures of the terminal summary.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dev.e2e.control_plane import ControlPlane
from dev.e2e.harness import REPO, Project, Result
from ml_diagnostics import compat
from mldiag.stacks import policy_config
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS, worker_node

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

ENV = "fleet-e2e"
CLUSTERS = ("a", "b", "c")
NAMESPACE = "ai-workloads"
FLEET = """\
environment: fleet-e2e
waves:
  - name: first
    targets: [a, b]
    maxParallel: 2
    soak: 5s
    gate: {verifyWait: 40s, verifyInterval: 5s}
  - name: second
    targets: [c]
    gate: {verifyWait: 90s, verifyInterval: 5s}
"""


def fleet_argv(fleet: Path, project: Project, *args: str) -> list[str]:
    """`mldiag fleet <args> FLEET` of `project`, as a process of the repository's Python."""
    return [sys.executable, "-m", "mldiag.fleet", *args, str(fleet), "--project-dir", str(project.root)]


@dataclass
class Fleet:
    project: Project
    planes: dict[str, Plane]
    fleet: Path
    repo_url: str

    def argv(self, *args: str) -> list[str]:
        return fleet_argv(self.fleet, self.project, *args)

    def mldiag(self, *args: str, timeout: float = 1200) -> Result:
        argv = self.argv(*args)
        proc = subprocess.run(
            argv, cwd=REPO, env=self.project.env, capture_output=True, text=True, timeout=timeout
        )
        return Result(argv, proc.returncode, proc.stdout, proc.stderr, 0.0)

    def together(self, *args: str, timeout: float = 1200) -> list[tuple[int, Result]]:
        """Two runs started at once: (pid, result) of each."""
        argv = self.argv(*args)
        procs = [
            subprocess.Popen(
                argv,
                cwd=REPO,
                env=self.project.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        out = []
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=timeout)
            out.append((proc.pid, Result(argv, proc.returncode, stdout, stderr, 0.0)))
        return out

    def stacks(self) -> list[str]:
        return sorted(s["name"] for s in self.project.pulumi("stack", "ls", "--json").json())

    def lease(self) -> Any:
        return self.project.pulumi("stack", "output", "--json", stack=f"{ENV}.fleet").json().get("lease")

    def hold_lease(self, lease: dict[str, Any]) -> None:
        """Another rollout's lease, written the way a rollout writes its own (an update of <env>.fleet)."""
        code = (
            "import json, sys\n"
            "from pathlib import Path\n"
            "from mldiag.fleet.executor import AutomationExecutor\n"
            "from mldiag.fleet.planner import load\n"
            "root = Path(sys.argv[2])\n"
            "AutomationExecutor(load(Path(sys.argv[1]), root), root).exclusive(lambda held: json.loads(sys.argv[3]))\n"
        )
        argv = [sys.executable, "-c", code, str(self.fleet), str(self.project.root), json.dumps(lease)]
        subprocess.run(argv, cwd=REPO, env=self.project.env, check=True, capture_output=True, timeout=300)

    def lock(self, stack: str) -> Path:
        """A lock of the local backend held by another update of `stack` (what `pulumi cancel` removes)."""
        lock = (
            self.project.root
            / "state"
            / ".pulumi"
            / "locks"
            / "organization"
            / "ml-diagnostics"
            / stack
            / "other.json"
        )
        lock.parent.mkdir(parents=True, exist_ok=True)
        content = {
            "pid": 4242,
            "username": "ci",
            "hostname": "ci-runner-7",
            "timestamp": "2026-01-01T00:00:00Z",
        }
        lock.write_text(json.dumps(content))
        return lock


class Plane(ControlPlane):
    """A loopback control plane whose API server can be stopped and started again (same port, certificates,
    etcd), its controllers paused; stopped with SIGKILL (nothing of it is kept: the graceful stop waits its 15 s
    grace on the API server, for each plane)."""

    def stop(self) -> None:
        for _, proc, _ in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        super().stop()

    def _spawn(self, name: str, args: list[str]) -> None:
        self.__dict__.setdefault("args", {})[name] = args
        super()._spawn(name, args)

    def pid(self, name: str) -> int:
        return next(proc.pid for n, proc, _ in self.procs if n == name)

    def stop_api_server(self) -> None:
        for i, (name, proc, log) in enumerate(self.procs):
            if name == "kube-apiserver":
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                log.close()
                del self.procs[i]
                return

    def start_api_server(self) -> None:
        self._spawn("kube-apiserver", self.__dict__["args"]["kube-apiserver"])
        self._wait(lambda: self.session.get(f"{self.server}/readyz", timeout=3).ok, "kube-apiserver")

    @contextlib.contextmanager
    def controllers_paused(self) -> Iterator[None]:
        """No controller runs: a Deployment gets no ReplicaSet, so Helm's wait (the install) does not end."""
        pid = self.pid("kube-controller-manager")
        os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    def releases(self) -> dict[str, list[tuple[int, str, str]]]:
        """Helm release records: release -> [(revision, status, uid)] by revision."""
        found: dict[str, list[tuple[int, str, str]]] = {}
        items = self.get("/api/v1/secrets?labelSelector=owner%3Dhelm")["items"]
        for s in items:
            labels = s["metadata"]["labels"]
            found.setdefault(labels["name"], []).append(
                (int(labels["version"]), labels["status"], s["metadata"]["uid"])
            )
        return {k: sorted(v) for k, v in sorted(found.items())}

    def wait_release(self, release: str, status: str, not_uid: str = "", timeout: float = 120) -> str:
        """Waits for a record of `release` with `status` (another than `not_uid`); its uid."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for _, st, uid in self.releases().get(release, []):
                if st == status and uid != not_uid:
                    return uid
            time.sleep(0.1)
        raise AssertionError(f"no {status} record of {release} after {timeout}s: {self.releases()}")


def stop_all(planes: dict[str, Plane]) -> None:
    threads = [threading.Thread(target=cp.stop) for cp in planes.values()]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def started(stack: contextlib.ExitStack, e2e_bin: Path, names: Sequence[str]) -> dict[str, Plane]:
    """One control plane per name with its worker node, started side by side and stopped when `stack` closes."""
    planes: dict[str, Plane] = {}
    errors: list[BaseException] = []

    def start(name: str) -> None:
        try:
            planes[name] = Plane(e2e_bin)
            planes[name].start()
            worker_node(planes[name])  # cert-manager's pods run there
        except BaseException as e:  # noqa: BLE001 - reported below, after every start has ended
            errors.append(e)

    threads = [threading.Thread(target=start, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stack.callback(stop_all, planes)
    if errors:
        raise errors[0]
    return {n: planes[n] for n in names}


def ca_injected(cp: ControlPlane) -> None:
    """What cert-manager's cainjector leaves in a real cluster: the injection webhook's configuration, owned
    by its Helm release, with the CA in it (nothing serves it, and it matches no object)."""
    ca = base64.b64encode((cp.dir / "pki" / "ca.crt").read_bytes()).decode()
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": "mldiagnostics-injection-webhook",
            "annotations": {"meta.helm.sh/release-name": compat.INJECTION_WEBHOOK_RELEASE},
        },
        "webhooks": [
            {
                "name": "inject.mldiagnostics.example",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Ignore",
                "objectSelector": {"matchLabels": {"mldiag-e2e": "never-set"}},
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ],
                "clientConfig": {
                    "service": {"namespace": compat.MLDIAGNOSTICS_NAMESPACE, "name": "webhook", "port": 443},
                    "caBundle": ca,
                },
            }
        ],
    }
    cp.api(
        "POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", json=body
    ).raise_for_status()


def target(name: str, repo_url: str) -> dict[str, Any]:
    return {
        "name": name,
        "mode": "manual",
        "workloadNamespaces": [{"name": NAMESPACE, "create": True}],
        "certManager": {"repository": repo_url},
        "manualInstall": {"jaxVersion": "0.8", "repository": repo_url},
        "diagon": {"enabled": False},
    }


@pytest.fixture(scope="module")
def fleet(e2e_bin: Path, chart_repo: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with contextlib.ExitStack() as stack:
        planes = started(stack, e2e_bin, CLUSTERS)
        project = Project(tmp_path_factory.mktemp("fleet-project"), e2e_bin)
        config = {
            "environment": "staging",
            "kubernetesClusters": [target(n, chart_repo.url) for n in CLUSTERS],
        }
        project.init_stack(
            ENV,
            config,
            {
                f"kubernetesClusters[{i}].kubeconfig": planes[n].kubeconfig.read_text()
                for i, n in enumerate(CLUSTERS)
            },
        )
        # The stack's own policy config (policies/config/<stack>.json): the loopback chart repository is allowed.
        own = project.root / "policies" / "config" / f"{ENV}.json"
        own.write_text(json.dumps({"helm-allowed-repositories": {"allowedRepositories": [chart_repo.url]}}))
        assert (
            policy_config.effective(ENV, stack_file=project.stack_file(ENV), config_dir=own.parent)[0][
                "helm-allowed-repositories"
            ]["enforcementLevel"]
            == "mandatory"
        )
        for name in ("a", "c"):
            ca_injected(planes[name])
        path = project.root / "fleet" / "e2e.yaml"
        path.parent.mkdir()
        path.write_text(FLEET)
        yield Fleet(project, planes, path, chart_repo.url)


def clusters(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        c["target"].split("/")[1]: (w["name"], c["state"]) for w in report["waves"] for c in w["clusters"]
    }


def note_times(label: str, report: dict[str, Any]) -> None:
    wall, ideal = report["wallSeconds"], report["idealSeconds"]
    per_wave = ", ".join(
        f"{w['name']}: slowest {max((c['seconds'] for c in w['clusters']), default=0):.1f}s + soak {w['soakSeconds']:.1f}s"
        for w in report["waves"]
        if w["status"] not in ("done earlier", "not started")
    )
    overhead = f"{wall / ideal:.2f}x" if ideal else "n/a"
    print(f"\nfleet e2e {label}: wall {wall:.1f}s vs ideal {ideal:.1f}s ({overhead}; {per_wave})")
    TIMINGS[f"fleet {label} wall"] = float(wall)
    TIMINGS[f"fleet {label} ideal"] = float(ideal)


def test_1_a_failing_gate_in_wave_1_stops_the_rollout_and_wave_2_is_untouched(fleet: Fleet) -> None:
    plan = fleet.mldiag("plan", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    assert [[c["stack"] for c in w["clusters"]] for w in plan.json()["waves"]] == [
        [f"{ENV}.k8s-a", f"{ENV}.k8s-b"],
        [f"{ENV}.k8s-c"],
    ]
    runs = fleet.together("run", "--format", "json")
    assert sorted(r.returncode for _, r in runs) == [1, 3], [r.output[-3000:] for _, r in runs]
    (pid, res), (_, refused) = sorted(runs, key=lambda run: run[1].returncode)
    # the refused run names the rollout that holds the environment, however the race to the lease fell
    assert re.fullmatch(
        rf"error: another rollout holds this environment: holder [0-9a-f]{{12}} on {re.escape(socket.gethostname())} "
        rf"\(pid {pid}\) since \d+, lease until \d+ \(unix time\); wait for it, or if that run is gone, rerun "
        r"with --take-over",
        refused.stderr.splitlines()[-1],
    ), refused.stderr
    assert refused.json()["waves"] == [] and "updating" not in refused.stderr
    report = res.json()
    assert clusters(report) == {
        "a": ("first", "verified"),
        "b": ("first", "failed"),
        "c": ("second", "not started"),
    }
    assert [w["status"] for w in report["waves"]] == ["failed", "not started"]
    why = next(c["why"] for w in report["waves"] for c in w["clusters"] if c["target"].endswith("/b"))
    assert why.startswith("verify did not pass within 40s"), why
    assert (
        "webhook.ca-injected: no MutatingWebhookConfiguration of release mldiagnostics-injection-webhook"
        in why
    )
    assert "wave first failed its gate: 1 cluster(s) failed, 0 tolerated" in res.stderr
    note_times("failing run", report)
    # Nothing of wave 2: no stack, and its API server holds none of the program's objects.
    assert f"{ENV}.k8s-c" not in fleet.stacks()
    assert {f"{ENV}.k8s-a", f"{ENV}.k8s-b", f"{ENV}.fleet"} <= set(fleet.stacks())
    c = fleet.planes["c"]
    assert c.api("GET", f"/api/v1/namespaces/{NAMESPACE}").status_code == 404
    assert c.api("GET", f"/api/v1/namespaces/{compat.MLDIAGNOSTICS_NAMESPACE}").status_code == 404
    a = fleet.planes["a"]
    assert a.get(f"/api/v1/namespaces/{NAMESPACE}")["metadata"]["labels"][compat.OPT_IN_LABEL] == "true"
    status = fleet.mldiag("status", "--format", "json")
    assert status.returncode == 1, status.output
    assert [w["status"] for w in status.json()["waves"]] == ["failed its gate", "not started"]


def test_2_after_the_fix_a_rerun_resumes_and_completes(fleet: Fleet) -> None:
    ca_injected(fleet.planes["b"])
    res = fleet.mldiag("run", "--format", "json")
    assert res.returncode == 0, res.output[-6000:]
    report = res.json()
    # a passed before: not updated again; b resumes; wave 2 runs
    assert clusters(report) == {
        "a": ("first", "done earlier"),
        "b": ("first", "verified"),
        "c": ("second", "verified"),
    }
    assert [w["status"] for w in report["waves"]] == ["passed", "passed"]
    assert "updating" not in "".join(line for line in res.stderr.splitlines() if f"{ENV}.k8s-a " in line)
    note_times("resumed run", report)
    c = fleet.planes["c"]
    assert c.get(f"/api/v1/namespaces/{NAMESPACE}")["metadata"]["labels"][compat.OPT_IN_LABEL] == "true"
    status = fleet.mldiag("status", "--format", "json")
    assert status.returncode == 0, status.output
    assert [w["status"] for w in status.json()["waves"]] == ["complete", "complete"]
    again = fleet.mldiag("run", "--format", "json")
    assert again.returncode == 0 and [w["status"] for w in again.json()["waves"]] == [
        "done earlier",
        "done earlier",
    ]


def test_3_drift_in_one_clusters_api_server_is_reported_for_that_cluster_only(fleet: Fleet) -> None:
    clean = fleet.mldiag("drift", "--format", "json")
    assert clean.returncode == 0, clean.output[-4000:]
    patch = {"metadata": {"labels": {compat.OPT_IN_LABEL: "false"}}}
    fleet.planes["b"].api(
        "PATCH",
        f"/api/v1/namespaces/{NAMESPACE}",
        json=patch,
        headers={"Content-Type": "application/merge-patch+json"},
    ).raise_for_status()
    res = fleet.mldiag("drift", "--format", "json")
    assert res.returncode == 1, res.output[-4000:]
    found = {c["target"].split("/")[1]: c for c in res.json()["clusters"]}
    assert {n: c["status"] for n, c in found.items()} == {"a": "no drift", "b": "drift", "c": "no drift"}
    drifted = found["b"]["resources"]
    assert [(r["type"], r["urn"].rsplit("::", 1)[1]) for r in drifted] == [
        ("kubernetes:core/v1:Namespace", f"k8s-b-mldiag-opt-in-{NAMESPACE}")
    ], drifted
    table = fleet.mldiag("drift")
    assert table.returncode == 1 and "1 of 3 cluster(s) of fleet-e2e drifted" in table.stdout


def test_4_a_rollout_holding_the_lease_stops_another_before_anything_runs(fleet: Fleet) -> None:
    now = int(time.time())
    fleet.hold_lease(
        {"holder": "other", "host": "ci-runner-7", "pid": 4242, "since": now, "expires": now + 3600}
    )
    res = fleet.mldiag("run", "--format", "json")
    assert res.returncode == 3, res.output[-4000:]
    assert (
        f"error: another rollout holds this environment: holder other on ci-runner-7 (pid 4242) since {now}"
        in res.stderr
    )
    assert res.json()["waves"] == [] and "updating" not in res.stderr
    assert fleet.lease()["holder"] == "other"  # left as it was
    taken = fleet.mldiag("run", "--take-over", "--format", "json")
    assert taken.returncode == 0, taken.output[-4000:]
    assert [w["status"] for w in taken.json()["waves"]] == ["done earlier", "done earlier"]
    assert fleet.lease() is None  # given back


def test_5_a_locked_member_stack_is_reported_not_retried_and_the_rerun_updates_only_it(fleet: Fleet) -> None:
    entries = [target(n, fleet.repo_url) for n in CLUSTERS]
    entries[2]["workloadNamespaces"].append({"name": "ai-extra", "create": True})
    fleet.project.set_config(ENV, {"kubernetesClusters": entries})
    lock = fleet.lock(f"{ENV}.k8s-c")
    res = fleet.mldiag("run", "--format", "json")
    assert res.returncode == 3, res.output[-4000:]
    assert [w["status"] for w in res.json()["waves"]] == ["done earlier", "stopped"]
    assert f"error: wave second: stack {ENV}.k8s-c is locked by another update (" in res.stderr
    assert "the stack is currently locked by 1 lock(s)" in res.stderr
    assert (
        "held by ci@ci-runner-7 (pid 4242) at 2026-01-01T00:00:00Z); if none runs: `pulumi cancel -s"
        in res.stderr
    )
    assert res.stderr.count(f"{ENV}.k8s-c updating") == 1  # reported, not retried
    c = fleet.planes["c"]
    assert c.api("GET", "/api/v1/namespaces/ai-extra").status_code == 404
    lock.unlink()  # the other update ended
    again = fleet.mldiag("run", "--format", "json")
    assert again.returncode == 0, again.output[-6000:]
    assert clusters(again.json()) == {
        "a": ("first", "done earlier"),
        "b": ("first", "done earlier"),
        "c": ("second", "verified"),
    }
    assert [ln for ln in again.stderr.splitlines() if " updating" in ln] == [
        next(ln for ln in again.stderr.splitlines() if f"{ENV}.k8s-c updating" in ln)
    ]
    assert c.get("/api/v1/namespaces/ai-extra")["metadata"]["labels"][compat.OPT_IN_LABEL] == "true"
    note_times("run after the lock", again.json())


def test_6_the_environment_stack_previews_every_cluster_and_says_that_up_refuses(fleet: Fleet) -> None:
    # The stack file is unchanged and plans all three clusters; their member stacks deploy them now, so the
    # preview warns that `pulumi up -s <env>` refuses (program/fleet_member.py).
    preview = fleet.project.pulumi("preview", "--json", stack=ENV).json()
    warnings = [
        d["message"].removeprefix("warning: ")
        for d in preview.get("diagnostics", [])
        if d.get("severity") == "warning"
    ]
    assert any(
        w.startswith(
            f"`pulumi up` would be refused: environment {ENV} is deployed by its fleet's member stacks "
            "(kubernetesClusters/a, kubernetesClusters/b, kubernetesClusters/c: `mldiag fleet run fleet/e2e.yaml`)"
        )
        for w in warnings
    ), warnings
    steps = preview["steps"]
    namespaces = sorted(
        s["urn"].rsplit("::", 1)[1] for s in steps if s["urn"].endswith(f"-opt-in-{NAMESPACE}")
    )
    assert namespaces == [f"k8s-{n}-mldiag-opt-in-{NAMESPACE}" for n in CLUSTERS]
    assert all(s["urn"].startswith(f"urn:pulumi:{ENV}::") for s in steps)
