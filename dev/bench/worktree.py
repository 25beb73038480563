"""The checkout a benchmark compares with: a directory as it is, or a commit checked out for the run."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def checkout(base: str) -> Iterator[Path]:
    """`base` when it is a directory; else a git revision of this repository, checked out in a temporary
    worktree (run with this checkout's virtual environment) and removed afterwards."""
    if Path(base).is_dir():
        yield Path(base).resolve()
        return
    git = ["git", "-C", str(ROOT)]
    rev = subprocess.run(
        [*git, "rev-parse", "--verify", f"{base}^{{commit}}"], capture_output=True, text=True
    )
    if rev.returncode != 0:
        raise SystemExit(f"--base {base}: neither a directory nor a commit of {ROOT}")
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        tree = Path(tmp) / "checkout"
        subprocess.run([*git, "worktree", "add", "--detach", "-q", str(tree), rev.stdout.strip()], check=True)
        try:
            yield tree
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(tree)], check=False)


def python_path(code_root: Path) -> str:
    """PYTHONPATH that imports a checkout's program and its own library (ahead of the installed one)."""
    return os.pathsep.join([str(code_root), str(code_root / "components")])
