"""Fleets on Kubernetes (docs/fleet.md, "On Kubernetes"), on one loopback cluster of their own:

- the Pulumi Kubernetes Operator's CRDs (v2.9.0, ../shared/pko/) installed in its API server, which then
  takes every Stack `mldiag fleet pko` writes for fleet/prod.yaml and for a 1,000-cluster fleet, created by
  server-side apply with strict field validation; their prerequisite graph has no cycle, no dangling name,
  every member of a wave behind every member of the wave before, names the operator can use;
- a wave's gate through the real engine: `pulumi up` of a gate stack (the program in gate mode) fails while a
  member's Diagon is not ready (a GPU node whose kubelet reports NotReady), naming the member; passes once it
  is ready; and passes again with nothing changed.

The operator itself does not run here (its Go module is not served to this machine): what it does with the
objects, prerequisites, retries and Stalled gates is read from its stack controller (mldiag/fleet/pko.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.bench.fleet import write_project
from dev.e2e.control_plane import ControlPlane
from dev.e2e.harness import REPO, Project
from dev.e2e.node_pools import NOT_READY, create_pool, gke_cpu, gke_gpu
from mldiag.fleet import pko
from mldiag.fleet.planner import load
from program import fleet_gate
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS
from tests.fixtures.pko_graph import check_graph
from tests.fixtures.tools import need
from tests.fixtures.verify import GOOD_LOG

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

NAMESPACE = "ml-fleet"
MEMBER = "organization/diagon-member/dev"
IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
MEMBER_PROGRAM = f'''\
import pulumi
import pulumi_kubernetes as k8s

from ml_diagnostics import Diagon

cluster = k8s.Provider("gke", kubeconfig=pulumi.Config().require_secret("kubeconfig"))
Diagon("profiler", {{"namespace": "profiler", "image": "{IMAGE}"}}, pulumi.ResourceOptions(providers=[cluster]))
'''
SOURCE = pko.Source(
    "https://github.com/acme/ml-diagnostics.git", commit="0123456789abcdef0123456789abcdef01234567"
)


def crds_dir() -> Path:
    """The operator's CRDs, from the toolchain's cache (`dev/e2e/toolchain.sh --pko-crds` puts them there)."""
    got = subprocess.run(
        ["bash", str(REPO / "dev" / "e2e" / "toolchain.sh"), "--pko-crds"], capture_output=True, text=True
    )
    need(got.returncode == 0, got.stderr.strip() or "dev/e2e/toolchain.sh --pko-crds failed")
    return Path(got.stdout.strip())


def wait_for(what: str, condition: Callable[[], Any], timeout: float = 300) -> Any:
    """Polls until condition() is truthy; the timeout only bounds a failure."""
    deadline = time.monotonic() + timeout
    while not (got := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.5)
    return got


@dataclass
class World:
    cp: ControlPlane
    project: Project
    member_dir: Path
    gpu: list[str]


@pytest.fixture(scope="module")
def world(e2e_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ControlPlane(e2e_bin) as cp:
        cp.set_pod_log(GOOD_LOG)
        gpu = create_pool(cp, gke_gpu(), 2)
        create_pool(cp, gke_cpu(), 1)
        project = Project(tmp_path_factory.mktemp("fleet-pko"), e2e_bin)
        member_dir = project.program("member", "diagon-member", MEMBER_PROGRAM)
        yield World(cp, project, member_dir, gpu)
        shutil.rmtree(member_dir, ignore_errors=True)


# -- the operator's own schemas ---------------------------------------------------------------------------------
def install_crds(cp: ControlPlane) -> None:
    for path in sorted(crds_dir().glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        resp = cp.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
        assert resp.status_code in (201, 409), resp.text[:500]

    def established() -> bool:
        crd = cp.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/stacks.pulumi.com")
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for("the Stack CRD established", established)
    wait_for("pulumi.com/v1 served", lambda: cp.api("GET", "/apis/pulumi.com/v1").ok)


def apply(cp: ControlPlane, obj: dict[str, Any]) -> Any:
    """Server-side apply with strict field validation: an unknown or mistyped field is an error."""
    name = obj["metadata"]["name"]
    return cp.api(
        "PATCH",
        f"/apis/pulumi.com/v1/namespaces/{NAMESPACE}/stacks/{name}?fieldManager=mldiag&fieldValidation=Strict",
        data=json.dumps(obj),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )


def test_1_the_operators_crds_take_every_object_of_prod_and_of_1000_clusters(
    world: World, tmp_path: Path
) -> None:
    cp = world.cp
    install_crds(cp)
    resp = cp.api("POST", "/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}})
    assert resp.status_code == 201, resp.text
    access = pko.Access(
        namespace=NAMESPACE, access_token_secret="pulumi-api", passphrase_secret="pulumi-passphrase"
    )
    prod = load(REPO / "fleet" / "prod.yaml", REPO)
    prod = type(prod)(**{**prod.__dict__, "organization": "acme"})
    bench = load(write_project(tmp_path, 1_000), tmp_path)
    bench = type(bench)(**{**bench.__dict__, "organization": "acme"})
    # strictness is real: a field the schema does not know is refused
    wrong = pko.objects(prod, "fleet/prod.yaml", SOURCE, access, {}).all()[0]
    resp = apply(cp, {**wrong, "spec": {**wrong["spec"], "prerequisite": []}})
    assert not resp.ok and ".spec.prerequisite: field not declared in schema" in resp.text, resp.text[:500]
    for plan, rel in ((prod, "fleet/prod.yaml"), (bench, "fleet/bench.yaml")):
        objs = pko.objects(plan, rel, SOURCE, access, {}).all()
        check_graph(plan, objs)
        t0 = time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda o: apply(cp, o), objs))
        seconds = time.monotonic() - t0
        refused = [
            (o["metadata"]["name"], r.status_code, r.text[:300])
            for o, r in zip(objs, answers, strict=True)
            if not r.ok
        ]
        assert refused == [], refused[:3]
        TIMINGS[f"pko: {len(objs)} Stacks of {len(plan.members)} clusters accepted"] = seconds
    listed = cp.get(
        f"/apis/pulumi.com/v1/namespaces/{NAMESPACE}/stacks?labelSelector=ml-diagnostics.dev%2Ffleet%3Dbench"
    )
    assert len(listed["items"]) == 1_004
    # what the server stored is what was written: a member's config and prerequisites, a gate's entry
    gate = cp.get(f"/apis/pulumi.com/v1/namespaces/{NAMESPACE}/stacks/prod-gate-2-main")
    assert gate["spec"]["prerequisites"] == [{"name": "prod-gke-prod-tpu"}, {"name": "prod-mdc-train"}]
    assert fleet_gate.parse({fleet_gate.KEY: json.dumps(gate["spec"]["config"][fleet_gate.KEY])}).members


# -- the gate through the real engine -----------------------------------------------------------------------------
def gate_config(wait: int) -> dict[str, Any]:
    return {
        "fleet": "fleet/lab.yaml",
        "environmentStack": "lab",
        "wave": "gpu",
        "revision": "0123456789abcdef",
        "members": [{"stack": MEMBER, "target": "kubernetesClusters/gpu"}],
        "failureTolerance": 0,
        "soak": 0,
        "verifyWait": wait,
        "verifyInterval": 2,
    }


def shown(title: str, output: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The gate's own lines of a `pulumi up`, in the test log (docs/fleet.md quotes them)."""
    lines = [ln for ln in output.splitlines() if "wave gpu" in ln or "fleetGate" in ln or "error:" in ln]
    with capsys.disabled():
        print(f"\n--- {title}\n" + "\n".join(ln[:400] for ln in lines[-8:]))


def test_2_the_gate_fails_while_a_members_diagon_is_not_ready_and_passes_once_it_is(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    cp, project = world.cp, world.project
    member = world.member_dir
    project.pulumi("stack", "init", "dev", "--secrets-provider", "passphrase", cwd=member)
    project.pulumi(
        "config", "set", "--secret", "kubeconfig", "--", cp.kubeconfig.read_text(), stack="dev", cwd=member
    )
    project.pulumi("up", "--yes", "--skip-preview", stack="dev", cwd=member)
    project.pulumi("stack", "init", "lab.gate-1-gpu", "--secrets-provider", "passphrase")
    project.set_config("lab.gate-1-gpu", {"fleetGate": gate_config(wait=4)})

    sick = world.gpu[0]
    patch = {"metadata": {"annotations": {NOT_READY: "container runtime is down"}}}
    resp = cp.api(
        "PATCH", f"/api/v1/nodes/{sick}", json=patch, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert resp.ok, resp.text

    def ready(node: str) -> bool:
        conditions = cp.get(f"/api/v1/nodes/{node}")["status"]["conditions"]
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    wait_for(f"{sick} NotReady", lambda: not ready(sick))
    t0 = time.monotonic()
    failed = project.pulumi("up", "--yes", "--skip-preview", stack="lab.gate-1-gpu", check=False)
    TIMINGS["gate up, failing (verify waits 4s)"] = time.monotonic() - t0
    assert failed.returncode != 0
    shown("pulumi up of the gate, a member's GPU node NotReady", failed.output, capsys)
    assert (
        "wave gpu of fleet/lab.yaml failed its gate after 4s of verify: 1 member(s) unhealthy, 0 tolerated: "
        f"kubernetesClusters/gpu ({MEMBER}):" in failed.output
    ), failed.output[-3000:]
    assert sick in failed.output  # verify names the node whose Diagon is not ready

    resp = cp.api(
        "PATCH",
        f"/api/v1/nodes/{sick}",
        json={"metadata": {"annotations": {NOT_READY: None}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert resp.ok, resp.text
    wait_for(f"{sick} Ready again", lambda: ready(sick))
    project.set_config("lab.gate-1-gpu", {"fleetGate": gate_config(wait=120)})
    t0 = time.monotonic()
    passed = project.pulumi("up", "--yes", "--skip-preview", stack="lab.gate-1-gpu")
    TIMINGS["gate up, passing"] = time.monotonic() - t0
    shown("pulumi up of the gate, the node Ready again", passed.output, capsys)
    assert (
        "wave gpu of fleet/lab.yaml passed its gate: 1 of 1 member(s) healthy, 0 tolerated" in passed.output
    )
    outputs = project.pulumi("stack", "output", "--json", "--show-secrets", stack="lab.gate-1-gpu").json()
    assert outputs["fleetGate"]["members"] == [
        {"stack": MEMBER, "target": "kubernetesClusters/gpu", "healthy": True, "failing": []}
    ]
    # again with nothing changed: it passes, and changes nothing (it registers no resource)
    again = project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", stack="lab.gate-1-gpu")
    assert "passed its gate" in again.output
    state = project.pulumi("stack", "export", stack="lab.gate-1-gpu").json()
    assert [r["type"] for r in state["deployment"]["resources"]] == ["pulumi:pulumi:Stack"]
