"""The library as users get it: `pip install .` builds a wheel holding `ml_diagnostics` only (no program, no
pack, no tools, no bare `components`), its pins match the program's, and a small program using the
components runs under the SDK's mocks in a clean virtualenv outside the repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent(
    """
    import json
    import pulumi

    recorded, outputs = [], {}

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            recorded.append({"type": args.typ, "name": args.name, "inputs": args.inputs})
            return args.name + "-id", args.inputs

        def call(self, args):
            return {}

    pulumi.runtime.set_mocks(Mocks(), preview=False)

    import ml_diagnostics  # noqa: E402
    from ml_diagnostics import ClusterMlDiagnostics, Diagon, MlDiagnosticsMode  # noqa: E402


    @pulumi.runtime.test
    def program():
        diag = ClusterMlDiagnostics(
            "lab",
            {
                "mode": MlDiagnosticsMode.MANUAL,
                "kubeconfig": "apiVersion: v1\\nkind: Config\\n",
                "self_managed": True,
                "workload_namespaces": [{"name": "ai-workloads", "create": True}],
                "manual_install": {"jax_version": "0.8"},
            },
        )
        Diagon("extra", {"namespace": "kube-system", "create_namespace": False, "image": "example.com/diagon:v2.1.0"})
        return pulumi.Output.all(diag.mode, diag.cert_manager_source).apply(lambda v: outputs.update(mode=v[0], cm=v[1]))


    program()
    # the chart schemas ship with the wheel: a key cert-manager v1.16.5's values.schema.json refuses
    from ml_diagnostics.cert_manager import CertManager  # noqa: E402

    try:
        CertManager("bad", {"version": "v1.16.5", "values": {"webhook": {"replicaCont": 2}}})
    except ValueError as e:
        outputs["refused"] = str(e).splitlines()[1]
    print(json.dumps({**outputs, "file": ml_diagnostics.__file__, "resources": recorded}))
    """
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy: setuptools writes its build/ and egg-info beside the sources
    src = tmp_path_factory.mktemp("src")
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copy(ROOT / "LICENSE", src)
    shutil.copytree(
        ROOT / "components",
        src / "components",
        ignore=shutil.ignore_patterns("__pycache__", "venv", "*.egg-info"),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("ml_diagnostics-*.whl")
    return built


def test_the_wheel_holds_the_library_only(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"ml_diagnostics", f"ml_diagnostics-{wheel.name.split('-')[1]}.dist-info"}
    for required in (
        "ml_diagnostics/__init__.py",
        "ml_diagnostics/py.typed",
        "ml_diagnostics/compat.py",
        "ml_diagnostics/providers/model_development_cluster.py",
        "ml_diagnostics/specs/model_development.py",
        "ml_diagnostics/schema.json",
        "ml_diagnostics/cert_manager_schema.json",
        "ml_diagnostics/args.py",
        "ml_diagnostics/rules/__init__.py",
        f"ml_diagnostics-{wheel.name.split('-')[1]}.dist-info/licenses/LICENSE",
    ):
        assert required in names
    assert not [n for n in names if n.startswith(("program/", "mldiag/", "dev/", "policies/", "components/"))]


def test_the_library_pins_what_the_program_pins():
    def pins(lines: list[str]) -> dict[str, str]:
        out = {}
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                name, version = line.split("==")
                out[name.strip().lower()] = version.strip()
        return out

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = pins(project["dependencies"]) | pins(
        [d for extra in project["optional-dependencies"].values() for d in extra]
    )
    program = pins((ROOT / "requirements.txt").read_text().splitlines())
    assert declared and all(program.get(name) == version for name, version in declared.items()), declared


def test_a_program_uses_the_installed_wheel_in_a_clean_venv(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, clear=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    # outside the repository: nothing of it is on sys.path but the installed wheel
    run = subprocess.run(
        [str(python), str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert (out["mode"], out["cm"]) == ("manual", "release")
    assert out["refused"].startswith(
        "  - CertManagerArgs.values.webhook.replicaCont: unknown key of cert-manager v1.16.5's values.schema.json "
        "(did you mean 'replicaCount'?)"
    )
    assert out["file"].startswith(str(env_dir))
    by_name = {r["name"]: r for r in out["resources"]}
    assert by_name["lab-provider"]["type"] == "pulumi:providers:kubernetes"
    assert by_name["lab-cert-manager-release"]["inputs"]["version"] == "v1.13.0"
    assert by_name["lab-manual-connection-operator"]["inputs"]["values"] == {
        "mldiagnosticsConnectionOperator": {
            "controller": {
                "args": [
                    "--metrics-bind-address=:8443",
                    "--health-probe-bind-address=:8081",
                    "--sidecar-timeout=65m",
                    "--disable-hostname-override",
                ]
            }
        }
    }
    assert by_name["lab-opt-in-ai-workloads"]["inputs"]["metadata"]["labels"] == {
        "managed-mldiagnostics-gke": "true"
    }
    ds = by_name["extra-daemonset"]["inputs"]
    assert ds["metadata"]["namespace"] == "kube-system"
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "example.com/diagon:v2.1.0"
    assert "extra-namespace" not in by_name
    # core install: the cloud SDKs are extras, and nothing of the repository came along
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True
    )
    installed = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "ml-diagnostics" in installed
    assert not installed & {"pulumi-azure-native", "pulumi-gcp"}
    # the plugin needs every component: without the extras it says so
    check = subprocess.run(
        [str(python), "-m", "ml_diagnostics.plugin", "--check"], capture_output=True, text=True, cwd=tmp_path
    )
    assert check.returncode == 2 and "pip install 'ml-diagnostics[all]'" in check.stderr
    # with them (the repository's own copies, last on the path rather than a 60 s install of the same pins),
    # the installed plugin's schema is the one it infers
    site = next(Path(p) for p in sys.path if p.endswith("site-packages"))
    (next((env_dir / "lib").glob("python3*/site-packages")) / "zz-extras.pth").write_text(f"{site}\n")
    check = subprocess.run(
        [str(python), "-m", "ml_diagnostics.plugin", "--check"], capture_output=True, text=True, cwd=tmp_path
    )
    assert (check.returncode, check.stdout) == (0, "schema.json is current\n"), check.stderr[-2000:]


def test_the_package_metadata_a_registry_reader_sees(wheel: Path):
    meta = (
        zipfile.ZipFile(wheel).read(f"ml_diagnostics-{wheel.name.split('-')[1]}.dist-info/METADATA").decode()
    )
    headers, _, description = meta.partition("\n\n")
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert "License-Expression: Apache-2.0" in headers and "License-File: LICENSE" in headers
    for name, url in urls.items():
        assert f"Project-URL: {name}, {url}" in headers
    assert "Description-Content-Type: text/markdown" in headers
    # the long description stands on its own: what it is, how to install it (a tag and a checkout), how to use it
    assert description.startswith("# ml-diagnostics\n")
    for part in (
        "## Install",
        "## Use",
        "InvalidArgsError",
        f"git+{urls['Repository']}@v0.2.0",
        urls["Repository"],
    ):
        assert part in description, part
    assert "see the repository README" not in description.lower()
