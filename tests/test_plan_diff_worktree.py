"""The base's worktree of `mldiag diff` (mldiag/diff/run.py): added only when a stack exists at the base, and
gone, with its scratch folder, however planning ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from mldiag.diff import run
from mldiag.diff.run import DiffError
from tests.test_plan_diff import assert_clean, git
from tests.test_plan_diff import fake_repo as fake_repo  # the fixture of the diff's tests


def base_of(repo: Path, ref: str, stacks: list[str]) -> run._Base:
    g = run._Git(repo)
    return run._base_plans(g, run._base_commit(g, ref), stacks)


def test_the_worktree_is_the_base_and_is_removed_when_planning_fails(fake_repo: Path) -> None:
    base = base_of(fake_repo, "main", ["dev", "qa"])
    assert (base.stacks, base.module, base.prefix) == (("dev",), "mldiag.plan", "")
    assert base.label == f"main ({git(fake_repo, 'rev-parse', 'main').strip()[:12]})"
    with pytest.raises(RuntimeError, match="planning broke"), run._base_worktree(base) as (scratch, tree):
        assert tree.parent == scratch
        assert (tree / "stacks" / "Pulumi.dev.yaml").is_file()
        assert str(tree) in git(fake_repo, "worktree", "list", "--porcelain")
        raise RuntimeError("planning broke")
    assert not scratch.exists()
    assert_clean(fake_repo)


def test_no_worktree_when_no_stack_exists_at_the_base(fake_repo: Path) -> None:
    base = base_of(fake_repo, "main", ["qa"])
    assert base.stacks == ()
    with run._base_worktree(base) as (scratch, tree):
        assert scratch.is_dir() and not tree.exists()
        assert git(fake_repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert_clean(fake_repo)


def test_a_base_without_an_offline_plan_is_refused_before_any_worktree(fake_repo: Path) -> None:
    git(fake_repo, "rm", "-q", "-r", "mldiag")
    git(fake_repo, "commit", "-q", "-m", "no plan")
    with pytest.raises(DiffError, match=r"^main has no offline plan \(mldiag/plan/cli.py or tools/plan.py\)"):
        run.diff_stacks(["dev"], "main", project_dir=fake_repo)
    assert_clean(fake_repo)
