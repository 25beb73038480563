"""Faults of a rollout on the real engine (issue 35): whatever kills it, a rerun resumes by itself, and the
environment is deployed one way only. Two loopback control planes are the clusters `p` and `q` of one
environment; the tests build on each other, in file order:

1. the environment stack's own `pulumi up`, killed (every process of its session, SIGKILL) while cert-manager
   installs: `mldiag fleet recover` clears its lock and the release left `pending-install`, the next `pulumi
   up` completes;
2. one way per environment: `fleet run` refuses the environment deployed by its own stack; `fleet adopt` moves
   it onto its member stack (nothing replaced: same uids, release revisions); `pulumi up -s` then refuses;
3. a member killed during its first install (every process), then its rerun killed again mid-install (the
   process group only: the provider plugin, left running, completes the install): the reruns clear the locks,
   remove the never-completed release record, import the completed one, and complete;
4. kills at the rollout's steps (a test hook, `MLDIAG_FLEET_TEST_KILL`): while the lease is written, during a
   gate, during a soak, before a tag; each rerun resumes where the last one died;
5. an API server that disappears (its cluster's wave fails, exit 1, named) and comes back (the rerun resumes);
6. a state backend that cannot be written (a member's tag): exit 3 naming the error, nothing updated, the tag as
   it was; once writable, the rerun completes. (A backend that takes no write at all stops the rollout at its
   lease: tests/test_fleet_rollout.py; on the real engine that failure takes the CLI about 30 s to report.)

After each fault the state matches the clusters: no pending operation, no lock, every Helm release recorded
once and deployed, `fleet drift` clean. Two runs started together are in test_fleet.py (a fresh environment).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dev.e2e.harness import REPO, Project, Result
from mldiag.fleet import progress
from tests.e2e.test_fleet import Plane, ca_injected, fleet_argv, started, target
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS
from tests.fixtures.tools import need

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

ENV = "faults-e2e"
P, Q = f"{ENV}.k8s-p", f"{ENV}.k8s-q"
CERT_MANAGER = "k8s-{}-mldiag-cert-manager-release"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
ONE = "environment: faults-e2e\npolicyPack: false\nwaves:\n  - {name: first, targets: [p], soak: 1s, gate: {verifyWait: 180s, verifyInterval: 2s}}\n"
TWO = ONE + "  - {name: second, targets: [q], gate: {verifyWait: 180s, verifyInterval: 2s}}\n"
HOST = progress.socket.gethostname()
USER = pwd.getpwuid(os.getuid()).pw_name


def session_pids(sid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == sid and fields[0] != "Z":
                    out.append(int(entry.name))
    return out


def kill_session(sid: int) -> None:
    """SIGKILL to every process of a session: a CI runner that dies (the CLI's plugins run in process groups
    of their own, so a signal to the process group alone leaves them running)."""
    for _ in range(20):
        pids = session_pids(sid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


@dataclass
class Started:
    proc: subprocess.Popen[str]
    out: Path
    err: Path
    argv: list[str]
    t0: float

    def wait(self, timeout: float = 600) -> Result:
        try:
            self.proc.wait(timeout=timeout)
        finally:
            kill_session(self.proc.pid)
        took = time.monotonic() - self.t0
        return Result(self.argv, self.proc.returncode, self.out.read_text(), self.err.read_text(), took)


@dataclass
class Env:
    project: Project
    planes: dict[str, Plane]
    fleet: Path
    tmp: Path
    repo_url: str

    def start(self, *argv: str, kill_at: str = "", pulumi: bool = False) -> Started:
        n = len(list(self.tmp.glob("run-*.out")))
        out, err = self.tmp / f"run-{n}.out", self.tmp / f"run-{n}.err"
        env = dict(self.project.env)
        env.pop("MLDIAG_FLEET_TEST_KILL", None)
        if kill_at:
            env["MLDIAG_FLEET_TEST_KILL"] = kill_at
        if pulumi:
            args = [str(self.project.cli), *argv, "--non-interactive"]
            cwd = self.project.root
        else:
            args = fleet_argv(self.fleet, self.project, *argv)
            cwd = REPO
        with out.open("w") as o, err.open("w") as e:
            proc = subprocess.Popen(
                args, cwd=cwd, env=env, stdout=o, stderr=e, text=True, start_new_session=True
            )
        return Started(proc, out, err, args, time.monotonic())

    def mldiag(self, *argv: str, kill_at: str = "") -> Result:
        return self.start(*argv, kill_at=kill_at).wait()

    def state(self, stack: str) -> dict[str, Any]:
        return self.project.pulumi("stack", "export", stack=stack).json()["deployment"]

    def locks(self, stack: str) -> list[str]:
        d = self.project.root / "state" / ".pulumi" / "locks" / "organization" / "ml-diagnostics" / stack
        return sorted(p.name for p in d.glob("*.json")) if d.is_dir() else []

    def tag(self, stack: str) -> progress.Record | None:
        tags = self.project.pulumi("stack", "tag", "ls", "--json", stack=stack).json()
        return progress.Record.decode(tags.get(progress.TAG))

    def entries(self, **extra: list[str]) -> list[dict[str, Any]]:
        out = []
        for name in self.planes:
            t = target(name, self.repo_url)
            t["workloadNamespaces"] += [{"name": ns, "create": True} for ns in extra.get(name, [])]
            out.append(t)
        return out

    def configure(self, names: tuple[str, ...], **extra: list[str]) -> None:
        entries = [e for e in self.entries(**extra) if e["name"] in names]
        self.project.set_config(ENV, {"kubernetesClusters": entries})

    def consistent(self, stacks: tuple[str, ...]) -> None:
        """Every stack's state matches its cluster: no pending operation, no lock, each Helm release recorded
        once in the state and deployed (its last record) in the cluster; `fleet drift` clean; a preview of
        each changes nothing."""
        for stack in stacks:
            state = self.state(stack)
            assert state.get("pending_operations") in (None, []), (stack, state.get("pending_operations"))
            assert self.locks(stack) == [], stack
            urns = [r["urn"] for r in state["resources"] if r["type"] == RELEASE_TYPE]
            assert len(urns) == len(set(urns)) == 3, (stack, urns)
            plane = self.planes[stack.rsplit("-", 1)[1]]
            for release, records in plane.releases().items():
                assert records[-1][1] == "deployed", (stack, release, records)
        drift = self.mldiag("drift", "--format", "json")
        assert drift.returncode == 0, drift.output[-3000:]
        # and its program: the next `pulumi up` of each member changes nothing (no new Helm revision)
        with ThreadPoolExecutor(max_workers=len(stacks)) as pool:
            changes = dict(zip(stacks, pool.map(self.preview_changes, stacks), strict=True))
        assert changes == dict.fromkeys(stacks, ""), changes

    def preview_changes(self, stack: str) -> str:
        """What `pulumi preview` of a member stack would change ('' for nothing), run in the member's work
        directory that the rollout writes (its Pulumi.yaml and stack file)."""
        (stack_file,) = self.project.root.rglob(f"Pulumi.{stack}.yaml")
        proc = subprocess.run(
            [str(self.project.cli), "preview", "--expect-no-changes", "--diff", "--non-interactive", "--stack", stack],
            cwd=stack_file.parent, env=self.project.env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        return "" if proc.returncode == 0 else proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.fixture(scope="module")
def env(e2e_bin: Path, chart_repo: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    with contextlib.ExitStack() as stack:
        planes = started(stack, e2e_bin, ("p", "q"))
        for cp in planes.values():
            ca_injected(cp)
        root = tmp_path_factory.mktemp("fleet-faults")
        project = Project(root / "project", e2e_bin)
        fleet = root / "project" / "fleet" / "faults.yaml"
        e = Env(project, {"p": planes["p"], "q": planes["q"]}, fleet, root, chart_repo.url)
        project.init_stack(
            ENV,
            {"environment": "staging", "kubernetesClusters": e.entries()[:1]},
            {"kubernetesClusters[0].kubeconfig": planes["p"].kubeconfig.read_text()},
        )
        (project.root / "policies" / "config" / f"{ENV}.json").write_text(
            json.dumps({"helm-allowed-repositories": {"allowedRepositories": [chart_repo.url]}})
        )
        e.fleet.parent.mkdir()
        e.fleet.write_text(ONE)
        yield e


def lines(text: str) -> list[str]:
    """The rollout's log lines without their clock prefix."""
    return [ln.split("] ", 1)[1] if ln.startswith("[fleet ") else ln for ln in text.splitlines()]


def one(log: list[str], prefix: str) -> str:
    found = [ln for ln in log if ln.startswith(prefix)]
    assert len(found) == 1, (prefix, log)
    return found[0]


def timed(label: str, t0: float) -> None:
    TIMINGS[f"faults {label}"] = time.monotonic() - t0


def test_1_the_environment_stacks_own_up_killed_mid_install_is_recovered(env: Env) -> None:
    t0 = time.monotonic()
    p = env.planes["p"]
    with p.controllers_paused():
        up = env.start("up", "--yes", "--skip-preview", "-s", ENV, pulumi=True)
        p.wait_release("cert-manager", "pending-install")
        kill_session(up.proc.pid)
        assert up.wait().returncode == -signal.SIGKILL
    assert len(env.locks(ENV)) == 1
    pending = env.state(ENV)["pending_operations"]
    assert [(o["type"], o["resource"]["urn"].rsplit("::", 1)[1]) for o in pending] == [
        ("creating", CERT_MANAGER.format("p"))
    ]
    res = env.mldiag("recover")
    assert res.returncode == 0, res.output[-4000:]
    out = res.stdout.splitlines()
    assert out[0].startswith(f"cleared the lock of {USER}@{HOST} (pid ") and out[0].endswith(
        ": its process is gone from this host"
    )
    assert out[1:] == [
        f"kubernetes:helm.sh/v3:Release::{CERT_MANAGER.format('p')}: interrupted while creating; its Helm release "
        "cert-manager/cert-manager never completed and holds nothing deployed: removed its record(s) "
        "sh.helm.release.v1.cert-manager.v1 (pending-install); the update installs it",
        "cleared 1 pending operation(s) from its state",
        f"exit 0: stack {ENV} settled: `pulumi up -s {ENV}` can run",
    ]
    assert env.locks(ENV) == [] and env.state(ENV).get("pending_operations") in (None, [])
    env.project.pulumi("up", "--yes", "--skip-preview", stack=ENV)
    assert {k: [s for _, s, _ in v] for k, v in p.releases().items()} == {
        "cert-manager": ["deployed"],
        "mldiagnostics-connection-operator": ["deployed"],
        "mldiagnostics-injection-webhook": ["deployed"],
    }
    again = env.mldiag("recover")
    assert (again.returncode, again.stdout) == (
        0,
        f"exit 0: stack {ENV}: no lock, nothing pending: nothing to recover\n",
    )
    timed("env up killed, recovered", t0)


def test_2_one_way_per_environment_and_adopt_moves_it_onto_member_stacks(env: Env) -> None:
    t0 = time.monotonic()
    p = env.planes["p"]
    refused = env.mldiag("run", "--format", "json")
    assert refused.returncode == 2, refused.output[-3000:]
    own = len([r for r in env.state(ENV)["resources"] if not r["type"].startswith("pulumi:")])
    assert refused.stderr == (
        f"error: environment {ENV} is deployed by its own stack ({own} resource(s) in stack {ENV}: `pulumi up -s "
        f"{ENV}`); member stacks would manage the same clusters a second time. Keep deploying it with `pulumi up -s "
        f"{ENV}`, or move it onto member stacks: `mldiag fleet adopt {env.fleet}`\n"
    )
    names = {s["name"] for s in env.project.pulumi("stack", "ls", "--json").json()}
    assert names == {ENV}  # nothing was created: no member stack, no lease stack
    uid = p.get("/api/v1/namespaces/ai-workloads")["metadata"]["uid"]
    releases = p.releases()
    before = {r["urn"].replace(f"urn:pulumi:{ENV}::", "", 1) for r in env.state(ENV)["resources"]}

    adopted = env.mldiag("adopt")
    assert adopted.returncode == 0, adopted.output[-4000:]
    assert adopted.stdout == (
        f"kubernetesClusters/p: {own + 1} resource(s) in {P}, preview: no changes\n"
        f"exit 0: moved onto 1 member stack(s), nothing to change; roll it out with `mldiag fleet run {env.fleet}` "
        f"from now on (`pulumi up -s {ENV}` refuses)\n"
    )
    member = {r["urn"].replace(f"urn:pulumi:{P}::", "", 1) for r in env.state(P)["resources"]}
    left = {r["urn"].replace(f"urn:pulumi:{ENV}::", "", 1) for r in env.state(ENV)["resources"]}
    stack_resource = f"ml-diagnostics::pulumi:pulumi:Stack::ml-diagnostics-{ENV}"
    assert left == {stack_resource, "ml-diagnostics::pulumi:providers:pulumi::default"}
    assert member == (before - left) | {f"ml-diagnostics::pulumi:pulumi:Stack::ml-diagnostics-{P}"}
    assert p.get("/api/v1/namespaces/ai-workloads")["metadata"]["uid"] == uid and p.releases() == releases

    up = env.project.pulumi("up", "--yes", "--skip-preview", stack=ENV, check=False)
    assert up.returncode != 0
    refusal = (
        f"environment {ENV} is deployed by its fleet's member stacks (kubernetesClusters/p: `mldiag fleet run "
        f"fleet/faults.yaml`); `pulumi up -s {ENV}` would manage the same clusters a second time. Roll it out with "
        "`mldiag fleet run fleet/faults.yaml` (docs/fleet.md, 'One way per environment')"
    )
    assert f"error: {refusal}" in up.stdout
    assert p.releases() == releases

    res = env.mldiag("run", "--format", "json")
    assert res.returncode == 0, res.output[-4000:]
    assert [c["state"] for w in res.json()["waves"] for c in w["clusters"]] == ["verified"]
    assert p.get("/api/v1/namespaces/ai-workloads")["metadata"]["uid"] == uid and p.releases() == releases
    env.consistent((P,))
    timed("one way and adopt", t0)


def test_3_a_member_killed_mid_install_twice_resumes_without_creating_twice(env: Env) -> None:
    t0 = time.monotonic()
    q = env.planes["q"]
    env.configure(("p", "q"))
    env.project.pulumi(
        "config", "set", "--secret", "--path", "ml-diagnostics:kubernetesClusters[1].kubeconfig", "--",
        q.kubeconfig.read_text(), stack=ENV,
    )  # fmt: skip
    env.fleet.write_text(TWO)
    with q.controllers_paused():
        first = env.start("run")
        pending_uid = q.wait_release("cert-manager", "pending-install")
        kill_session(first.proc.pid)
        assert first.wait().returncode == -signal.SIGKILL
        tag = env.tag(Q)
        assert (
            tag is not None
            and tag.state == "deploying"
            and tag.by is not None
            and tag.by.pid == first.proc.pid
        )
        assert len(env.locks(Q)) == 1
        assert [o["type"] for o in env.state(Q)["pending_operations"]] == ["creating"]

        # the rerun settles what the first left, then is killed itself mid-install; its provider plugin, in a
        # process group of its own, stays and completes the install once the controllers run again
        second = env.start("run")
        q.wait_release("cert-manager", "pending-install", not_uid=pending_uid)
        os.killpg(second.proc.pid, signal.SIGKILL)
        second.proc.wait(timeout=60)
    q.wait_release("cert-manager", "deployed")
    settled = lines(second.wait().stderr)
    took = one(settled, "lease: ")
    assert took.startswith("lease: took over the lease of holder ") and took.endswith(
        f"on {HOST} (pid {first.proc.pid}): its process is gone from this host"
    ), settled
    mine = [ln for ln in settled if ln.startswith(f"wave second: {Q}")]
    assert mine[0] == (
        f"wave second: {Q}: its update of {tag.at} (unix time) by holder {tag.by.id} on {HOST} (pid "
        f"{first.proc.pid}) was interrupted (its rollout's process is gone from this host); settling what it left"
    ), settled
    assert mine[1].startswith(f"wave second: {Q}: cleared the lock of {USER}@{HOST} (pid ") and mine[
        1
    ].endswith(": its process is gone from this host (the interrupted update)"), settled
    assert mine[2:] == [
        f"wave second: {Q}: kubernetes:helm.sh/v3:Release::{CERT_MANAGER.format('q')}: interrupted while creating; "
        "its Helm release cert-manager/cert-manager never completed and holds nothing deployed: removed its record(s) "
        "sh.helm.release.v1.cert-manager.v1 (pending-install); the update installs it",
        f"wave second: {Q}: cleared 1 pending operation(s) from its state",
        f"wave second: {Q} updating",
    ], settled
    assert [o["type"] for o in env.state(Q)["pending_operations"]] == ["creating"]

    res = env.mldiag("run", "--format", "json")
    assert res.returncode == 0, res.output[-5000:]
    mine = [ln for ln in lines(res.stderr) if ln.startswith(f"wave second: {Q}")]
    assert mine[0].startswith(f"wave second: {Q}: its update of ") and mine[0].endswith(
        f"on {HOST} (pid {second.proc.pid}) was interrupted (its rollout's process is gone from this host); "
        "settling what it left"
    ), mine
    assert mine[1].startswith(f"wave second: {Q}: cleared the lock of {USER}@{HOST} (pid "), mine
    assert mine[2:] == [
        f"wave second: {Q}: kubernetes:helm.sh/v3:Release::{CERT_MANAGER.format('q')}: interrupted while creating; "
        "the Helm release cert-manager/cert-manager it installed is deployed (revision 1): imported",
        f"wave second: {Q}: cleared 1 pending operation(s) from its state",
        f"wave second: {Q} updating",
        mine[-1],
    ], mine
    assert mine[-1].startswith(f"wave second: {Q} verified ("), mine
    assert [(w["status"], [c["state"] for c in w["clusters"]]) for w in res.json()["waves"]] == [
        ("done earlier", ["done earlier"]),
        ("passed", ["verified"]),
    ]
    # the imported release is recorded as the install that made it would have: the update after the recovery
    # leaves it as it is (no upgrade to what it already is, no second revision, its hooks not run again)
    assert [(rev, st) for rev, st, _ in q.releases()["cert-manager"]] == [(1, "deployed")]
    env.consistent((P, Q))
    timed("member killed mid-install twice", t0)


def test_4_kills_at_each_step_of_a_rollout_resume_where_they_stopped(env: Env) -> None:
    t0 = time.monotonic()
    env.configure(("p", "q"), p=["ai-extra"], q=["ai-extra"])
    steps = ["lease", f"gate:{P}", "soak:first", f"tag:{Q}"]
    logs, pids = [], []
    for step in steps:
        run = env.start("run", kill_at=step)
        res = run.wait()
        assert res.returncode == -signal.SIGKILL, (step, res.output[-3000:])
        logs.append(lines(res.stderr))
        pids.append(run.proc.pid)
    final = env.mldiag("run", "--format", "json")
    assert final.returncode == 0, final.output[-4000:]
    logs.append(lines(final.stderr))
    # killed while writing the first lease (the coordination stack's lock held): the next run clears that lock
    cleared = one(logs[1], "lease: cleared")
    assert cleared.startswith(
        f"lease: cleared the lock of the coordination stack held by {USER}@{HOST} (pid "
    )
    assert cleared.endswith(": its process is gone from this host"), logs[1]
    # killed in p's gate (its update done): the next takes the lease over and runs p's update again
    took = one(logs[2], "lease: took over")
    assert took.endswith(f"(pid {pids[1]}): its process is gone from this host"), logs[2]
    assert f"wave first: {P}: nothing was left pending: the update runs again" in logs[2]
    # killed in the soak: the next soaks what is left and verifies again, no update
    assert (
        f"wave first: {P} updating" not in logs[3] and "wave first: passed (0 failed, 0 tolerated)" in logs[3]
    )
    # killed before q's verified tag: q's update runs again
    assert f"wave second: {Q}: nothing was left pending: the update runs again" in logs[4]
    assert [(w["status"], [c["state"] for c in w["clusters"]]) for w in final.json()["waves"]] == [
        ("done earlier", ["done earlier"]),
        ("passed", ["verified"]),
    ]
    assert env.locks(f"{ENV}.fleet") == []
    env.consistent((P, Q))
    timed("kills at steps", t0)


def test_5_an_api_server_that_disappears_and_comes_back(env: Env) -> None:
    t0 = time.monotonic()
    q = env.planes["q"]
    env.configure(("p", "q"), p=["ai-extra"], q=["ai-extra", "ai-more"])
    q.stop_api_server()
    try:
        gone = env.mldiag("run", "--format", "json")
    finally:
        q.start_api_server()
    assert gone.returncode == 1, gone.output[-4000:]
    why = gone.json()["waves"][1]["clusters"][0]["why"]
    # which refusal the engine reports first (the provider's dial, or a plugin's gRPC) is not fixed
    assert why.startswith("update failed: ") and "connection refused" in why.lower(), why
    assert gone.stderr.splitlines()[-1].startswith(
        f"error: wave second failed its gate: 1 cluster(s) failed, 0 tolerated ({Q}: update failed: "
    )
    back = env.mldiag("run", "--format", "json")
    assert back.returncode == 0, back.output[-4000:]
    assert q.get("/api/v1/namespaces/ai-more")["metadata"]["name"] == "ai-more"
    env.consistent((P, Q))
    timed("api server gone and back", t0)


@contextlib.contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """`path` (a file or a directory) cannot be written, also by root (the immutable attribute)."""
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        need(chattr, "chattr (e2fsprogs) makes a path unwritable for root")
        made = subprocess.run([str(chattr), "+i", str(path)], capture_output=True, text=True)
        need(made.returncode == 0, f"chattr +i is refused here: {made.stderr.strip()}")
        try:
            yield
        finally:
            subprocess.run([str(chattr), "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield
        finally:
            path.chmod(mode)


def test_6_a_state_backend_that_cannot_be_written(env: Env) -> None:
    t0 = time.monotonic()
    stacks = env.project.root / "state" / ".pulumi" / "stacks" / "ml-diagnostics"
    env.configure(("p", "q"), p=["ai-extra"], q=["ai-extra", "ai-more", "ai-last"])
    before = env.tag(Q)
    history = len(env.project.pulumi("stack", "history", "--json", stack=Q).json())
    with unwritable(stacks / f"{Q}.pulumi-tags"):
        res = env.mldiag("run", "--format", "json")
    assert res.returncode == 3, res.output[-4000:]
    assert res.stderr.splitlines()[-1].startswith(
        f"error: wave second: the progress tag of {Q} could not be written: error: failed to save stack tags: "
    )
    assert res.stderr.splitlines()[-1].endswith("operation not permitted; nothing else was started")
    assert f"{Q} updating" not in res.stderr
    assert env.tag(Q) == before  # the record as it was, whole
    assert len(env.project.pulumi("stack", "history", "--json", stack=Q).json()) == history  # no update ran

    done = env.mldiag("run", "--format", "json")
    assert done.returncode == 0, done.output[-4000:]
    env.consistent((P, Q))
    timed("backend unwritable", t0)
