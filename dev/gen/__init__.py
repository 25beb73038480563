"""Generators of committed files; each has --write, and a test fails when what it writes is stale."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def stale(wanted: dict[Path, str], root: Path) -> list[Path]:
    """The files (relative to `root`) whose text is not what a generator wants, missing ones included."""
    return [p for p, text in wanted.items() if not (root / p).exists() or (root / p).read_text() != text]


def write_or_check(argv: list[str], wanted: dict[Path, str], root: Path, generator: str, current: str) -> int:
    """`--check`: name each stale file (exit 1 when one is); `--write`: write them. `current` is said when
    none is stale."""
    old = stale(wanted, root)
    for p in old:
        if argv == ["--check"]:
            print(f"{p} is stale: run {generator}")
        else:
            (root / p).parent.mkdir(parents=True, exist_ok=True)
            (root / p).write_text(wanted[p])
            print(f"wrote {p}")
    if not old:
        print(current)
    return 1 if old and argv == ["--check"] else 0


def generate(
    argv: list[str],
    outputs: Callable[[], dict[Path, str]],
    *,
    root: Path,
    generator: str,
    current: str,
    usage: str,
    errors: tuple[type[Exception], ...] = (),
) -> int:
    """A generator's main: `--write` or `--check` (else `usage`, exit 2) of what `outputs` makes; one of its
    `errors` is said and exits 2."""
    if argv not in (["--write"], ["--check"]):
        print(usage.strip(), file=sys.stderr)
        return 2
    try:
        wanted = outputs()
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return write_or_check(argv, wanted, root, generator, current)
