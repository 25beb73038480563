"""Runs the two offline plans: the base ref in a temporary `git worktree`, the head in the working tree."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mldiag import esc
from mldiag.common import EXIT_ERROR, EXIT_INCOMPLETE, EXIT_MANDATORY, EXIT_OK, ROOT
from mldiag.diff.compare import diff_plans, exit_code
from mldiag.diff.render import FORMATS, render

PLAN_TIMEOUT_SECONDS = 900


class DiffError(Exception):
    """Something outside the diff itself failed: git, the base or head plan."""


@dataclass
class _Git:
    cwd: Path

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["git", *args], cwd=self.cwd, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise DiffError(f"git {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc


# Where the offline plan lives, newest layout first: a base ref is planned with its own (same arguments).
PLAN_MODULES = (("mldiag/plan/cli.py", "mldiag.plan"), ("tools/plan.py", "tools.plan"))


def _plan_env(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # the checkout's own library, not the one the virtualenv has installed (the working tree's)
    env["PYTHONPATH"] = str(checkout / "components")
    return env


def _run_plan(
    cwd: Path, stack: str, extra: list[str], label: str, module: str = "mldiag.plan"
) -> dict[str, Any]:
    cmd = [sys.executable, "-m", module, stack, "--format", "json", "--quiet", *extra]
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, env=_plan_env(cwd), timeout=PLAN_TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        raise DiffError(
            f"the {label} plan of stack {stack} took longer than {PLAN_TIMEOUT_SECONDS}s"
        ) from None
    if proc.returncode not in (EXIT_OK, EXIT_MANDATORY, EXIT_INCOMPLETE):
        detail = proc.stderr.strip() or proc.stdout.strip() or f"exit code {proc.returncode}"
        raise DiffError(f"the {label} plan of stack {stack} failed:\n{detail}")
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise DiffError(f"the {label} plan of stack {stack} did not print JSON: {e}") from None
    if not isinstance(report, dict) or not isinstance(report.get("resources"), list):
        raise DiffError(f"the {label} plan of stack {stack} printed JSON of an unexpected shape")
    return report


def diff_stacks(
    stacks: Sequence[str],
    base_ref: str,
    config_file: Path | str | None = None,
    policy_config: Path | str | None = None,
    project_dir: Path | None = None,
    esc_values: Sequence[Path] = (),
) -> list[dict[str, Any]]:
    """Plans each stack at base_ref (one temporary worktree) and in the working tree; returns the diffs.

    config_file / policy_config apply to the working tree's plan only; the base uses its own files.
    `esc_values` (the opened ESC environments, mldiag/esc.py) go to both plans: the environments live outside
    the repository, the same for both (to the base only when its plan takes them).
    """
    project = Path(project_dir or ROOT).resolve()
    git = _Git(project)
    commit = _base_commit(git, base_ref)
    esc_args = [a for f in esc_values for a in ("--esc-values", str(Path(f).resolve()))]
    head_extra = [*_head_args(config_file, policy_config), *esc_args]
    base = _base_plans(git, commit, stacks)
    if esc_args and _base_takes_esc_values(git, base):
        base = replace(base, extra=tuple(esc_args))
    with _base_worktree(base) as (scratch, tree):
        results, errors = _Plans(base, tree, scratch, project, head_extra).all(stacks)
    return [_stack_diff(s, base, results, errors) for s in stacks]


def _base_takes_esc_values(git: _Git, base: _Base) -> bool:
    if base.module != "mldiag.plan":
        return False
    found = git.run(
        "grep", "-q", "--esc-values", base.sha, "--", f"{base.prefix}mldiag/plan/cli.py", check=False
    )
    return found.returncode == 0


@dataclass(frozen=True)
class _Base:
    """The base ref's commit, and what is planned there."""

    ref: str
    sha: str
    top: Path
    """The repository's top level (the base's worktree is added from there)."""
    prefix: str
    """The project's folder in the repository (`git rev-parse --show-prefix`)."""
    stacks: tuple[str, ...] = ()
    """The stacks that exist at the base (the others are new)."""
    module: str | None = None
    """The base's own offline plan module (PLAN_MODULES)."""
    extra: tuple[str, ...] = ()
    """Arguments of the base's plans."""

    @property
    def label(self) -> str:
        return f"{self.ref} ({self.sha[:12]})"


def _base_commit(git: _Git, base_ref: str) -> _Base:
    """The commit base_ref names, where the project is in its repository (DiffError: no such commit)."""
    top = Path(git.run("rev-parse", "--show-toplevel").stdout.strip())
    prefix = git.run("rev-parse", "--show-prefix").stdout.strip()
    commit = git.run("rev-parse", "--verify", "--quiet", f"{base_ref}^{{commit}}", check=False)
    if commit.returncode != 0:
        raise DiffError(
            f"git ref {base_ref!r} does not name a commit (fetch it first, e.g. git fetch origin main)"
        )
    return _Base(base_ref, commit.stdout.strip(), top, prefix)


def _head_args(config_file: Path | str | None, policy_config: Path | str | None) -> list[str]:
    """The working tree plan's own files."""
    extra: list[str] = []
    if config_file:
        extra += ["--config-file", str(Path(config_file).resolve())]
    if policy_config:
        extra += ["--policy-config", str(Path(policy_config).resolve())]
    return extra


def _base_plans(git: _Git, base: _Base, stacks: Sequence[str]) -> _Base:
    """The base with the stacks it has and the plan module it plans them with (DiffError: it has none)."""

    def exists_at_base(rel: str) -> bool:
        return git.run("cat-file", "-e", f"{base.sha}:{base.prefix}{rel}", check=False).returncode == 0

    base_stacks = tuple(s for s in stacks if exists_at_base(f"stacks/Pulumi.{s}.yaml"))
    base_module = next((m for rel, m in PLAN_MODULES if exists_at_base(rel)), None)
    if base_stacks and base_module is None:
        where = " or ".join(rel for rel, _ in PLAN_MODULES)
        raise DiffError(f"{base.ref} has no offline plan ({where}): cannot plan the base")
    return replace(base, stacks=base_stacks, module=base_module)


@contextlib.contextmanager
def _base_worktree(base: _Base) -> Iterator[tuple[Path, Path]]:
    """(a scratch folder, the base's worktree in it): the worktree is added when a stack exists at the base,
    and the worktree and the folder are removed whatever happens."""
    scratch = Path(tempfile.mkdtemp(prefix="plan-diff-"))
    tree = scratch / "base"
    git = _Git(base.top)
    added_worktree = False
    try:
        if base.stacks:
            git.run("worktree", "add", "--detach", "--quiet", str(tree), base.sha)
            added_worktree = True
        yield scratch, tree
    finally:
        if added_worktree:
            removed = git.run("worktree", "remove", "--force", str(tree), check=False)
            if removed.returncode != 0:
                shutil.rmtree(tree, ignore_errors=True)
                git.run("worktree", "prune", check=False)
        shutil.rmtree(scratch, ignore_errors=True)


@dataclass(frozen=True)
class _Plans:
    """The two plans of each stack, stacks in parallel."""

    base: _Base
    tree: Path
    """The base's worktree."""
    scratch: Path
    """Where the base plans' outputs are written for the head plans."""
    project: Path
    head_extra: list[str]

    def all(self, stacks: Sequence[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """({stack: its base and head plans}, {stack: why they failed})."""
        workers = max(1, min(len(stacks), os.cpu_count() or 2, 4))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {s: pool.submit(self.pair, s) for s in stacks}
            results: dict[str, dict[str, Any]] = {}
            errors: dict[str, str] = {}
            for s, f in futures.items():
                try:
                    results[s] = f.result()
                except DiffError as e:  # one stack's failure must not hide the other stacks' diffs
                    errors[s] = str(e)
        return results, errors

    def pair(self, s: str) -> dict[str, Any]:
        # The head plans the update after the base: it reads the base's outputs as its last deployment's
        # (a switch that takes two updates shows its first step).
        base = None
        if s in self.base.stacks:
            assert self.base.module is not None
            base = _run_plan(
                self.tree / self.base.prefix, s, list(self.base.extra), self.base.label, self.base.module
            )
            previous = self.scratch / f"{s}.previous-outputs.json"
            previous.write_text(json.dumps(base.get("outputs") or {}))
            extra = [*self.head_extra, "--previous-outputs", str(previous)]
        else:
            extra = self.head_extra
        return {"base": base, "head": _run_plan(self.project, s, extra, "working tree")}


def _stack_diff(
    s: str, base: _Base, results: dict[str, dict[str, Any]], errors: dict[str, str]
) -> dict[str, Any]:
    """One stack's diff (or its error), with the base it was compared with."""
    if s in errors:
        d: dict[str, Any] = {"stack": s, "error": errors[s]}
    else:
        d = diff_plans(results[s]["base"], results[s]["head"])
        d["stack"] = s
        if unopened := results[s]["head"].get("unopenedEnvironments"):
            d["unopenedEnvironments"] = unopened
    d["baseRef"] = base.ref
    d["baseCommit"] = base.sha
    d["baseMissing"] = s not in base.stacks
    if d["baseMissing"] and "error" not in d:
        d["notes"].insert(0, f"stack {s} does not exist at {base.ref}: every resource is new")
    return d


def run_diff(
    stack: str,
    base_ref: str,
    fmt: str,
    config_file: Path | str | None = None,
    policy_config: Path | str | None = None,
    *,
    project_dir: Path | None = None,
    esc_values: Sequence[Path] = (),
) -> tuple[str, int]:
    """Rendered diff of one stack against base_ref, and the exit code (0, 1 mandatory violation, 2 error,
    4 the stack's ESC environments not supplied)."""
    if fmt not in FORMATS:
        return f"error: unknown format {fmt!r}: use {', '.join(FORMATS)}", EXIT_ERROR
    try:
        (diff,) = diff_stacks([stack], base_ref, config_file, policy_config, project_dir, esc_values)
    except DiffError as e:
        return f"error: {e}", EXIT_ERROR
    if "error" in diff:
        return f"error: {diff['error']}", EXIT_ERROR
    warn_unopened(diff)
    return render(diff, fmt), exit_code(diff)


def warn_unopened(diff: dict[str, Any]) -> None:
    if unopened := diff.get("unopenedEnvironments"):
        print(esc.warning(f"stack {diff['stack']}", unopened), file=sys.stderr, flush=True)
