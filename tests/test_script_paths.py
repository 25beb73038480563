"""The repository's scripts name no machine-specific home: a clone anywhere (CI's, a laptop's) runs them.
An absolute /work/... or /root/... path is this workplace's layout, never the project's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# an absolute path starts the word: "/work/x", "'/root/x'", "=/work/x"; "$REPO/../work/x" does not
ABSOLUTE = re.compile(r"(?<![\w.$}~/-])/(?:work|root)/")


def scripts() -> list[Path]:
    found = sorted(REPO.glob("dev/**/*.sh")) + [REPO / ".ci/run", REPO / "Makefile"]
    return [p for p in found if ".venv" not in p.parts and "node_modules" not in p.parts]


def absolute_paths(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if ABSOLUTE.search(line)]


@pytest.mark.parametrize("path", scripts(), ids=lambda p: str(p.relative_to(REPO)))
def test_a_script_names_no_absolute_work_or_root_path(path: Path) -> None:
    assert absolute_paths(path.read_text()) == [], f"{path.relative_to(REPO)}: machine-specific path"


def test_the_check_catches_what_it_is_for() -> None:
    assert absolute_paths('ARCHIVE_DIRS=("$X" "/work/shared/e2e-toolchain")') != []
    assert absolute_paths("CACHE=/root/.cache/x") != []
    assert absolute_paths('D="$REPO/../shared/e2e-toolchain"; C="$HOME/.cache"; W=$REPO/work/x') == []
