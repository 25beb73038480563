"""Runs the two offline plans: the base ref in a temporary `git worktree`, the head in the working tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldiag.diff.compare import diff_plans, exit_code
from mldiag.diff.render import FORMATS, render
from mldiag.plan.common import EXIT_ERROR, EXIT_MANDATORY, EXIT_OK, ROOT

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
    if proc.returncode not in (EXIT_OK, EXIT_MANDATORY):
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
) -> list[dict[str, Any]]:
    """Plans each stack at base_ref (one temporary worktree) and in the working tree; returns the diffs.

    config_file / policy_config apply to the working tree's plan only; the base uses its own files.
    """
    project = Path(project_dir or ROOT).resolve()
    git = _Git(project)
    top = Path(git.run("rev-parse", "--show-toplevel").stdout.strip())
    prefix = git.run("rev-parse", "--show-prefix").stdout.strip()
    commit = git.run("rev-parse", "--verify", "--quiet", f"{base_ref}^{{commit}}", check=False)
    if commit.returncode != 0:
        raise DiffError(
            f"git ref {base_ref!r} does not name a commit (fetch it first, e.g. git fetch origin main)"
        )
    sha = commit.stdout.strip()
    head_extra: list[str] = []
    if config_file:
        head_extra += ["--config-file", str(Path(config_file).resolve())]
    if policy_config:
        head_extra += ["--policy-config", str(Path(policy_config).resolve())]

    def exists_at_base(rel: str) -> bool:
        return git.run("cat-file", "-e", f"{sha}:{prefix}{rel}", check=False).returncode == 0

    base_stacks = [s for s in stacks if exists_at_base(f"stacks/Pulumi.{s}.yaml")]
    base_module = next((m for rel, m in PLAN_MODULES if exists_at_base(rel)), None)
    if base_stacks and base_module is None:
        where = " or ".join(rel for rel, _ in PLAN_MODULES)
        raise DiffError(f"{base_ref} has no offline plan ({where}): cannot plan the base")
    tmp = Path(tempfile.mkdtemp(prefix="plan-diff-"))
    tree = tmp / "base"
    added_worktree = False
    try:
        if base_stacks:
            git.cwd = top
            git.run("worktree", "add", "--detach", "--quiet", str(tree), sha)
            added_worktree = True

        def plan_pair(s: str) -> dict[str, Any]:
            # The head plans the update after the base: it reads the base's outputs as its last deployment's
            # (a switch that takes two updates shows its first step).
            base = None
            if s in base_stacks:
                assert base_module is not None
                base = _run_plan(tree / prefix, s, [], f"{base_ref} ({sha[:12]})", base_module)
                previous = tmp / f"{s}.previous-outputs.json"
                previous.write_text(json.dumps(base.get("outputs") or {}))
                extra = [*head_extra, "--previous-outputs", str(previous)]
            else:
                extra = head_extra
            return {"base": base, "head": _run_plan(project, s, extra, "working tree")}

        workers = max(1, min(len(stacks), os.cpu_count() or 2, 4))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {s: pool.submit(plan_pair, s) for s in stacks}
            results: dict[str, dict[str, Any]] = {}
            errors: dict[str, str] = {}
            for s, f in futures.items():
                try:
                    results[s] = f.result()
                except DiffError as e:  # one stack's failure must not hide the other stacks' diffs
                    errors[s] = str(e)
    finally:
        if added_worktree:
            removed = git.run("worktree", "remove", "--force", str(tree), check=False)
            if removed.returncode != 0:
                shutil.rmtree(tree, ignore_errors=True)
                git.run("worktree", "prune", check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    diffs = []
    for s in stacks:
        if s in errors:
            d = {"stack": s, "error": errors[s]}
        else:
            d = diff_plans(results[s]["base"], results[s]["head"])
            d["stack"] = s
        d["baseRef"] = base_ref
        d["baseCommit"] = sha
        d["baseMissing"] = s not in base_stacks
        if d["baseMissing"] and "error" not in d:
            d["notes"].insert(0, f"stack {s} does not exist at {base_ref}: every resource is new")
        diffs.append(d)
    return diffs


def run_diff(
    stack: str,
    base_ref: str,
    fmt: str,
    config_file: Path | str | None = None,
    policy_config: Path | str | None = None,
    *,
    project_dir: Path | None = None,
) -> tuple[str, int]:
    """Rendered diff of one stack against base_ref, and the exit code (0, 1 mandatory violation, 2 error)."""
    if fmt not in FORMATS:
        return f"error: unknown format {fmt!r}: use {', '.join(FORMATS)}", EXIT_ERROR
    try:
        (diff,) = diff_stacks([stack], base_ref, config_file, policy_config, project_dir)
    except DiffError as e:
        return f"error: {e}", EXIT_ERROR
    if "error" in diff:
        return f"error: {diff['error']}", EXIT_ERROR
    return render(diff, fmt), exit_code(diff)
