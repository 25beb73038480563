"""`mldiag verify --stack` on the real engine (issue: verify any stack that uses the components): programs
that are not this repository's, deployed on a loopback cluster of their own with one GKE GPU node (dev/e2e/node_pools.py; kwok plays its
kubelet, the real scheduler places the pods, their logs come through the API server from kwok), verified
from their state alone:

- the Pulumi YAML example (examples/yaml, through the component plugin): a pass; its opt-in label removed in
  the API server: the namespace's check fails, exit 1;
- a small Python program of its own (its Kubernetes provider, a WorkloadOptIn and a self-managed Diagon):
  a pass; Diagon's image changed in the API server (`kubectl set image`): diagon.image fails, exit 1;
- the API server gone: both stacks' targets unreachable, exit 3.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dev.e2e.control_plane import ControlPlane
from dev.e2e.harness import REPO, Project
from dev.e2e.node_pools import create_pool, gke_gpu
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS
from tests.fixtures.tools import need
from tests.fixtures.verify import GOOD_LOG

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

YAML_STACK = "organization/mldiag-yaml-example/yaml"
PY_STACK = "organization/verify-consumer/dev"
PY_IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
PROGRAM = f'''\
import pulumi
import pulumi_kubernetes as k8s

from ml_diagnostics import Diagon, WorkloadOptIn

config = pulumi.Config()
cluster = k8s.Provider("lab", kubeconfig=config.require_secret("kubeconfig"))
opts = pulumi.ResourceOptions(providers=[cluster])
WorkloadOptIn("research", {{"namespaces": [{{"name": "research", "create": True}}]}}, opts)
Diagon("profiler", {{"namespace": "profiler", "image": "{PY_IMAGE}", "self_managed": True}}, opts)
'''


@dataclass
class World:
    cp: ControlPlane
    project: Project

    def verify(self, stack: str, project_dir: Path, *args: str) -> tuple[int, dict[str, Any], str]:
        t0 = time.monotonic()
        found = self.project.verify_stack(stack, project_dir, *args)
        TIMINGS[f"verify --stack {stack.rsplit('/', 2)[1]}"] = time.monotonic() - t0
        return found

    def pulumi(
        self, cwd: Path, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        split = args.index("--") if "--" in args else len(args)
        run = subprocess.run(
            [str(self.project.cli), *args[:split], "--non-interactive", *args[split:]],
            cwd=cwd,
            env=env or self.project.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, f"pulumi {' '.join(args)}\n{run.stdout[-4000:]}\n{run.stderr[-3000:]}"
        return run


@pytest.fixture(scope="module")
def world(e2e_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ControlPlane(e2e_bin) as cp:
        cp.set_pod_log(GOOD_LOG)
        create_pool(cp, gke_gpu(), 1)
        project = Project(tmp_path_factory.mktemp("verify-state"), e2e_bin)
        (project.root / "components" / "venv").symlink_to((REPO / ".venv").resolve())
        yield World(cp, project)


def targets(report: dict[str, Any]) -> dict[str, dict[str, bool]]:
    return {f"{t['kind']}/{t['name']}": {c["name"]: c["ok"] for c in t["checks"]} for t in report["targets"]}


def yaml_host() -> Path:
    out = subprocess.run(
        ["bash", str(REPO / "dev/e2e/toolchain.sh"), "--extra", "yaml"], capture_output=True, text=True
    )
    host = Path(out.stdout.strip()) if out.returncode == 0 else None
    need(
        host, "the YAML language host is not there (dev/e2e/toolchain.sh --extra yaml restores or builds it)"
    )
    assert host is not None
    return host


def test_the_yaml_example_verifies_from_its_state_and_a_removed_label_fails(world: World) -> None:
    example = world.project.root / "examples" / "yaml"
    shutil.copytree(REPO / "examples" / "yaml", example)
    env = {**world.project.env, "PATH": f"{yaml_host()}{os.pathsep}{world.project.env['PATH']}"}
    world.pulumi(example, "stack", "init", "yaml", "--secrets-provider", "passphrase", env=env)
    kubeconfig = world.cp.kubeconfig.read_text()
    world.pulumi(
        example, "config", "set", "--secret", "kubeconfig", "--stack", "yaml", "--", kubeconfig, env=env
    )
    t0 = time.monotonic()
    world.pulumi(example, "up", "--yes", "--skip-preview", "--stack", "yaml", env=env)
    TIMINGS["yaml example up (one node)"] = time.monotonic() - t0

    code, report, err = world.verify(YAML_STACK, example, "--wait", "60", "--interval", "2")
    assert code == 0, (report, err)
    assert targets(report) == {
        "ClusterMlDiagnostics/diagnostics": {
            "namespace.training": True,
            "diagon.scheduled": True,
            "diagon.admission": True,
            "diagon.ready": True,
            "diagon.image": True,
            "diagon.logs": True,
        }
    }
    # the logs were read through the API server from kwok's kubelet endpoint, as `kubectl logs` reads them
    (pod,) = world.cp.get("/api/v1/namespaces/diagon/pods?labelSelector=name%3Ddiagon-daemon")["items"]
    assert pod["spec"]["nodeName"] == "gke-gpu-l4-0"
    log = world.cp.api("GET", f"/api/v1/namespaces/diagon/pods/{pod['metadata']['name']}/log")
    assert log.ok and "Stream established." in log.text, log.text

    resp = world.cp.api(
        "PATCH",
        "/api/v1/namespaces/training",
        json={"metadata": {"labels": {"managed-mldiagnostics-gke": None}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert resp.ok, resp.text
    code, report, _ = world.verify(YAML_STACK, example)
    assert code == 1
    (target,) = report["targets"]
    failed = [(c["name"], c["detail"]) for c in target["checks"] if not c["ok"]]
    assert failed == [("namespace.training", "no managed-mldiagnostics-gke label")]


def test_a_python_program_of_its_own_verifies_and_a_changed_image_fails(world: World, tmp_path: Path) -> None:
    program = world.project.root / "consumer"
    program.mkdir()
    (program / "Pulumi.yaml").write_text(
        "name: verify-consumer\nruntime:\n  name: python\n  options:\n    virtualenv: venv\n"
    )
    (program / "__main__.py").write_text(PROGRAM)
    (program / "venv").symlink_to((REPO / ".venv").resolve())
    world.pulumi(program, "stack", "init", "dev", "--secrets-provider", "passphrase")
    kubeconfig = world.cp.kubeconfig.read_text()
    world.pulumi(program, "config", "set", "--secret", "kubeconfig", "--stack", "dev", "--", kubeconfig)
    world.pulumi(program, "up", "--yes", "--skip-preview", "--stack", "dev")

    code, report, err = world.verify(PY_STACK, program, "--wait", "60", "--interval", "2")
    assert code == 0, (report, err)
    assert targets(report) == {
        "WorkloadOptIn/research": {"namespace.research": True},
        "Diagon/profiler": {
            "diagon.scheduled": True,
            "diagon.admission": True,
            "diagon.ready": True,
            "diagon.image": True,
            "diagon.logs": True,
        },
    }

    other = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.0.9"
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "diagon-daemon", "image": other}]}}}}
    resp = world.cp.api(
        "PATCH",
        "/apis/apps/v1/namespaces/profiler/daemonsets/diagon-daemon",
        json=patch,
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert resp.ok, resp.text
    code, report, _ = world.verify(PY_STACK, program)
    assert code == 1
    failed = {
        f"{t['kind']}/{t['name']}": [(c["name"], c["detail"]) for c in t["checks"] if not c["ok"]]
        for t in report["targets"]
    }
    assert failed["WorkloadOptIn/research"] == []
    # the rollout the change started may also leave a pod pending: diagon.ready fails with it
    assert ("diagon.image", f"DaemonSet runs {other}, config says {PY_IMAGE}") in failed["Diagon/profiler"]


def test_an_api_server_that_is_gone_is_unreachable_from_the_state(world: World) -> None:
    world.cp.stop()
    for stack, cwd in (
        (YAML_STACK, world.project.root / "examples" / "yaml"),
        (PY_STACK, world.project.root / "consumer"),
    ):
        code, report, _ = world.verify(stack, cwd)
        assert code == 3, report
        assert report["targets"] and all(
            t["unreachable"].startswith("Kubernetes API not reachable: ") and t["checks"] == []
            for t in report["targets"]
        ), report
