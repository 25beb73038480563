"""The policy pack is self-contained: a copy of policies/ alone, with a virtualenv holding only what
policies/requirements-dev.txt names (and what those packages require), loads, serves the Analyzer
protocol with no repository on its path, and passes its own tests.

No network here: the virtualenv is built from the already installed distributions of exactly that
requirement closure (symlinked), not from the whole development environment.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from mldiag.engine.analyzer import PolicyPackProcess
from tests.fixtures.policies import body, res

ROOT = Path(__file__).resolve().parents[1]


def _closure(requirement_files: list[Path]) -> dict[str, metadata.Distribution]:
    todo: list[str] = []
    for f in requirement_files:
        for line in f.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-r"):
                todo.append(line)
    seen: dict[str, metadata.Distribution] = {}
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        if key in seen:
            continue
        dist = metadata.distribution(req.name)
        assert not req.specifier or dist.version in req.specifier, (req, dist.version)
        seen[key] = dist
        todo += dist.requires or []
    return seen


def _venv_with(dists: dict[str, metadata.Distribution], where: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    python = where / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    for dist in dists.values():
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            src = Path(str(dist.locate_file(top)))
            if src.exists() and not (site / top).exists() and top != "__pycache__":
                (site / top).symlink_to(src)
    return python


@pytest.fixture(scope="module")
def copied_pack(tmp_path_factory):
    base = tmp_path_factory.mktemp("standalone")
    pack = base / "guardrails"  # any directory name works
    shutil.copytree(ROOT / "policies", pack, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    dists = _closure([pack / "requirements.txt", pack / "requirements-dev.txt"])
    return pack, _venv_with(dists, base / "venv"), dists


def test_the_virtualenv_holds_only_the_pack_requirements(copied_pack):
    _, python, dists = copied_pack
    assert {"pulumi", "pulumi-policy", "semver", "jsonschema", "pytest"} <= set(dists)
    out = subprocess.run(
        [
            python,
            "-c",
            "import importlib.util as u; print([m for m in ('components', 'tools', 'pulumi_kubernetes', "
            "'pulumi_gcp', 'pulumi_azure_native', 'pydantic') if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=copied_pack[0].parent,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert out.stdout.strip() == "[]"


def test_the_copy_analyzes_over_the_protocol(copied_pack):
    pack_dir, python, _ = copied_pack
    ds = res(
        "kubernetes:apps/v1:DaemonSet",
        "agent",
        {
            "metadata": {"name": "agent"},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "busybox"}]}}},
        },
    )
    with PolicyPackProcess(policy_dir=pack_dir, python=str(python)) as proc:
        info = proc.info()
        proc.configure(info, {"all": "mandatory"})
        found = [v for v in proc.analyze([ds]) if v.policy == "k8s-images-pinned"]
    assert [body(v) for v in found][0].startswith("DaemonSet 'agent' container 'a' uses image 'busybox'")


def test_the_copy_passes_its_own_tests(copied_pack):
    pack_dir, python, _ = copied_pack
    out = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=pack_dir,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert re.search(r"\d+ passed", out.stdout), out.stdout[-500:]
    assert str(ROOT) not in out.stdout


def test_the_pack_pins_what_the_program_pins():
    def pins(path: Path) -> dict[str, str]:
        out = {}
        for line in path.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                name, version = line.split("==")
                out[name.strip().lower()] = version.strip()
        return out

    program = pins(ROOT / "requirements.txt") | pins(ROOT / "requirements-dev.txt")
    for name, version in (
        pins(ROOT / "policies" / "requirements.txt") | pins(ROOT / "policies" / "requirements-dev.txt")
    ).items():
        assert program.get(name) == version, name
