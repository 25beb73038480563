"""The documents that describe every kind say what each kind's entry says (its `docs`, a KindDocs), and they
are generated from it (dev/gen/kind_docs.py): README's "What each target does", verify's table of checks,
the lifecycle table of what removing a target does; `mldiag new-stack` writes the entries' examples."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dev.gen import kind_docs
from mldiag.common import PROJECT
from mldiag.stacks import new_stack
from program.kinds.base import KindDocs
from program.kinds.table import BY_KEY, KINDS, TargetKind

ROOT = Path(__file__).resolve().parent.parent


def test_the_generated_documents_are_current() -> None:
    assert kind_docs.stale() == [], f"run: {kind_docs.GENERATOR}"


def between(text: str, name: str) -> str:
    start, end = kind_docs.markers(name)
    return text.split(start, 1)[1].split(end, 1)[0]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.key)
def test_each_kind_s_texts_are_where_they_should_be(kind: TargetKind) -> None:
    readme = between((ROOT / kind_docs.README).read_text(), "summary")
    assert readme.count("\n- **`" + kind.key + "`**") == 1
    for text in kind.docs.summary:
        assert readme.count("\n- " + text.replace("\n", "\n  ") + "\n") == 1
    checks = between((ROOT / kind_docs.VERIFY).read_text(), "checks").splitlines()
    assert any(f"`{kind.key}`" in target for target, _ in kind.docs.checks)
    for target, text in kind.docs.checks:
        assert checks.count(f"| {target} | {text} |") == 1
    removed = between((ROOT / kind_docs.LIFECYCLE).read_text(), "removed").splitlines()
    assert f"| `{kind.key}` | {kind.docs.removed} |" in removed
    assert kind.docs.example.startswith(f"{{project}}:{kind.key}:")
    example = "".join(
        f"  # {line}\n" for line in kind.docs.example.replace("{project}", PROJECT).splitlines()
    )
    assert example in new_stack.examples()


def test_a_new_stack_s_examples_are_one_target_of_every_kind_uncommented() -> None:
    lines = [line.replace("  # ", "  ", 1) for line in new_stack.examples().splitlines()]
    config = yaml.safe_load("\n".join(["config:", *lines]))["config"]
    assert list(config) == [f"{PROJECT}:{k.key}" for k in KINDS]
    assert all(len(targets) == 1 and targets[0]["name"] for targets in config.values())


def test_a_text_two_kinds_list_is_written_once_after_the_later_one_s_own() -> None:
    k8s, gke = BY_KEY["kubernetesClusters"].docs, BY_KEY["gkeClusters"].docs
    assert set(k8s.summary) <= set(gke.summary) and set(k8s.checks) <= set(gke.checks)
    readme = between((ROOT / kind_docs.README).read_text(), "summary")
    listed = re.findall(r"^- \*\*`(\w+)`\*\*", readme, re.MULTILINE)
    assert sorted(listed) == sorted(k.key for k in KINDS)
    assert listed.index("kubernetesClusters") == listed.index("gkeClusters") + 1
    rows = kind_docs.once(KINDS, lambda k: k.docs.checks)
    assert rows[rows.index(gke.checks[0]) :][: len(gke.checks)] == list(gke.checks)


def _documents(tmp_path: Path) -> Path:
    for rel in kind_docs.outputs():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp_path / rel)
    return tmp_path


def _eks() -> TargetKind:
    """A kind of no cloud here, made from an existing entry: its texts are what the documents must gain."""
    docs = KindDocs(
        summary=("**`eksClusters`**: an EKS cluster's in-cluster install, as for\n`kubernetesClusters`.",),
        checks=(("EKS (`eksClusters`)", "`eks.cluster`: ACTIVE"),),
        removed="the in-cluster parts; the cluster stays",
        example="{project}:eksClusters:\n  - name: eks\n",
    )
    return dataclasses.replace(BY_KEY["kubernetesClusters"], key="eksClusters", docs=docs)


def test_a_kind_added_or_removed_is_written_and_the_prose_around_the_markers_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _documents(tmp_path)
    readme = root / kind_docs.README
    readme.write_text(
        readme.read_text().replace("## What each target does\n", "## What each target does\n\nNew prose.\n")
    )
    kinds = (*[k for k in KINDS if k.key != "azureMl"], _eks())

    assert kind_docs.main(["--check"], root, kinds) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{p} is stale: run {kind_docs.GENERATOR}"
        for p in (kind_docs.README, kind_docs.VERIFY, kind_docs.LIFECYCLE)
    ]
    assert kind_docs.main(["--write"], root, kinds) == 0
    assert kind_docs.main(["--check"], root, kinds) == 0
    capsys.readouterr()

    text = readme.read_text()
    assert "## What each target does\n\nNew prose.\n\n<!-- kind-docs:summary:start" in text
    summary = between(text, "summary")
    assert summary.endswith(
        "\n- **`eksClusters`**: an EKS cluster's in-cluster install, as for\n  `kubernetesClusters`.\n\n"
    )
    assert "`azureMl`" not in summary
    verify = (root / kind_docs.VERIFY).read_text()
    assert "| EKS (`eksClusters`) | `eks.cluster`: ACTIVE |\n\n<!-- kind-docs:checks:end -->" in verify
    assert "Azure ML" not in between(verify, "checks")
    lifecycle = (root / kind_docs.LIFECYCLE).read_text()
    assert re.findall(r"^\| `(\w+)` \|", between(lifecycle, "removed"), re.MULTILINE) == [
        k.key for k in kinds
    ]
    # outside the markers each document is as it was
    for rel in (kind_docs.VERIFY, kind_docs.LIFECYCLE):
        name = "checks" if rel == kind_docs.VERIFY else "removed"
        old, new = (ROOT / rel).read_text(), (root / rel).read_text()
        start, end = kind_docs.markers(name)
        assert new.split(start)[0] == old.split(start)[0] and new.split(end)[1] == old.split(end)[1]


def test_the_generator_needs_its_markers_and_a_cell_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _documents(tmp_path)
    lifecycle = root / kind_docs.LIFECYCLE
    lifecycle.write_text(lifecycle.read_text().replace(kind_docs.markers("removed")[1], ""))
    assert kind_docs.main(["--write"], root) == 2
    assert "docs/lifecycle.md: needs the markers" in capsys.readouterr().err

    root = _documents(tmp_path / "again")
    broken = dataclasses.replace(_eks(), docs=dataclasses.replace(_eks().docs, removed="a | b"))
    assert kind_docs.main(["--write"], root, (*KINDS, broken)) == 2
    assert "unescaped '|'" in capsys.readouterr().err
    assert kind_docs.main([], root) == 2
    assert "--check" in capsys.readouterr().err


def test_the_generator_runs_as_a_module() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "dev.gen.kind_docs", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert (run.returncode, run.stdout) == (0, "the kinds' generated texts are current\n")
