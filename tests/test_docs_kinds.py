"""Every kind of the table is in the documents that describe the kinds, so adding a kind without its docs
fails here: README's "What each target does", the new-stack template, verify's table of checks and the
lifecycle table of what removing a target does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mldiag.stacks import new_stack
from program.kinds.table import KINDS

ROOT = Path(__file__).resolve().parent.parent


def section(path: Path, heading: str) -> str:
    text = path.read_text()
    start = text.index(heading)
    rest = text[start + len(heading) :]
    end = re.search(r"^#{1,3} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


@pytest.mark.parametrize("kind", [k.key for k in KINDS])
def test_each_kind_is_documented(kind: str) -> None:
    readme = section(ROOT / "README.md", "## What each target does")
    assert f"- **`{kind}`**" in readme
    assert f"{{project}}:{kind}:" in new_stack.TEMPLATE
    verify_rows = [
        line
        for line in section(ROOT / "docs/verify.md", "## After `pulumi up`").splitlines()
        if line.startswith("| ")
    ]
    assert any(f"`{kind}`" in line.split("|")[1] for line in verify_rows)
    lifecycle = section(ROOT / "docs/lifecycle.md", "## Deleting and keeping resources")
    assert any(line.startswith(f"| `{kind}` |") for line in lifecycle.splitlines())


def test_the_documents_name_no_kind_the_table_lacks() -> None:
    """A kind removed or renamed in the table leaves no row behind."""
    keys = {k.key for k in KINDS}
    lifecycle = section(ROOT / "docs/lifecycle.md", "| kind | removed |")
    table = lifecycle.split("\n\n")[0]
    assert set(re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)) == keys
    readme = section(ROOT / "README.md", "## What each target does")
    assert set(re.findall(r"^- \*\*`(\w+)`\*\*", readme, re.MULTILINE)) == keys
    assert set(re.findall(r"# \{project\}:(\w+):", new_stack.TEMPLATE)) == keys
