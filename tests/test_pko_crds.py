"""The Pulumi Kubernetes Operator's CRDs for the e2e tier (dev/e2e/pko_crds.py, `toolchain.sh --pko-crds`):
copied once from outside the repository into the toolchain's cache, each file checked against its pinned
SHA-256, and found there by any checkout afterwards."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from dev.e2e import pko_crds

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory of CRD files, with SUMS pinned to them."""
    src = tmp_path / "pko" / "v2.9.0"
    src.mkdir(parents=True)
    sums = {}
    for name in pko_crds.SUMS:
        (src / name).write_text(f"kind: CustomResourceDefinition # {name}\n")
        sums[name] = hashlib.sha256((src / name).read_bytes()).hexdigest()
    (src / "LICENSE").write_text("Apache License 2.0\n")
    monkeypatch.setattr(pko_crds, "SUMS", sums)
    return src


def test_copied_once_into_the_cache_then_found_there_without_a_source(release: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path, cached = pko_crds.provide(cache, [tmp_path / "nowhere", release])
    assert (path, cached) == (cache / "pko-crds-v2.9.0", False)
    assert sorted(p.name for p in path.iterdir()) == sorted([*pko_crds.SUMS, "LICENSE"])
    assert pko_crds.provide(cache, []) == (path, True)


def test_a_file_of_another_release_is_refused_by_name_and_nothing_cached(
    release: Path, tmp_path: Path
) -> None:
    (release / "pulumi.com_stacks.yaml").write_text("kind: CustomResourceDefinition # v2.8.0\n")
    with pytest.raises(pko_crds.CrdsError) as e:
        pko_crds.provide(tmp_path / "cache", [release])
    assert str(e.value) == (
        f"{release}: pulumi.com_stacks.yaml: missing or not the operator's v2.9.0 files (SHA-256)"
    )
    assert not (tmp_path / "cache" / "pko-crds-v2.9.0").exists()


def test_a_tampered_cache_is_copied_again(release: Path, tmp_path: Path) -> None:
    path, _ = pko_crds.provide(tmp_path / "cache", [release])
    (path / "pulumi.com_programs.yaml").write_text("edited\n")
    assert pko_crds.provide(tmp_path / "cache", [release]) == (path, False)
    assert pko_crds._wrong(path) == []


def test_the_toolchain_entry_says_where_to_get_them_when_neither_cache_nor_source_has_them(
    tmp_path: Path,
) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ML_DIAG_E2E_CACHE": str(tmp_path / "cache"),
           "ML_DIAG_PKO_CRDS": str(tmp_path / "none")}  # fmt: skip
    got = subprocess.run(
        ["bash", str(ROOT / "dev" / "e2e" / "toolchain.sh"), "--pko-crds"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr == (
        f"toolchain: pko-crds: FAILED: the Pulumi Kubernetes Operator's v2.9.0 CRDs are not cached in "
        f"{tmp_path / 'cache' / 'pko-crds-v2.9.0'} nor in {tmp_path / 'none'}: set ML_DIAG_PKO_CRDS to a directory "
        "holding them (the release's config/crd/bases)\n"
    )
