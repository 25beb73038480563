"""The fleet as the Pulumi Kubernetes Operator's Stacks (mldiag/fleet/pko.py, `mldiag fleet pko`): a Stack per
member holding its member config, its secrets by reference only, waves as prerequisites through each wave's
gate stack, maxParallel as lanes, approvals from git. The operator's own schemas accept them in
tests/e2e/test_fleet_pko.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.bench.fleet import write_project
from mldiag.common import ROOT
from mldiag.fleet import cli, pko
from mldiag.fleet.planner import load
from program import fleet_gate, fleet_member
from tests.fixtures.pko_graph import check_graph

SOURCE = pko.Source("https://github.com/acme/ml-diagnostics.git", commit="0" * 40)
ACCESS = pko.Access(access_token_secret="pulumi-api", passphrase_secret="pulumi-passphrase")


def prod_objects(approvals: dict[str, str] | None = None) -> tuple[Any, list[dict[str, Any]]]:
    plan = load(ROOT / "fleet" / "prod.yaml", ROOT)
    plan = type(plan)(**{**plan.__dict__, "organization": "acme"})
    made = pko.objects(plan, "fleet/prod.yaml", SOURCE, ACCESS, approvals or {})
    return plan, made


def test_each_member_is_a_stack_holding_its_member_config_and_its_secrets_by_reference() -> None:
    plan, made = prod_objects()
    objs = {o["metadata"]["name"]: o for o in made.all()}
    onprem = objs["prod-k8s-onprem-prod"]
    spec = onprem["spec"]
    assert spec["stack"] == "acme/ml-diagnostics/prod.k8s-onprem-prod"
    assert (spec["projectRepo"], spec["commit"]) == (SOURCE.repo, SOURCE.commit)
    assert (spec["serviceAccountName"], spec["destroyOnFinalize"]) == ("pulumi", False)
    assert spec["envRefs"] == {
        "PULUMI_ACCESS_TOKEN": {"type": "Secret", "secret": {"name": "pulumi-api", "key": "accessToken"}},
        "PULUMI_CONFIG_PASSPHRASE": {
            "type": "Secret",
            "secret": {"name": "pulumi-passphrase", "key": "passphrase"},
        },
    }
    assert spec["secretsProvider"] == "passphrase"
    member = next(m for m in plan.members if m.name == "onprem-prod")
    written = fleet_member.derive(
        plan.source.written,  # type: ignore[union-attr]
        fleet_member.FleetMember("prod", member.kind, member.name, member.index, plan.validated),
    )
    secret_key = "ml-diagnostics:fleetSecret.kubernetesClusters[0].kubeconfig"
    assert spec["config"] == {k: v for k, v in written.items() if k != secret_key}
    assert spec["secretsRef"] == {
        secret_key: {
            "type": "Secret",
            "secret": {"name": "prod-k8s-onprem-prod-secrets", "key": "kubeconfig"},
        }
    }
    assert made.secrets == {
        "prod-azureml-aks-prod-secrets": ["inference.sslCertPem", "inference.sslKeyPem"],
        "prod-k8s-onprem-prod-secrets": ["kubeconfig"],
    }
    # never a plaintext value, nor a ciphertext the workspace cannot decrypt
    text = yaml.safe_dump_all(made.all())
    assert "secure" not in text and "v1:" not in text


def test_waves_are_prerequisites_through_each_waves_gate_stack() -> None:
    plan, made = prod_objects()
    graph = check_graph(plan, made.all())
    assert graph == {
        "prod-k8s-onprem-prod": set(),
        "prod-gate-1-canary": {"prod-k8s-onprem-prod"},
        "prod-gke-prod-tpu": {"prod-gate-1-canary"},
        "prod-mdc-train": {"prod-gate-1-canary"},
        "prod-gate-2-main": {"prod-gke-prod-tpu", "prod-mdc-train"},
        "prod-azureml-aks-prod": {"prod-gate-2-main"},
        "prod-gate-3-last": {"prod-azureml-aks-prod"},
    }
    gate = next(o for o in made.all() if o["metadata"]["name"] == "prod-gate-2-main")
    main = plan.waves[1]
    assert gate["spec"]["config"] == {
        fleet_gate.KEY: {
            "fleet": "fleet/prod.yaml",
            "environmentStack": "prod",
            "wave": "main",
            "revision": main.revision,
            "members": [
                {"stack": "acme/ml-diagnostics/prod.gke-prod-tpu", "target": "gkeClusters/prod-tpu"},
                {"stack": "acme/ml-diagnostics/prod.mdc-train", "target": "modelDevelopmentClusters/train"},
            ],
            "failureTolerance": 0,
            "soak": 900,
            "verifyWait": 600,
            "verifyInterval": 15,
            "approval": True,
        }
    }
    assert gate["spec"]["retryMaxBackoffDurationSeconds"] == 600
    # the gate's config is one the program takes
    assert (
        fleet_gate.parse({fleet_gate.KEY: json.dumps(gate["spec"]["config"][fleet_gate.KEY])}).wave == "main"
    )


def test_an_approval_in_git_of_the_waves_revision_reaches_its_gate(tmp_path: Path) -> None:
    plan, _ = prod_objects()
    main = plan.waves[1].revision
    approvals = tmp_path / "prod.approvals.yaml"
    approvals.write_text(
        f"approvals:\n  - {{wave: main, revision: '{main}', by: alice}}\n  - {{wave: last, revision: '{'0' * 16}'}}\n"
    )
    _, made = prod_objects(pko.read_approvals(approvals))
    gates = {
        o["spec"]["config"][fleet_gate.KEY]["wave"]: o
        for o in made.all()
        if o["metadata"]["labels"]["ml-diagnostics.dev/role"] == "gate"
    }
    assert gates["main"]["spec"]["config"][fleet_gate.KEY]["approvedRevision"] == main
    assert "approvedRevision" not in gates["last"]["spec"]["config"][fleet_gate.KEY]  # another revision's
    approvals.write_text("approvals:\n  - {wave: main, revision: latest}\n")
    with pytest.raises(pko.PkoError) as e:
        pko.read_approvals(approvals)
    assert str(e.value) == (
        f"{approvals}: approvals[0]: must be {{wave: NAME, revision: 16 hexadecimal digits, by: WHO}} (the revision "
        "`mldiag fleet plan` prints for the wave, in quotes when it is all digits)"
    )


def test_a_waves_maxparallel_is_lanes_of_prerequisites_at_1000_clusters(tmp_path: Path) -> None:
    fleet = write_project(tmp_path, 1_000)
    plan = load(fleet, tmp_path)
    plan = type(plan)(**{**plan.__dict__, "organization": "acme"})
    made = pko.objects(plan, "fleet/bench.yaml", SOURCE, pko.Access(), {})
    objs = made.all()
    assert len(objs) == 1_004
    graph = check_graph(plan, objs)
    rest = [
        o["metadata"]["name"]
        for o in objs
        if o["metadata"]["labels"]["ml-diagnostics.dev/wave"] == "rest"
        and o["metadata"]["labels"]["ml-diagnostics.dev/role"] == "member"
    ]
    assert graph[rest[25]] == {"prod-gate-3-main".replace("prod", "bench"), rest[5]}  # 20 lanes
    assert graph[rest[5]] == {"bench-gate-3-main"}


@pytest.mark.parametrize(
    ("stack", "name"),
    [
        ("prod.k8s-onprem-prod", "prod-k8s-onprem-prod"),
        ("Prod_EU.k8s-a", "prod-eu-k8s-a-"),
        ("9lives.k8s-" + "x" * 40, "s-9lives-k8s-xxxxxxxxxxxxxxxxxxxx-"),
    ],
)
def test_object_names_are_dns_labels_short_enough_for_the_operators_workspaces(stack: str, name: str) -> None:
    got = pko.object_name(stack)
    assert got.startswith(name) and len(got) <= 42
    assert got == pko.object_name(stack)


def test_the_command_writes_checks_and_refuses_an_uncommitted_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    shutil.copytree(
        ROOT,
        project,
        ignore=shutil.ignore_patterns(".git", ".venv", "node_modules", "__pycache__", ".*cache"),
    )
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    subprocess.run(
        [*git, "remote", "add", "origin", "https://github.com/acme/ml-diagnostics.git"], check=True
    )
    out = tmp_path / "objects"
    args = ["pko", str(project / "fleet" / "prod.yaml"), "--output", str(out), "--project-dir", str(project)]
    assert cli.main([*args, "--organization", "acme"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "01-canary.yaml",
        "02-main.yaml",
        "03-last.yaml",
        "kustomization.yaml",
    ]
    assert cli.main([*args, "--organization", "acme", "--check"]) == 0
    (out / "02-main.yaml").write_text("# edited\n")
    capsys.readouterr()
    assert cli.main([*args, "--organization", "acme", "--check"]) == 1
    assert "not the generated objects: 02-main.yaml" in capsys.readouterr().err
    assert cli.main(args) == 2
    assert "set `organization` in the fleet file, or pass --organization" in capsys.readouterr().err
    (project / "program" / "extra.py").write_text("# not committed\n")
    assert cli.main([*args, "--organization", "acme"]) == 2
    assert capsys.readouterr().err.startswith("error: program/extra.py: not as at commit ")
    # the picture needs neither a remote nor a committed program
    subprocess.run([*git, "remote", "remove", "origin"], check=True)
    picture = [
        "pko",
        str(project / "fleet" / "prod.yaml"),
        "--format",
        "mermaid",
        "--project-dir",
        str(project),
    ]
    assert cli.main([*picture, "--organization", "acme"]) == 0
    drawn = capsys.readouterr().out
    assert drawn.startswith("flowchart LR\n") and '{{"prod-gate-2-main<br/>' in drawn


def test_the_prerequisite_graph_is_a_picture_mermaid_parses(
    tmp_path: Path, mermaid_parse: Callable[[list[str]], list[dict[str, Any]]]
) -> None:
    _, prod = prod_objects()
    plan = load(write_project(tmp_path, 1_000), tmp_path)
    plan = type(plan)(**{**plan.__dict__, "organization": "acme"})
    big = pko.objects(plan, "fleet/bench.yaml", SOURCE, pko.Access(), {})
    small, large = mermaid_parse([pko.mermaid(prod), pko.mermaid(big)])
    assert small["ok"] and large["ok"], (small.get("error"), large.get("error"))
    assert (small["subgraphs"], large["subgraphs"]) == (3, 4)
    # a wave shows its first members, the lanes among them, and counts the rest
    text = pko.mermaid(big)
    assert '    w3more["... and 588 more"]' in text
    assert len(text) < 50_000  # Mermaid's limit
