"""The fleet file and the plan it makes: every problem at once with its key path, exit 2, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldiag.common import ROOT
from mldiag.fleet import model, planner
from mldiag.fleet.model import FleetError, Tolerance, parse_duration
from mldiag.fleet.planner import EnvironmentError, EnvTarget, resolve

K8S, GKE, MDC = "kubernetesClusters", "gkeClusters", "modelDevelopmentClusters"


def fleet_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str, targets: list[EnvTarget] | None = None) -> list[str]:
    with pytest.raises(FleetError) as e:
        fleet = model.read(fleet_file(tmp_path, text))
        resolve(fleet, "prod", targets or TARGETS)
    return e.value.problems


TARGETS = [
    EnvTarget(K8S, "onprem", "k8s", {}),
    EnvTarget(K8S, "lab", "k8s", {}),
    EnvTarget(GKE, "tpu", "gke", {}),
    EnvTarget(GKE, "train", "gke", {}),
    EnvTarget(MDC, "train", "mdc", {}),
]


def test_the_shipped_prod_fleet_plans_its_four_clusters_in_three_waves() -> None:
    plan = planner.load(ROOT / "fleet" / "prod.yaml", ROOT)
    assert [(w.name, [m.stack for m in w.members]) for w in plan.waves] == [
        ("canary", ["prod.k8s-onprem-prod"]),
        ("main", ["prod.gke-prod-tpu", "prod.mdc-train"]),
        ("last", ["prod.azureml-aks-prod"]),
    ]
    canary, main, last = plan.waves
    assert (canary.max_parallel, canary.tolerance, canary.soak, canary.gate.approval) == (1, 0, 1800, False)
    assert (main.max_parallel, main.soak, main.gate.approval, main.gate.verify_wait) == (2, 900, True, 600)
    assert (last.soak, last.gate.verify_interval) == (0, 15)
    assert all(len(m.revision) == 12 for m in plan.members)
    assert plan.members[0].labels == {"kind": K8S, "ring": "canary"}


def test_waves_by_name_kind_name_and_label_in_order(tmp_path: Path) -> None:
    fleet = model.read(
        fleet_file(
            tmp_path,
            "environment: prod\nlabels:\n  onprem: {ring: canary}\n  lab: {ring: canary}\n  tpu: {tier: a}\n"
            "waves:\n  - name: one\n    targets: [lab]\n    selector: {ring: canary}\n"
            "  - name: two\n    targets: [gkeClusters/train, modelDevelopmentClusters/train]\n    failureTolerance: 50%\n"
            "    maxParallel: 2\n  - name: three\n    selector: {kind: gkeClusters, tier: a}\n    soak: 1h30m\n",
        )
    )
    plan = resolve(fleet, "prod", TARGETS)
    assert [[m.ref for m in w.members] for w in plan.waves] == [
        [f"{K8S}/lab", f"{K8S}/onprem"],
        [f"{GKE}/train", f"{MDC}/train"],
        [f"{GKE}/tpu"],
    ]
    assert [w.tolerance for w in plan.waves] == [0, 1, 0]
    assert plan.waves[2].soak == 5400
    assert plan.waves[1].describe_gate() == "verify (wait 10m), tolerate 1 failed (50%)"


def test_a_target_in_two_waves_an_empty_wave_a_large_tolerance_and_an_unknown_target(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "environment: prod\nlabels:\n  onprem: {ring: canary}\n"
        "waves:\n"
        "  - name: one\n    targets: [onprem, lab]\n    failureTolerance: 3\n"
        "  - name: two\n    selector: {ring: canary}\n"
        "  - name: three\n    selector: {ring: nowhere}\n"
        "  - name: four\n    targets: [tpuu, train, gkeClusters/train, modelDevelopmentClusters/train]\n",
    )
    assert found == [
        "waves[0].failureTolerance: 3 is larger than the wave (2 cluster(s): onprem, lab); allowed: 0 to 2, or a "
        'percentage ("25%")',
        "waves[1].selector: kubernetesClusters/onprem is already in wave 'one'; a target is in one wave only",
        "waves[2].selector: {ring: nowhere} selects no target; the targets' labels: onprem {kind: kubernetesClusters, "
        "ring: canary}; lab {kind: kubernetesClusters}; tpu {kind: gkeClusters}; train {kind: gkeClusters}; "
        "train {kind: modelDevelopmentClusters}",
        "waves[3].targets[0]: unknown target 'tpuu' (did you mean 'tpu'?); the targets of prod: kubernetesClusters/onprem, "
        "kubernetesClusters/lab, gkeClusters/tpu, gkeClusters/train, modelDevelopmentClusters/train",
        "waves[3].targets[1]: 'train' is ambiguous: write one of gkeClusters/train, modelDevelopmentClusters/train",
        "waves: gkeClusters/tpu is in no wave; every target of prod must be in exactly one (name it in a wave's targets "
        "or give it a label a selector matches)",
    ]


def test_the_file_itself_key_paths_allowed_values_and_near_misses(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "environment: prod.x\nlabel: {}\ndefaults:\n  soak: 10 minutes\n  maxParalel: 2\n"
        "waves:\n"
        "  - name: Canary\n    targets: [onprem]\n    maxParallel: 0\n    failureTolerance: 120%\n"
        "    gate: {verifyWait: forever, approval: 'yes', retries: 2}\n"
        "  - name: two\n"
        "  - {name: three, selector: {}, failureTolerance: -1}\n"
        "  - name: two\n    targets: lab\n",
    )
    assert found == [
        "label: unknown key (did you mean 'labels'?); allowed keys: environment, organization, policyPack, labels, "
        "defaults, waves",
        "environment: 'prod.x' is not an environment stack name: letters, digits, '_' and '-', at most 60 (a '.' would "
        "be read as a member stack)",
        "defaults.maxParalel: unknown key (did you mean 'maxParallel'?); allowed keys: maxParallel, failureTolerance, "
        "soak, gate",
        "defaults.soak: '10 minutes' is not a duration like 90s, 10m, 1h30m or 2d, or a number of seconds (at most 7d)",
        "waves[0].name: 'Canary' is not allowed: must be 1-40 lowercase letters, digits and '-', starting with a "
        "letter and not ending with '-'",
        "waves[0].maxParallel: 0 is out of range: from 1 to 1000",
        "waves[0].failureTolerance: 120% is more than 100%",
        "waves[0].gate.retries: unknown key; allowed keys: verify, verifyWait, verifyInterval, approval",
        "waves[0].gate.verifyWait: 'forever' is not a duration like 90s, 10m, 1h30m or 2d, or a number of seconds "
        "(at most 7d)",
        "waves[0].gate.approval: must be true or false",
        "waves[1]: selects nothing: give targets (names) or a selector (labels), or both",
        "waves[2].selector: an empty selector would select every target; name the labels",
        "waves[2].failureTolerance: -1 is negative: a count of clusters (0, 1, ...) or a percentage of the wave "
        '("25%")',
        "waves[3].name: duplicate wave name 'two' (also waves[1].name)",
        "waves[3].targets: must be a non-empty list of target names (or kind/name)",
    ]


def test_unreadable_files_name_the_line(tmp_path: Path) -> None:
    assert problems(tmp_path, "environment: prod\nwaves:\n  - name: a\n    name: b\n") == [
        "line 4: duplicate key 'waves[0].name' (first at line 3)"
    ]
    assert problems(tmp_path, "waves: [\n") == [
        "line 2: not valid YAML: the file ends inside a flow collection: a '[' or '{' is not closed"
    ]
    assert problems(tmp_path, "- a\n") == ["(file): must be a map with environment: and waves:"]
    assert (
        problems(
            tmp_path, "environment: prod\nlabels:\n  onprem: {kind: x}\nwaves:\n  - {name: a, targets: [x]}\n"
        )[0]
        == "labels.onprem.kind: 'kind' is a built-in label (the target's kind); use another key"
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("10m", 600),
        ("1h30m", 5400),
        ("2d", 172800),
        (45, 45),
        ("0s", 0),
        ("8d", None),
        ("1.5h", None),
        (True, None),
    ],
)
def test_durations(text: object, seconds: int | None) -> None:
    assert parse_duration(text) == seconds


def test_tolerance_percentages_round_down() -> None:
    assert [Tolerance(count=None, percent=25).of(n) for n in (1, 3, 4, 10)] == [0, 0, 1, 2]
    assert Tolerance(count=2).of(10) == 2


def test_an_invalid_environment_stack_file_stops_the_plan(tmp_path: Path) -> None:
    (tmp_path / "stacks").mkdir()
    (tmp_path / "Pulumi.yaml").write_text("name: ml-diagnostics\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "stacks" / "Pulumi.prod.yaml").write_text(
        "config:\n  ml-diagnostics:environment: production\n  ml-diagnostics:kubernetesClusters:\n    - name: a\n      context: a\n"
    )
    path = fleet_file(tmp_path, "environment: prod\nwaves:\n  - {name: one, targets: [a]}\n")
    with pytest.raises(EnvironmentError) as e:
        planner.load(path, tmp_path)
    assert "ml-diagnostics:environment: must be one of 'dev', 'staging' or 'prod'" in str(e.value)
    with pytest.raises(EnvironmentError, match="Pulumi.nosuch.yaml does not exist"):
        planner.load(
            fleet_file(tmp_path, "environment: nosuch\nwaves:\n  - {name: one, targets: [a]}\n"), tmp_path
        )


def test_revisions_change_only_for_the_target_whose_entry_changed(tmp_path: Path) -> None:
    program = "p"
    written = {
        "ml-diagnostics:environment": "prod",
        "ml-diagnostics:kubernetesClusters": [{"name": "a"}, {"name": "b"}],
    }
    a, b = (EnvTarget(K8S, n, "k8s", {"name": n}) for n in "ab")
    before = (planner.member_revision(program, written, a), planner.member_revision(program, written, b))
    b2 = EnvTarget(K8S, "b", "k8s", {"name": "b", "context": "new"})
    after = (planner.member_revision(program, written, a), planner.member_revision(program, written, b2))
    assert before[0] == after[0] and before[1] != after[1]
    assert planner.member_revision("other program", written, a) != before[0]
    shared = {**written, "ml-diagnostics:googleApi": {"quotaProject": "x"}}
    assert planner.member_revision(program, shared, a) != before[0]
