"""The planner's steps as `resolve` runs them: the labels section, each wave's selection and checks in wave
order, then the targets left out; members with their labels and revisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldiag.fleet.model import Fleet, FleetError, Gate, Tolerance, WaveSpec
from mldiag.fleet.planner import EnvTarget, resolve

K8S, GKE = "kubernetesClusters", "gkeClusters"
TARGETS = [
    EnvTarget(K8S, "onprem", "k8s", {}),
    EnvTarget(K8S, "lab", "k8s", {}),
    EnvTarget(GKE, "tpu", "gke", {}),
]


def wave(
    i: int,
    name: str,
    targets: tuple[str, ...] = (),
    selector: dict[str, str] | None = None,
    tolerance: int = 0,
) -> WaveSpec:
    return WaveSpec(name, targets, selector or {}, 1, Tolerance(tolerance), 0, Gate(), f"waves[{i}]")


def fleet(*waves: WaveSpec, labels: dict[str, dict[str, str]] | None = None) -> Fleet:
    return Fleet(Path("fleet.yaml"), "prod", None, True, labels or {}, waves)


def problems(f: Fleet) -> list[str]:
    with pytest.raises(FleetError) as e:
        resolve(f, "prod", TARGETS)
    return e.value.problems


def test_labels_first_then_each_wave_in_order_then_the_targets_in_no_wave() -> None:
    found = problems(
        fleet(
            wave(0, "one", ("onprem",), tolerance=2),
            wave(1, "two", ("onprem",), {"ring": "canary"}),
            labels={"onprem": {"ring": "canary"}, "nowhere": {"ring": "x"}},
        )
    )
    assert found == [
        "labels.nowhere: unknown target 'nowhere'; the targets of prod: kubernetesClusters/onprem, "
        "kubernetesClusters/lab, gkeClusters/tpu",
        "waves[0].failureTolerance: 2 is larger than the wave (1 cluster(s): onprem); allowed: 0 to 1, or a "
        'percentage ("25%")',
        # named by the wave's targets and matched by its selector: refused at both
        "waves[1].targets[0]: kubernetesClusters/onprem is already in wave 'one'; a target is in one wave only",
        "waves[1].selector: kubernetesClusters/onprem is already in wave 'one'; a target is in one wave only",
        "waves: kubernetesClusters/lab is in no wave; every target of prod must be in exactly one (name it in a "
        "wave's targets or give it a label a selector matches)",
        "waves: gkeClusters/tpu is in no wave; every target of prod must be in exactly one (name it in a wave's "
        "targets or give it a label a selector matches)",
    ]


def test_a_wave_left_with_no_target_and_no_problem_of_its_own() -> None:
    """Only a wave of an earlier wave's name gets there (the fleet file refuses such names)."""
    found = problems(fleet(wave(0, "a", ("onprem", "lab", "tpu")), wave(1, "a", ("onprem",))))
    assert found == ["waves[1]: selects no target that is not in an earlier wave"]


def test_members_named_then_selected_once_each_with_labels_and_revisions() -> None:
    plan = resolve(
        fleet(wave(0, "one", ("lab", "lab"), {"kind": K8S}), wave(1, "two", ("gkeClusters/tpu",))),
        "prod",
        TARGETS,
        {(K8S, "lab"): "r1", (GKE, "tpu"): "r3"},
    )
    assert [[(m.ref, m.stack, m.labels, m.revision) for m in w.members] for w in plan.waves] == [
        [
            (f"{K8S}/lab", "prod.k8s-lab", {"kind": K8S}, "r1"),
            (f"{K8S}/onprem", "prod.k8s-onprem", {"kind": K8S}, ""),
        ],
        [(f"{GKE}/tpu", "prod.gke-tpu", {"kind": GKE}, "r3")],
    ]
    assert plan.environment == "prod" and plan.environment_stack == "prod"
