"""A wave's gate as a stack (program/fleet_gate.py): its config entry checked with key paths; health polled up to
verifyWait inside the update, the soak counted from the members' last update, the tolerance, the approval of
the wave's revision; what it checked as its output. The members' health comes from a scripted probe on a
simulated clock here, from their state through the Pulumi CLI below, and on the real engine in
tests/e2e/test_fleet_pko.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dev.fakes import state as fake_state
from dev.fakes.fleet import SimulatedClock
from program import fleet_gate
from program.config_base import ConfigError
from program.fleet_gate import Gate, GateFailed, GateMember, Health

T0 = 1_800_000_000.0
REV = "0123456789abcdef"
A = GateMember("acme/ml-diagnostics/prod.k8s-a", "kubernetesClusters/a")
B = GateMember("acme/ml-diagnostics/prod.k8s-b", "kubernetesClusters/b")


class Script:
    """Each member's health, pass by pass (the last repeats)."""

    def __init__(self, passes: dict[GateMember, list[bool]], updated_at: float = T0) -> None:
        self.passes, self.updated_at = passes, updated_at
        self.asked: list[GateMember] = []

    def health(self, member: GateMember) -> Health:
        n = sum(1 for m in self.asked if m == member)
        self.asked.append(member)
        seq = self.passes.get(member, [True])
        ok = seq[min(n, len(seq) - 1)]
        return Health(ok, [] if ok else [f"{member.target} diagon.ready: 0 of 3 pods ready"], self.updated_at)


def gate(**changes: Any) -> Gate:
    return Gate(
        **{
            "fleet": "fleet/prod.yaml",
            "environment_stack": "prod",
            "wave": "main",
            "revision": REV,
            "members": (A, B),
            "verify_wait": 60,
            "verify_interval": 15,
            **changes,
        }
    )


def test_a_wave_not_healthy_yet_is_waited_for_inside_the_update() -> None:
    clock = SimulatedClock(T0)
    probe = Script({B: [False, False, True]})
    outcome = fleet_gate.check(gate(), probe, clock)
    assert clock.slept == [15, 15]
    assert outcome.unhealthy() == []
    assert outcome.to_json() == {
        "fleet": "fleet/prod.yaml",
        "wave": "main",
        "revision": REV,
        "members": [
            {"stack": A.stack, "target": A.target, "healthy": True, "failing": []},
            {"stack": B.stack, "target": B.target, "healthy": True, "failing": []},
        ],
        "unhealthy": 0,
        "failureTolerance": 0,
        "soakedUntil": None,
        "approval": False,
        "approvedRevision": None,
    }


def test_more_unhealthy_members_than_the_tolerance_fail_the_gate_naming_them() -> None:
    clock = SimulatedClock(T0)
    with pytest.raises(GateFailed) as e:
        fleet_gate.check(gate(), Script({B: [False]}), clock)
    assert str(e.value) == (
        "wave main of fleet/prod.yaml failed its gate after 60s of verify: 1 member(s) unhealthy, 0 tolerated: "
        "kubernetesClusters/b (acme/ml-diagnostics/prod.k8s-b): kubernetesClusters/b diagon.ready: 0 of 3 pods ready"
    )
    assert sum(clock.slept) == 60  # it waited verifyWait, polling every verifyInterval
    outcome = fleet_gate.check(gate(failure_tolerance=1), Script({B: [False]}), SimulatedClock(T0))
    assert outcome.to_json()["unhealthy"] == 1  # tolerated


def test_the_soak_counts_from_the_last_member_update_and_verifies_once_more() -> None:
    clock = SimulatedClock(T0 + 100)
    probe = Script({B: [True, False]}, updated_at=T0)
    with pytest.raises(GateFailed, match=r"failed its gate after the soak: 1 member\(s\) unhealthy"):
        fleet_gate.check(gate(soak=900), probe, clock)
    assert clock.slept == [800]
    # a soak that is over already (a rerun, the members unchanged): no wait
    clock = SimulatedClock(T0 + 5000)
    outcome = fleet_gate.check(gate(soak=900), Script({}, updated_at=T0), clock)
    assert (clock.slept, outcome.soaked_until) == ([], T0 + 900)


def test_a_wave_that_needs_approval_passes_only_once_its_revision_is_approved() -> None:
    with pytest.raises(GateFailed) as e:
        fleet_gate.check(gate(approval=True), Script({}), SimulatedClock(T0))
    assert str(e.value) == (
        f"wave main of fleet/prod.yaml is healthy; it waits for approval of revision {REV}: add `{{wave: main, "
        f"revision: {REV}}}` to fleet/prod.approvals.yaml, then write and apply the operator's objects again "
        "(`mldiag fleet pko`)"
    )
    with pytest.raises(GateFailed):  # an approval of another revision is no approval of this one
        fleet_gate.check(gate(approval=True, approved_revision="f" * 16), Script({}), SimulatedClock(T0))
    assert fleet_gate.check(gate(approval=True, approved_revision=REV), Script({}), SimulatedClock(T0))


def raw(value: Any) -> dict[str, str]:
    return {fleet_gate.KEY: json.dumps(value)}


def test_the_config_entry_is_checked_with_key_paths() -> None:
    good = {
        "fleet": "fleet/prod.yaml",
        "environmentStack": "prod",
        "wave": "main",
        "revision": REV,
        "members": [{"stack": A.stack, "target": A.target}],
        "soak": 900,
        "approval": True,
    }
    assert fleet_gate.parse(raw(good)) == Gate(
        "fleet/prod.yaml", "prod", "main", REV, (A,), soak=900, approval=True
    )
    with pytest.raises(ConfigError) as e:
        fleet_gate.parse(
            raw({**good, "revision": "latest", "members": [{"stack": "a b"}], "soak": -1, "extra": 1})
        )
    assert e.value.problems == [
        "ml-diagnostics:fleetGate.extra: unknown key; allowed keys: fleet, environmentStack, wave, revision, members, "
        "failureTolerance, soak, verifyWait, verifyInterval, approval, approvedRevision",
        "ml-diagnostics:fleetGate.revision: must be a wave revision, 16 hexadecimal digits (`mldiag fleet plan`)",
        "ml-diagnostics:fleetGate.members[0]: must be a map of stack and target",
        "ml-diagnostics:fleetGate.soak: must be a whole number from 0 to 604800",
    ]
    with pytest.raises(ConfigError) as e:
        fleet_gate.parse(raw("prod"))
    assert e.value.problems == [
        "ml-diagnostics:fleetGate: must be a map with fleet, environmentStack, wave, revision, members"
    ]


def test_a_members_health_comes_from_its_state_through_the_pulumi_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = {
        "version": 3,
        "deployment": {"manifest": {"time": "2027-01-15T08:00:00.123456789Z"}, "resources": []},
    }
    fake_state.fake_pulumi(tmp_path / "bin", {A.stack: empty})
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    probe = fleet_gate.StateProbe(tmp_path)
    assert probe.health(A) == Health(
        False, ["its stack holds no ml-diagnostics component"], 1800000000.123456
    )
    (missing,) = probe.health(B).failing
    assert missing.startswith("its state could not be read: `pulumi stack export --show-secrets --stack ")
    assert "no stack named 'acme/ml-diagnostics/prod.k8s-b' found" in missing
