"""Dependency updates (.github/dependabot.yml): every manifest of the repository is watched, weekly, in one
grouped pull request per ecosystem; the file is what GitHub's published schema allows; and the Go module it
watches pins what the e2e toolchain builds (docs/development.md, "Dependency updates")."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".github" / "dependabot.yml"
SKIPPED = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
PIN = re.compile(r"^[A-Za-z0-9_.\[\],-]+==\S+", re.M)
# Manifests that pin something but are not watched, and why.
NOT_WATCHED = {
    "/examples/typescript": "its @pulumi/mldiag is the SDK `pulumi package add` generates (file:sdks/mldiag), "
    "not in the tree: Dependabot cannot resolve it; its Pulumi packages are the program's versions",
}


def manifest_dirs(matches: Any) -> set[str]:
    """The directories (as dependabot.yml writes them, `/` the root) holding a file `matches` takes (its
    path), less those NOT_WATCHED."""
    found = set()
    for here, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED and not d.endswith(".egg-info")]
        if any(matches(Path(here) / f) for f in files):
            rel = Path(here).relative_to(ROOT).as_posix()
            found.add("/" if rel == "." else f"/{rel}")
    return found - set(NOT_WATCHED)


def pins_packages(path: Path) -> bool:
    """A requirements file that pins a package (`name==version`); the ones holding only `-e` installs of this
    repository (components/, examples/python/) have nothing to update."""
    return bool(re.fullmatch(r"requirements.*\.txt", path.name)) and bool(PIN.search(path.read_text()))


def updates() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load(CONFIG.read_text())
    assert config["version"] == 2
    by_ecosystem = {u["package-ecosystem"]: u for u in config["updates"]}
    assert len(by_ecosystem) == len(config["updates"]), "one entry per ecosystem"
    return by_ecosystem


def directories(update: dict[str, Any]) -> set[str]:
    return set(update.get("directories") or [update["directory"]])


def test_every_manifest_of_the_repository_is_watched() -> None:
    found = updates()
    assert set(found) == {"pip", "github-actions", "npm", "gomod"}
    assert directories(found["pip"]) == manifest_dirs(pins_packages) == {"/", "/policies"}
    assert directories(found["npm"]) == manifest_dirs(lambda f: f.name == "package.json") == {"/dev/mermaid"}
    assert directories(found["gomod"]) == manifest_dirs(lambda f: f.name == "go.mod") == {"/dev/e2e/sdkgen"}
    assert set(NOT_WATCHED) <= {
        f"/{p.parent.relative_to(ROOT).as_posix()}" for p in ROOT.glob("examples/*/*")
    }
    assert directories(found["github-actions"]) == {"/"} and (ROOT / ".github" / "workflows").is_dir()


def test_each_ecosystem_is_checked_weekly_in_one_grouped_pull_request() -> None:
    for ecosystem, update in updates().items():
        assert update["schedule"] == {"interval": "weekly"}, ecosystem
        groups = update["groups"]
        assert [g["patterns"] for g in groups.values()] == [["*"]], ecosystem


def _schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "check-jsonschema"
    assert exe.exists(), "check-jsonschema is pinned in requirements-dev.txt"
    return subprocess.run(
        [str(exe), "--builtin-schema", "vendor.dependabot", str(path)], capture_output=True, text=True
    )


def test_the_file_validates_against_the_published_dependabot_schema(tmp_path: Path) -> None:
    run = _schema_check(CONFIG)
    assert run.returncode == 0, run.stdout + run.stderr
    bad = yaml.safe_load(CONFIG.read_text())
    bad["updates"][0]["schedule"]["interval"] = "fortnightly"
    (tmp_path / "dependabot.yml").write_text(yaml.safe_dump(bad))
    assert _schema_check(tmp_path / "dependabot.yml").returncode == 1


def test_the_sdk_generator_module_pins_the_e2e_toolchains_pulumi() -> None:
    """A bump of Pulumi's Go modules there moves the toolchain's CLI with it (dev/e2e/toolchain.sh)."""
    toolchain = (ROOT / "dev" / "e2e" / "toolchain.sh").read_text()
    cli = re.search(r"^PULUMI_VERSION=(v\S+)", toolchain, re.M)
    gomod = (ROOT / "dev" / "e2e" / "sdkgen" / "go.mod").read_text()
    pkg = re.search(r"^\s*github\.com/pulumi/pulumi/pkg/v3 (v\S+)", gomod, re.M)
    assert cli and pkg
    assert pkg[1] == cli[1]
    sdk = re.search(r"^\s*github\.com/pulumi/pulumi/sdk/v3 (v\S+)", gomod, re.M)
    assert sdk and sdk[1] == cli[1]
