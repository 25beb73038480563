"""The rollout's waves and gates with the simulated executor and clock (dev/fakes/fleet.py): tolerance,
soak, approval, resume after a crash or a failed gate, lock conflicts, the lease, gate timeouts."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dev.fakes.fleet import Script, SimulatedClock, SimulatedCrash, SimulatedExecutor
from mldiag.fleet import model, progress
from mldiag.fleet.planner import EnvTarget, Plan, resolve
from mldiag.fleet.progress import Record
from mldiag.fleet.rollout import Options, Rollout

K8S = "kubernetesClusters"
T0 = 1_800_000_000.0


def make_plan(tmp_path: Path, waves: str, names: str = "abcdef", revision: str = "r1") -> Plan:
    path = tmp_path / "fleet.yaml"
    path.write_text(f"environment: prod\nwaves:\n{waves}")
    targets = [EnvTarget(K8S, n, "k8s", {}) for n in names]
    return resolve(model.read(path), "prod", targets, {(K8S, n): revision for n in names})


def stack(name: str) -> str:
    return f"prod.k8s-{name}"


def run(plan: Plan, sim: SimulatedExecutor, clock: SimulatedClock, **options: object):
    return Rollout(plan, sim, clock, Options(**options)).run()  # type: ignore[arg-type]


def states(sim: SimulatedExecutor) -> dict[str, str]:
    return {s: Record.decode(t).state for s, t in sorted(sim.tags.items())}  # type: ignore[union-attr]


TWO_WAVES = (
    "  - {name: one, targets: [a, b, c, d], failureTolerance: 1, gate: {verifyWait: 60s, verifyInterval: 10s}}\n"
    "  - {name: two, targets: [e, f]}\n"
)


def test_a_failure_inside_the_tolerance_does_not_stop_its_wave_or_the_next(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, TWO_WAVES)
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("b"): Script(deploy=["fail"])}, clock)
    report = run(plan, sim, clock)
    assert (report.exit_code, report.message) == (0, "every wave passed")
    assert sim.deployed() == [stack(n) for n in "abcdef"]
    assert states(sim) == {**{stack(n): "verified" for n in "acdef"}, stack("b"): "failed"}
    assert (
        Record.decode(sim.tags[stack("b")]).why == "update failed: simulated: the update of prod.k8s-b failed"
    )  # type: ignore[union-attr]
    assert [w.status for w in report.waves] == ["passed", "passed"]


def test_a_failure_over_the_tolerance_stops_the_wave_and_the_next_never_starts(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, TWO_WAVES)
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("a"): Script(deploy=["fail"]), stack("b"): Script(checks=[False])}, clock)
    report = run(plan, sim, clock)
    assert report.exit_code == 1
    assert sim.deployed() == [stack("a"), stack("b")]  # c and d never start, nor wave two
    assert set(sim.tags) == {stack("a"), stack("b")}
    assert report.message == (
        "wave one failed its gate: 2 cluster(s) failed, 1 tolerated (prod.k8s-a: update failed: simulated: the update "
        "of prod.k8s-a failed; prod.k8s-b: verify did not pass within 1m (7 check(s)): kubernetesClusters/b "
        "simulated.check: not ready); not updated: prod.k8s-c, prod.k8s-d; the next wave was not started; fix the cause "
        "and rerun to resume this wave"
    )
    assert [(o.member.name, o.state) for o in report.waves[0].members] == [
        ("a", "failed"),
        ("b", "failed"),
        ("c", "not started"),
        ("d", "not started"),
    ]
    assert [w.status for w in report.waves] == ["failed", "not started"]


def test_a_gate_that_times_out_polls_every_interval_until_the_wait_is_over(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, "  - {name: one, targets: [a], gate: {verifyWait: 60s, verifyInterval: 25s}}\n", "a"
    )
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("a"): Script(checks=[False])}, clock)
    report = run(plan, sim, clock)
    assert report.exit_code == 1
    assert clock.slept == [25, 25, 10]  # the last pause ends at the deadline
    assert sim.calls.count(("check", stack("a"))) == 4
    assert Record.decode(sim.tags[stack("a")]).why == (  # type: ignore[union-attr]
        "verify did not pass within 1m (4 check(s)): kubernetesClusters/a simulated.check: not ready"
    )


def test_a_gate_that_passes_late_passes(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, "  - {name: one, targets: [a], gate: {verifyWait: 60s, verifyInterval: 25s}}\n", "a"
    )
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("a"): Script(checks=[False, False, True])}, clock)
    assert run(plan, sim, clock).exit_code == 0
    assert clock.slept == [25, 25]


def test_soak_waits_after_the_last_pass_then_verifies_again(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, "  - {name: one, targets: [a, b], soak: 10m}\n  - {name: two, targets: [c]}\n", "abc"
    )
    clock = SimulatedClock()
    sim = SimulatedExecutor(
        {stack("a"): Script(deploy_seconds=40), stack("b"): Script(deploy_seconds=20)}, clock
    )
    report = run(plan, sim, clock)
    assert report.exit_code == 0
    assert sum(clock.slept) == 40 + 20 + 600
    one = [c for c in sim.calls if c[0] in ("deploy", "check")]
    assert one[:6] == [
        ("deploy", stack("a")),
        ("check", stack("a")),
        ("deploy", stack("b")),
        ("check", stack("b")),
        ("check", stack("a")),  # after the soak
        ("check", stack("b")),
    ]
    assert Record.decode(sim.tags[stack("a")]).soaked == T0 + 660  # type: ignore[union-attr]
    assert report.waves[0].soak_seconds == 600
    assert report.ideal_seconds == 40 + 600 + 0  # wave one's slowest (a) plus its soak; wave two's c takes 0


def test_a_cluster_failing_after_the_soak_fails_the_wave(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, "  - {name: one, targets: [a], soak: 5m}\n  - {name: two, targets: [b]}\n", "ab"
    )
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("a"): Script(checks=[True, False])}, clock)
    report = run(plan, sim, clock)
    assert report.exit_code == 1
    assert sim.deployed() == [stack("a")]
    assert Record.decode(sim.tags[stack("a")]).why == (  # type: ignore[union-attr]
        "verify failed after the soak: kubernetesClusters/a simulated.check: not ready"
    )


def test_a_crash_mid_wave_resumes_at_the_unfinished_clusters(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path, "  - {name: one, targets: [a, b, c], soak: 1m}\n  - {name: two, targets: [d]}\n", "abcd"
    )
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("b"): Script(deploy=["crash", "ok"])}, clock)
    with pytest.raises(SimulatedCrash):
        run(plan, sim, clock)
    assert states(sim) == {stack("a"): "verified", stack("b"): "deploying"}
    # The process died holding the lease: a lease of a process of this host that is gone.
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    sim.lease = progress.lease_value(
        progress.Holder("gone", socket.gethostname(), int(gone.stdout)), T0, 3600
    )
    sim.calls.clear()
    report = run(plan, sim, clock)
    assert report.exit_code == 0
    assert sim.deployed() == [stack("b"), stack("c"), stack("d")]  # a was done
    assert states(sim) == {stack(n): "verified" for n in "abcd"}
    assert sim.lease is None  # given back


def test_a_failed_gate_resumes_after_the_fix_without_redoing_what_passed(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a, b]}\n  - {name: two, targets: [c]}\n", "abc")
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("b"): Script(checks=[False] * 62 + [True])}, clock)
    assert run(plan, sim, clock).exit_code == 1
    assert sim.deployed() == [stack("a"), stack("b")]
    sim.calls.clear()
    report = run(plan, sim, clock)
    assert report.exit_code == 0
    assert sim.deployed() == [stack("b"), stack("c")]
    assert [w.status for w in report.waves] == ["passed", "passed"]
    sim.calls.clear()
    again = run(plan, sim, clock)  # everything done: nothing runs
    assert (again.exit_code, sim.deployed()) == (0, [])
    assert [w.status for w in again.waves] == ["done earlier", "done earlier"]


def test_a_new_revision_reruns_only_the_clusters_it_changes(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a, b]}\n  - {name: two, targets: [c]}\n", "abc")
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    assert run(plan, sim, clock).exit_code == 0
    changed = make_plan(tmp_path, "  - {name: one, targets: [a, b]}\n  - {name: two, targets: [c]}\n", "abc")
    waves = [
        type(w)(
            w.name,
            tuple(
                type(m)(m.kind, m.name, m.prefix, m.stack, m.labels, "r2" if m.name == "c" else m.revision)
                for m in w.members
            ),
            w.max_parallel,
            w.tolerance,
            w.tolerance_text,
            w.soak,
            w.gate,
        )
        for w in changed.waves
    ]
    changed = Plan(changed.fleet, "prod", "prod", None, True, tuple(waves))
    sim.calls.clear()
    assert run(changed, sim, clock).exit_code == 0
    assert sim.deployed() == [stack("c")]


def test_a_lock_conflict_stops_the_rollout_with_exit_3(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, TWO_WAVES)
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("b"): Script(deploy=["lock"])}, clock)
    report = run(plan, sim, clock)
    assert report.exit_code == 3
    assert (
        report.message == "wave one: stack prod.k8s-b is locked by another update; nothing else was started"
    )
    assert sim.deployed() == [stack("a"), stack("b")]
    assert [w.status for w in report.waves] == ["stopped", "not started"]
    assert sim.lease is None


def test_two_rollouts_of_one_environment_never_run_at_once(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a]}\n", "a")
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    sim.lease = progress.lease_value(progress.Holder("other", "ci-runner-7", 4242), T0 - 60, 3600)
    report = run(plan, sim, clock)
    assert report.exit_code == 3
    assert report.message == (
        "another rollout holds this environment: holder other on ci-runner-7 (pid 4242) since 1799999940, lease until "
        "1800003540 (unix time); wait for it, or if that run is gone, rerun with --take-over"
    )
    assert sim.deployed() == []
    assert run(plan, sim, clock, take_over=True).exit_code == 0
    sim.lease_locked = True  # another update holds the coordination stack's lock, longer than a rollout waits
    locked = run(plan, sim, clock)
    assert (locked.exit_code, locked.message) == (
        3,
        "the lease of prod could not be taken: the coordination stack stayed locked for more than 120s by another "
        "update, another rollout taking or giving back its lease; wait for it, or if that run is gone, rerun with "
        "--take-over",
    )
    assert clock.slept == [2.0] * 60  # polled every 2 s for 120 s


def test_a_coordination_stack_another_rollout_is_creating_is_read_again_a_few_times(tmp_path: Path) -> None:
    """Two rollouts started together on a file backend: the second read the coordination stack's checkpoint
    while the first was writing it. It reads again, finds the first one's lease and names it."""
    plan = make_plan(tmp_path, "  - {name: one, targets: [a]}\n", "a")
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock, lease_in_flux=2)
    sim.lease = progress.lease_value(progress.Holder("other", "ci-runner-7", 4242), T0 - 60, 3600)
    report = run(plan, sim, clock)
    assert (report.exit_code, report.message.split(":")[0]) == (3, "another rollout holds this environment")
    assert clock.slept == [2.0, 2.0] and sim.deployed() == []
    # a state that never reads whole is the backend's error, after five reads
    sim = SimulatedExecutor(clock=clock, lease_in_flux=99)
    clock.slept.clear()
    report = run(plan, sim, clock)
    assert (report.exit_code, report.message) == (
        3,
        "the lease of prod could not be taken: the lease stack prod.fleet could not be updated: failed to load "
        "checkpoint: EOF",
    )
    assert clock.slept == [2.0] * 4 and sim.lease_in_flux == 94 and sim.deployed() == []


def test_an_expired_lease_is_taken_and_a_long_rollout_renews_its_own(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a], soak: 2h}\n", "a")
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    sim.lease = progress.lease_value(progress.Holder("other", "ci-runner-7", 4242), T0 - 7200, 3600)
    assert run(plan, sim, clock).exit_code == 0
    # taken, renewed whenever less than half of its hour is left (3 times in the two hours), given back
    assert sim.calls.count(("lease", "")) == 1 + 3 + 1


def test_approval_stops_the_rollout_until_given_and_is_kept(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path,
        "  - {name: one, targets: [a], gate: {approval: true}}\n  - {name: two, targets: [b]}\n",
        "ab",
    )
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    report = run(plan, sim, clock)
    assert (report.exit_code, report.message) == (
        1,
        "wave one passed and waits for approval: rerun with --approve one",
    )
    assert sim.deployed() == [stack("a")]
    asked: list[str] = []
    report = run(plan, sim, clock, approver=lambda w: asked.append(w.name) or True)
    assert (report.exit_code, asked, sim.deployed()) == (0, ["one"], [stack("a"), stack("b")])
    assert Record.decode(sim.tags[stack("a")]).approved is not None  # type: ignore[union-attr]
    assert run(plan, sim, clock).exit_code == 0  # approved once is approved


def test_at_most_max_parallel_clusters_run_at_once(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a, b, c, d, e, f], maxParallel: 3}\n")
    clock = SimulatedClock()
    barrier = threading.Barrier(3, timeout=30)

    def first_three_meet(op: str, name: str) -> None:
        if op == "deploy" and name in (stack("a"), stack("b"), stack("c")):
            barrier.wait()  # breaks (and the test fails) unless three updates run at once

    sim = SimulatedExecutor(clock=clock, on_call=first_three_meet)
    assert run(plan, sim, clock).exit_code == 0
    assert sim.max_running <= 3
    assert sorted(sim.deployed()) == [stack(n) for n in "abcdef"]


def test_one_cluster_and_one_gate_as_the_workflow_runs_them(tmp_path: Path) -> None:
    plan = make_plan(
        tmp_path,
        "  - {name: one, targets: [a, b], soak: 5m, gate: {approval: true}}\n  - {name: two, targets: [c]}\n",
        "abc",
    )
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    c = plan.waves[1].members[0]
    early = Rollout(plan, sim, clock).run_one(c)
    assert (early.exit_code, early.message) == (
        1,
        "prod.k8s-c is in wave two; earlier wave(s) not complete: one",
    )
    for m in plan.waves[0].members:
        assert Rollout(plan, sim, clock).run_one(m).exit_code == 0
    gate = Rollout(plan, sim, clock).run_gate(plan.waves[0])
    assert (gate.exit_code, gate.message) == (0, "wave one passed; its approval is the next job")
    assert sum(clock.slept) == 300
    assert Rollout(plan, sim, clock).run_one(c).exit_code == 1  # not approved yet
    assert Rollout(plan, sim, clock).run_gate(plan.waves[0], approve=True).exit_code == 0
    assert Rollout(plan, sim, clock).run_one(c).exit_code == 0
    assert sim.deployed() == [stack("a"), stack("b"), stack("c")]
    assert Rollout(plan, sim, clock).run_one(c).message == "prod.k8s-c is verified at revision r1"


def test_records_round_trip_and_unknown_ones_count_as_nothing() -> None:
    rec = Record("abc123", "failed", "one", 17, why="a;b=c\nd" + "x" * 400)
    text = rec.encode()
    assert len(text) <= progress.MAX_TAG_CHARS
    back = Record.decode(text)
    assert back is not None and back.why.startswith("a b c d") and back.state == "failed"
    assert Record.decode("v2;rev=x") is None and Record.decode("v1;rev=x;state=odd;wave=w;at=1") is None
    assert progress.current(back, "other") is None


def test_a_lease_read_back_from_a_stack_output_has_float_numbers_and_says_them_as_integers() -> None:
    lease = {"holder": "other", "host": "ci-runner-7", "pid": 4242.0, "since": T0, "expires": T0 + 3600.0}
    with pytest.raises(progress.LeaseHeld) as e:
        progress.decide(lease, progress.Holder("me", socket.gethostname(), 1), T0 + 10, 3600)
    assert "holder other on ci-runner-7 (pid 4242) since 1800000000, lease until 1800003600" in str(e.value)


# -- a rollout killed at any moment (issue 35) ------------------------------------------------------------------
HOST = socket.gethostname()
ISO = "2027-01-15T08:00:00Z"  # T0


def gone_pid() -> int:
    """The pid of a process that ran on this host and is gone."""
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(out.stdout)


def interrupted(sim: SimulatedExecutor, name: str, by: progress.Holder, at: int = int(T0)) -> None:
    """What a rollout killed during `name`'s update leaves: its `deploying` record (and its lease)."""
    sim.tags[stack(name)] = Record("r1", "deploying", "one", at, by=by).encode()
    sim.lease = progress.lease_value(by, at, 3600)


def logged(
    plan: Plan, sim: SimulatedExecutor, clock: SimulatedClock, **options: object
) -> tuple[object, list[str]]:
    lines: list[str] = []
    report = Rollout(
        plan, sim, clock, Options(**options), log=lambda ln: lines.append(ln.split("] ", 1)[1])
    ).run()  # type: ignore[arg-type]
    return report, lines


def test_an_interrupted_update_of_a_gone_rollout_is_settled_its_stale_lock_cleared_then_resumed(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a, b]}\n", "ab")
    clock = SimulatedClock()
    dead = progress.Holder("gone0000beef", HOST, gone_pid())
    lock = progress.Lock("root", HOST, gone_pid(), ISO)
    settled = [
        "kubernetes:helm.sh/v3:Release::k8s-b-mldiag-cert-manager-release: interrupted while creating; its Helm "
        "release cert-manager/cert-manager never completed and holds nothing deployed: removed its record(s) "
        "sh.helm.release.v1.cert-manager.v1 (pending-install); the update installs it",
        "cleared 1 pending operation(s) from its state",
    ]
    sim = SimulatedExecutor({stack("b"): Script(locks=(lock,), pending=settled)}, clock)
    sim.tags[stack("a")] = Record("r1", "verified", "one", int(T0)).encode()
    interrupted(sim, "b", dead)
    report, lines = logged(plan, sim, clock)
    assert (report.exit_code, report.message) == (0, "every wave passed")
    assert lines == [
        f"lease: took over the lease of holder gone0000beef on {HOST} (pid {dead.pid}): its process is gone from this host",
        "wave one: 1 of 2 cluster(s) to update (verify (wait 10m), tolerate 0 failed)",
        f"wave one: prod.k8s-b: its update of {int(T0)} (unix time) by holder gone0000beef on {HOST} (pid {dead.pid}) "
        "was interrupted (its rollout's process is gone from this host); settling what it left",
        f"wave one: prod.k8s-b: cleared the lock of root@{HOST} (pid {lock.pid}) at {ISO}: its process is gone from "
        "this host (the interrupted update)",
        *[f"wave one: prod.k8s-b: {line}" for line in settled],
        "wave one: prod.k8s-b updating",
        "wave one: prod.k8s-b verified (0s)",
        "wave one: passed (0 failed, 0 tolerated)",
    ]
    b = [c for c in sim.calls if c[1] == stack("b") and c[0] != "read tag"]
    assert b[:4] == [("tag", stack("b")), ("locked", stack("b")), ("cancel", stack("b")), ("tag", stack("b"))]
    assert ("reconcile", stack("b")) in b and sim.deployed() == [stack("b")]
    assert states(sim) == {stack("a"): "verified", stack("b"): "verified"}


def test_the_update_of_a_rollout_that_may_still_run_is_left_alone_and_its_lock_never_touched(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a]}\n", "a")
    clock = SimulatedClock()
    other = progress.Holder("other", "ci-runner-7", 4242)
    lock = progress.Lock("ci", "ci-runner-7", 4242, ISO)
    sim = SimulatedExecutor({stack("a"): Script(locks=(lock,))}, clock)
    sim.tags[stack("a")] = Record(
        "r1", "deploying", "one", int(T0), by=other
    ).encode()  # its lease: given back
    report, lines = logged(plan, sim, clock)
    assert report.exit_code == 3
    assert lines[1] == (
        f"wave one: prod.k8s-a: its update of {int(T0)} (unix time) by holder other on ci-runner-7 (pid 4242) may "
        "still run: left alone (if that run is gone, rerun with --take-over)"
    )
    assert (
        report.message == "wave one: stack prod.k8s-a is locked by another update; nothing else was started"
    )
    assert ("cancel", stack("a")) not in sim.calls and sim.deployed() == []
    # the person says that run is gone: the lock its host took is cleared
    report, lines = logged(plan, sim, clock, take_over=True)
    assert report.exit_code == 0, report.message
    assert lines[2] == (
        f"wave one: prod.k8s-a: cleared the lock of ci@ci-runner-7 (pid 4242) at {ISO}: taken on ci-runner-7 by the "
        "interrupted update, whose rollout is gone"
    )


def test_a_lock_older_than_the_interrupted_update_is_someone_elses(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a]}\n", "a")
    clock = SimulatedClock()
    older = progress.Lock("root", HOST, gone_pid(), "2027-01-14T08:00:00Z")
    sim = SimulatedExecutor({stack("a"): Script(locks=(older,))}, clock)
    interrupted(sim, "a", progress.Holder("gone0000beef", HOST, gone_pid()))
    report, _ = logged(plan, sim, clock)
    assert (report.exit_code, ("cancel", stack("a")) in sim.calls) == (3, False)


def test_the_lease_of_a_rollout_gone_from_another_host_lets_its_locks_be_cleared_once_expired(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a]}\n", "a")
    clock = SimulatedClock()
    runner = progress.Holder("runner00", "ci-runner-7", 4242)
    sim = SimulatedExecutor(
        {stack("a"): Script(locks=(progress.Lock("ci", "ci-runner-7", 4243, ISO),))}, clock
    )
    interrupted(sim, "a", runner)
    early, _ = logged(plan, sim, clock)
    assert (early.exit_code, sim.deployed()) == (3, [])  # its lease still runs
    assert early.message.startswith("another rollout holds this environment: holder runner00 on ci-runner-7")
    clock.advance(3600)
    report, lines = logged(plan, sim, clock)
    assert report.exit_code == 0, report.message
    assert (
        lines[0]
        == "lease: took over the lease of holder runner00 on ci-runner-7 (pid 4242): it expired at 1800003600 (unix time)"
    )
    assert "its rollout's lease was taken over: it expired at 1800003600 (unix time)" in lines[2]
    assert lines[3].endswith("taken on ci-runner-7 by the interrupted update, whose rollout is gone")


def test_what_only_a_person_can_settle_stops_the_rollout_and_an_unreachable_cluster_fails_the_member(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a, b], failureTolerance: 1}\n", "ab")
    clock = SimulatedClock()
    dead = progress.Holder("gone0000beef", HOST, gone_pid())
    sim = SimulatedExecutor(
        {stack("a"): Script(pending=["unreachable:the cluster is unreachable: dial tcp"])}, clock
    )
    interrupted(sim, "a", dead)
    report, _ = logged(plan, sim, clock)
    assert report.exit_code == 0  # one failure tolerated
    assert Record.decode(sim.tags[stack("a")]).why == "update failed: the cluster is unreachable: dial tcp"  # type: ignore[union-attr]
    sim = SimulatedExecutor(
        {stack("a"): Script(pending=["refused:gcp:container/cluster:Cluster::c: check it"])}, clock
    )
    interrupted(sim, "a", dead)
    report, _ = logged(plan, sim, clock)
    assert (report.exit_code, report.message) == (
        3,
        "wave one: gcp:container/cluster:Cluster::c: check it; nothing else was started",
    )
    assert sim.deployed() == []


def test_the_coordination_stacks_lock_of_a_gone_process_is_cleared_a_live_one_waited_for(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a]}\n", "a")
    clock = SimulatedClock()
    lock = progress.Lock("root", HOST, gone_pid(), ISO)
    sim = SimulatedExecutor(clock=clock, lease_locks=(lock,))
    report, lines = logged(plan, sim, clock)
    assert report.exit_code == 0
    assert lines[0] == (
        f"lease: cleared the lock of the coordination stack held by root@{HOST} (pid {lock.pid}) at {ISO}: its "
        "process is gone from this host"
    )
    # another rollout writing its lease right now: waited for, then named
    sim.lease_locks, sim.lock_for = (progress.Lock("ci", "ci-runner-7", 4242, ISO),), 2
    sim.lease = progress.lease_value(progress.Holder("other", "ci-runner-7", 4242), clock.now(), 3600)
    clock.slept.clear()
    refused, _ = logged(plan, sim, clock)
    assert (refused.exit_code, clock.slept) == (3, [2.0, 2.0])
    assert refused.message.startswith(
        "another rollout holds this environment: holder other on ci-runner-7 (pid 4242)"
    )


def test_an_environment_deployed_by_its_own_stack_is_refused_before_anything_runs(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a]}\n", "a")
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock, own_resources=12)
    report = run(plan, sim, clock)
    assert (report.exit_code, report.message) == (
        2,
        "environment prod is deployed by its own stack (12 resource(s))",
    )
    assert sim.calls == [] and sim.lease is None and not sim.marked
    assert Rollout(plan, sim, clock).run_one(plan.members[0]).exit_code == 2


def test_rollouts_record_that_member_stacks_deploy_the_environment(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a, b]}\n", "ab")
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    assert Rollout(plan, sim, clock).run_one(plan.members[0]).exit_code == 0
    assert sim.marked and sim.calls.count(("lease", "")) == 1  # a workflow leg marks once, takes no lease
    Rollout(plan, sim, clock).run_one(plan.members[1])
    assert sim.calls.count(("lease", "")) == 1


def test_a_backend_that_cannot_be_written_stops_the_rollout_and_leaves_every_tag_as_it_was(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a]}\n  - {name: two, targets: [b]}\n", "ab")
    clock = SimulatedClock()
    sim = SimulatedExecutor({stack("b"): Script(tags="unwritable")}, clock)
    report = run(plan, sim, clock)
    assert (report.exit_code, report.message) == (
        3,
        "wave two: the progress tag of prod.k8s-b could not be written: simulated; nothing else was started",
    )
    assert sim.deployed() == [stack("a")] and stack("b") not in sim.tags and sim.lease is None
    sim = SimulatedExecutor(clock=clock, lease_unavailable=True)
    report = run(plan, sim, clock)
    assert (report.exit_code, report.message) == (
        3,
        "the lease of prod could not be taken: the lease stack prod.fleet could not be updated: simulated: operation "
        "not permitted",
    )
    assert sim.calls == [] and sim.tags == {}


def test_a_record_names_the_rollout_that_wrote_it() -> None:
    rec = Record("abc123", "deploying", "one", 17, by=progress.Holder("h1", "ci-runner-7", 42))
    assert rec.encode() == "v1;rev=abc123;state=deploying;wave=one;at=17;by=h1;host=ci-runner-7;pid=42"
    assert Record.decode(rec.encode()) == rec
    assert (
        Record.decode("v1;rev=abc123;state=deploying;wave=one;at=17;by=h1") is None
    )  # half a writer: not ours
    assert progress.locks_in(
        "error: the stack is currently locked by 2 lock(s).\n  file:///x/a.json: created by root@vm (pid 13480) at "
        "2026-12-01T22:17:25.746062832Z\n  file:///x/b.json: created by ci@ci-runner-7 (pid 4242)"
    ) == (
        progress.Lock("root", "vm", 13480, "2026-12-01T22:17:25.746062832Z"),
        progress.Lock("ci", "ci-runner-7", 4242),
    )
    assert progress.Lock("root", "vm", 1, "2027-01-15T08:00:00.5Z").since == T0 + 0.5


THREE_WAVES = (
    "  - {name: one, targets: [a]}\n  - {name: two, targets: [b, c, d]}\n  - {name: three, targets: [e, f]}\n"
)


def test_a_leg_of_a_later_wave_reads_one_mark_per_earlier_wave_not_every_members_tag(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, THREE_WAVES)
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    for wave in plan.waves[:2]:
        for m in wave.members:
            assert Rollout(plan, sim, clock).run_one(m).exit_code == 0
        assert Rollout(plan, sim, clock).run_gate(wave).exit_code == 0  # the gate marks its wave complete
    assert sorted(sim.wave_marks) == [1, 2]
    sim.calls.clear()
    e = plan.waves[2].members[0]
    assert Rollout(plan, sim, clock).run_one(e).exit_code == 0
    reads = [s for op, s in sim.calls if op == "read mark"]
    assert reads == ["1", "2"]
    assert [s for op, s in sim.calls if op == "deploy"] == [stack("e")]
    # a mark of other revisions counts as nothing: the tags decide, and the mark is written again
    changed = make_plan(tmp_path, THREE_WAVES, revision="r2")
    report = Rollout(changed, sim, clock).run_one(changed.waves[2].members[1])
    assert (report.exit_code, report.message) == (
        1,
        "prod.k8s-f is in wave three; earlier wave(s) not complete: one, two",
    )


def test_a_wave_completed_before_marks_existed_is_marked_by_the_first_leg_that_reads_its_tags(
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, THREE_WAVES)
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    assert run(plan, sim, clock).exit_code == 0
    sim.wave_marks.clear()
    sim.calls.clear()
    assert Rollout(plan, sim, clock).run_one(plan.waves[2].members[0]).exit_code == 0
    assert sorted(sim.wave_marks) == [1, 2]
    assert progress.wave_marked(sim.wave_marks[2], "two", plan.waves[1].revision)


def test_a_gate_that_may_not_wait_out_its_soak_says_when_it_ends_and_verifies_nothing(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, "  - {name: one, targets: [a, b], soak: 2d}\n", "ab")
    clock = SimulatedClock(T0)
    sim = SimulatedExecutor(clock=clock)
    for m in plan.waves[0].members:
        Rollout(plan, sim, clock).run_one(m)
    sim.calls.clear()
    report = Rollout(plan, sim, clock, Options(max_wait=4.5 * 3600)).run_gate(plan.waves[0])
    assert (report.exit_code, report.waves[0].status) == (1, "soaking")
    assert report.message == (
        f"wave one soaks until {int(T0) + 2 * 86400} (unix time), 2d from now: longer than this gate may wait "
        "(--max-wait 4h30m); nothing was verified. Run the gate again once the soak is over"
    )
    assert not [c for c in sim.calls if c[0] == "check"] and clock.slept == []
    clock.advance(2 * 86400)  # the environment's wait timer, say
    report = Rollout(plan, sim, clock, Options(max_wait=4.5 * 3600)).run_gate(plan.waves[0])
    assert (report.exit_code, report.waves[0].status) == (0, "passed")
    assert [s for op, s in sim.calls if op == "check"] == [stack("a"), stack("b")]


def test_a_rerun_of_a_finished_rollout_reads_one_mark_per_wave_and_no_members_tag(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, THREE_WAVES)
    clock = SimulatedClock()
    sim = SimulatedExecutor(clock=clock)
    assert run(plan, sim, clock).exit_code == 0
    sim.calls.clear()
    report = run(plan, sim, clock)
    assert [w.status for w in report.waves] == ["done earlier"] * 3
    assert [c for c in sim.calls if c[0] in ("read tag", "deploy", "check")] == []
    assert [s for op, s in sim.calls if op == "read mark"] == ["1", "2", "3"]
    # a member of another revision: its wave's mark counts as nothing, the tags decide, it alone is updated
    changed = make_plan(tmp_path, THREE_WAVES, revision="r1")
    changed = type(changed)(
        **{
            **changed.__dict__,
            "waves": (
                changed.waves[0],
                type(changed.waves[1])(
                    **{
                        **changed.waves[1].__dict__,
                        "members": tuple(
                            type(m)(**{**m.__dict__, "revision": "r2"}) if m.name == "c" else m
                            for m in changed.waves[1].members
                        ),
                    }
                ),
                changed.waves[2],
            ),
        }
    )
    sim.calls.clear()
    assert run(changed, sim, clock).exit_code == 0
    assert [s for op, s in sim.calls if op == "deploy"] == [stack("c")]
    assert sorted(s for op, s in sim.calls if op == "read tag") == [stack(n) for n in "bcd"]


def test_after_wave_is_called_as_each_wave_ends_and_not_for_one_never_started(tmp_path: Path) -> None:
    """`mldiag fleet run` settles the process there (planner.settle): what was deployed when it ran."""
    plan = make_plan(tmp_path, TWO_WAVES)
    clock = SimulatedClock()
    sim = SimulatedExecutor({}, clock)
    seen: list[list[str]] = []
    report = run(plan, sim, clock, after_wave=lambda: seen.append(sim.deployed()))
    assert report.exit_code == 0
    assert seen == [[stack(n) for n in "abcd"], [stack(n) for n in "abcdef"]]
    failing = SimulatedExecutor(
        {stack("a"): Script(deploy=["fail"]), stack("b"): Script(deploy=["fail"])}, clock
    )
    seen.clear()
    report = run(
        make_plan(tmp_path, TWO_WAVES, revision="r2"), failing, clock, after_wave=lambda: seen.append([])
    )
    assert (report.exit_code, len(seen)) == (1, 1)  # wave one ended (failed); wave two never started
