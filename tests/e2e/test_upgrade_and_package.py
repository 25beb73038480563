"""The component package on the real engine (issue: component package), after the other scenarios (file order),
each on stacks of its own that are destroyed at the end:

- a stack deployed by the previous version of the program (PREVIOUS_VERSION, from git) is refreshed and
  updated by this version with the same URNs, nothing replaced, and only the Diagon namespace's Pod Security
  labels added: the dynamic provider pickled into the state at
  its old module path still reads (components/providers keeps that path importable);
- `pulumi package get-schema` of the component plugin gives the committed components/ml_diagnostics/schema.json;
- the Pulumi YAML example (examples/yaml) runs `up` against the loopback control plane through the plugin,
  with the YAML language host built from Go modules (dev/e2e/toolchain.sh --extra yaml);
- the TypeScript example type-checks against the SDK Pulumi's Node.js code generator makes from the schema the
  CLI gets from the plugin.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from dev.e2e.control_plane import ControlPlane
from dev.e2e.harness import REPO, Project, export_commit
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON, TIMINGS, cert_manager_crds_served
from tests.fixtures.tools import need, need_command

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)

HERE = Path(__file__).parent
# The program as it was before the library existed (the last commit of the earlier layout).
PREVIOUS_VERSION = "bb3171a"
STACK = "e2e-upgrade"


def stack_config(repo_url: str, vertex_url: str) -> dict[str, Any]:
    text = (HERE / "Pulumi.e2e.yaml").read_text()
    text = text.replace("@CHART_REPO@", repo_url).replace("@VERTEX_API@", vertex_url)
    return {k.split(":", 1)[1]: v for k, v in yaml.safe_load(text)["config"].items()}


def _plain(value: Any) -> str:
    """A state value with --show-secrets: a secret is {"<sig>": "...", "plaintext": "\"...\""}."""
    if isinstance(value, dict) and "plaintext" in value:
        return json.loads(value["plaintext"])
    return value


def ensure_namespace(cp: ControlPlane, name: str) -> None:
    resp = cp.api("POST", "/api/v1/namespaces", json={"metadata": {"name": name}})
    assert resp.status_code in (201, 409), resp.text


def test_a_stack_of_the_previous_version_updates_in_place(
    e2e_bin: Path, control_plane: ControlPlane, chart_repo: Any, vertex_fake: Any, tmp_path: Path
) -> None:
    old = export_commit(PREVIOUS_VERSION, tmp_path / "previous")
    assert (old / "components" / "providers" / "model_development_cluster.py").exists()
    assert not (old / "components" / "ml_diagnostics").exists()
    project = Project(tmp_path / "project", e2e_bin, source=old)
    ensure_namespace(control_plane, "research")
    project.init_stack(
        STACK,
        stack_config(chart_repo.url, vertex_fake.endpoint),
        {"kubernetesClusters[0].kubeconfig": control_plane.kubeconfig.read_text()},
    )
    try:
        up = project.pulumi("up", "--yes", "--skip-preview", stack=STACK)
        TIMINGS["upgrade: previous version up"] = up.seconds
        before = project.pulumi("stack", "export", "--show-secrets", stack=STACK).json()
        pickled = [
            r["inputs"]["__provider"]
            for r in before["deployment"]["resources"]
            if r["type"].startswith("pulumi-python:dynamic")
        ]
        assert pickled, "the previous version's stack holds a dynamic resource"
        old_path = "components.providers.model_development_cluster"
        assert all(old_path.encode() in base64.b64decode(_plain(p)) for p in pickled)

        project.use_program(REPO)
        # A refresh reads every resource with the provider pickled in the state: the old module path.
        project.pulumi("refresh", "--yes", "--expect-no-changes", stack=STACK)
        preview = project.pulumi("preview", "--json", stack=STACK)
        changed = [s for s in preview.json().get("steps", []) if s["op"] != "same"]
        # The one change this version makes on purpose: the Diagon namespace it creates gains the Pod
        # Security labels that admit the privileged daemon (an in-place label update; nothing replaced).
        kinds = [(s["op"], s["urn"].split("::")[2].rsplit("$", 1)[-1]) for s in changed]
        assert kinds == [("update", "kubernetes:core/v1:Namespace")], preview.stdout[-4000:]
        assert "diagon" in changed[0]["urn"].rsplit("::", 1)[1]
        assert sorted(changed[0]["detailedDiff"]) == [
            f'metadata.labels["pod-security.kubernetes.io/{mode}"]' for mode in ("audit", "enforce", "warn")
        ]
        assert {d["kind"] for d in changed[0]["detailedDiff"].values()} == {"add"}
        up2 = project.pulumi("up", "--yes", stack=STACK)
        TIMINGS["upgrade: this version up (labels only)"] = up2.seconds
        project.pulumi("preview", "--expect-no-changes", stack=STACK)
        cert_manager_crds_served(control_plane)  # before the destroy below uninstalls it
        after = project.pulumi("stack", "export", "--show-secrets", stack=STACK).json()
        urns = lambda d: sorted(r["urn"] for r in d["deployment"]["resources"])  # noqa: E731
        # This version's program reads the environment's lease stack (pulumi:pulumi:readStackOutputs, one way
        # per environment), and the engine records the builtin provider that serves the invoke: a provider record,
        # no cloud object; the preview above showed no step for it. Nothing else is added, nothing removed.
        builtin = f"urn:pulumi:{STACK}::ml-diagnostics::pulumi:providers:pulumi::default"
        assert builtin not in urns(before)
        assert urns(after) == sorted([*urns(before), builtin])
        # The update records this version's pickle (the library's module path); nothing else moved.
        new_path = b"ml_diagnostics.providers.model_development_cluster"
        repickled = [
            _plain(r["inputs"]["__provider"])
            for r in after["deployment"]["resources"]
            if r["type"].startswith("pulumi-python:dynamic")
        ]
        assert len(repickled) == len(pickled) and all(new_path in base64.b64decode(p) for p in repickled)
    finally:
        project.pulumi("destroy", "--yes", "--skip-preview", stack=STACK, check=False)
    assert vertex_fake.clusters == {}, "the destroy deleted the cluster through the old pickled provider"


@pytest.fixture(scope="module")
def package_project(e2e_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = Project(tmp_path_factory.mktemp("package"), e2e_bin)
    # The plugin's virtualenv (PulumiPlugin.yaml: venv) is the repository's, as the program's is.
    (project.root / "components" / "venv").symlink_to((REPO / ".venv").resolve())
    return project


def test_get_schema_of_the_plugin_is_the_committed_schema(package_project: Project) -> None:
    res = package_project.pulumi("package", "get-schema", "./components", timeout=300)
    TIMINGS["package get-schema"] = res.seconds
    assert json.loads(res.stdout) == json.loads(
        (REPO / "components" / "ml_diagnostics" / "schema.json").read_text()
    )


def _extra(name: str) -> Path | None:
    out = subprocess.run(
        ["bash", str(REPO / "dev/e2e/toolchain.sh"), "--extra", name], capture_output=True, text=True
    )
    return Path(out.stdout.strip()) if out.returncode == 0 else None


def test_the_yaml_example_runs_up_through_the_plugin(
    package_project: Project, control_plane: ControlPlane
) -> None:
    host = _extra("yaml")
    need(
        host,
        "the YAML language host is not there (dev/e2e/toolchain.sh --extra yaml restores or builds it)",
    )
    assert host is not None
    example = package_project.root / "examples" / "yaml"
    shutil.copytree(REPO / "examples" / "yaml", example)
    env = dict(package_project.env)
    env["PATH"] = f"{host}{os.pathsep}{env['PATH']}"

    def pulumi(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        split = args.index("--") if "--" in args else len(args)  # flags go before a `--`
        run = subprocess.run(
            [str(package_project.cli), *args[:split], "--non-interactive", "--stack", "yaml", *args[split:]],
            cwd=example,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if check:
            assert run.returncode == 0, f"pulumi {' '.join(args)}\n{run.stdout[-4000:]}\n{run.stderr[-3000:]}"
        return run

    subprocess.run(
        [
            str(package_project.cli),
            "stack",
            "init",
            "yaml",
            "--secrets-provider",
            "passphrase",
            "--non-interactive",
        ],
        cwd=example,
        env=env,
        check=True,
        capture_output=True,
    )
    pulumi("config", "set", "--secret", "kubeconfig", "--", control_plane.kubeconfig.read_text())
    try:
        t0 = time.monotonic()
        pulumi("up", "--yes", "--skip-preview")
        TIMINGS["yaml example up"] = time.monotonic() - t0
        outputs = json.loads(pulumi("stack", "output", "--json", "--show-secrets").stdout)
        assert outputs == {"mode": "managed", "workloadNamespaces": ["training"], "diagonNamespace": "diagon"}
        ns = control_plane.api("GET", "/api/v1/namespaces/training").json()
        assert ns["metadata"]["labels"]["managed-mldiagnostics-gke"] == "true"
        assert ns["metadata"]["labels"]["team"] == "ml-research"
        ds = control_plane.api("GET", "/apis/apps/v1/namespaces/diagon/daemonsets/diagon-daemon").json()
        assert ds["spec"]["template"]["spec"]["containers"][0]["image"].endswith("diagon-daemon:v2.1.0")
        # managed: no release of the manual install
        assert control_plane.api("GET", "/api/v1/namespaces/gke-mldiagnostics").status_code == 404
        state = json.loads(pulumi("stack", "export").stdout)
        types = {r["type"] for r in state["deployment"]["resources"]}
        assert {
            "mldiag:index:ClusterMlDiagnostics",
            "mldiag:index:Diagon",
            "mldiag:index:WorkloadOptIn",
        } <= types
        pulumi("preview", "--expect-no-changes")
    finally:
        pulumi("destroy", "--yes", "--skip-preview", check=False)
    gone = control_plane.api("GET", "/api/v1/namespaces/training")
    assert gone.status_code == 404 or gone.json()["status"]["phase"] == "Terminating"


def test_pulumi_package_add_on_a_yaml_project_fails_as_the_readme_says(
    package_project: Project, tmp_path: Path
) -> None:
    """README: with the YAML language host 1.25.0, `pulumi package add` generates the SDK and then fails to
    link it, leaving Pulumi.yaml as it was; a YAML program writes its `packages:` entry by hand (the example
    does, and runs up above). When the host links, this fails: the README's YAML instructions change then."""
    host = _extra("yaml")
    need(
        host, "the YAML language host is not there (dev/e2e/toolchain.sh --extra yaml restores or builds it)"
    )
    project = tmp_path / "yaml-project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: package-add-yaml\nruntime: yaml\n")
    env = dict(package_project.env)
    env["PATH"] = f"{host}{os.pathsep}{env['PATH']}"
    run = subprocess.run(
        [
            str(package_project.cli),
            "package",
            "add",
            str(package_project.root / "components"),
            "--non-interactive",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode != 0, run.stdout
    assert "linking package: method Link not implemented" in run.stdout + run.stderr
    assert (project / "Pulumi.yaml").read_text() == "name: package-add-yaml\nruntime: yaml\n"


def test_the_typescript_example_type_checks_against_the_generated_sdk(package_project: Project) -> None:
    """`pulumi package gen-sdk --language nodejs` needs the Node.js language host, which the module proxy does
    not serve: Pulumi's own Node.js generator (pkg/v3/codegen/nodejs) runs from a small Go main instead."""
    need_command("npm")
    sdkgen = _extra("sdkgen")
    need(sdkgen, "the SDK generator is not there (dev/e2e/toolchain.sh --extra sdkgen restores or builds it)")
    assert sdkgen is not None
    example = package_project.root / "examples" / "typescript"
    shutil.copytree(REPO / "examples" / "typescript", example)
    schema = package_project.pulumi("package", "get-schema", "./components", timeout=300)
    (example / "schema.json").write_text(schema.stdout)
    gen = subprocess.run(
        [str(sdkgen / "sdkgen"), "schema.json", "sdks/mldiag"], cwd=example, capture_output=True, text=True
    )
    assert gen.returncode == 0, gen.stderr[-3000:]
    install = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=example,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    # the example names the SDK it compiles against, as `pulumi package add` writes it
    assert (
        json.loads((example / "package.json").read_text())["dependencies"]["@pulumi/mldiag"]
        == "file:sdks/mldiag"
    )
    assert (example / "node_modules" / "@pulumi" / "mldiag").resolve() == (
        example / "sdks" / "mldiag"
    ).resolve()
    tsc = [str(example / "node_modules" / ".bin" / "tsc"), "--noEmit", "-p", "."]
    checked = subprocess.run(tsc, cwd=example, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    # and a wrong argument is a type error, so the check can fail
    (example / "index.ts").write_text((example / "index.ts").read_text().replace("jaxVersion", "jaxVersoin"))
    bad = subprocess.run(tsc, cwd=example, capture_output=True, text=True, timeout=600)
    assert bad.returncode != 0 and "jaxVersoin" in bad.stdout
