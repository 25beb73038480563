"""What users read says what is there: every repository path, module and section the README and docs/*.md
name exists; every reference to a section of the README, anywhere in the tree, names one of its headings; nothing users read
says "seed" (our word for the vendor documents); the README stays a users' page of at most 450 lines with the
sections a newcomer needs, and its Mermaid picture parses."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mldiag.common import ROOT
from tests.fixtures.mermaid import mermaid_blocks

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Paths the documents name as what a user's own command makes, with the command.
MADE_BY_THE_USER = {
    "stacks/Pulumi.lab.yaml": "mldiag new-stack lab (the README's quick start)",
    ".fleet-work/<stack>/": "mldiag fleet run: the member stacks' work directories",
    "fleet/<name>.approvals.yaml": "a person approving a wave's revision (docs/fleet.md, On Kubernetes)",
}
PLACEHOLDERS = re.compile(r"<[^>]+>|\b(?:STACK|NAME)\b")
EXTENSIONS = r"\.(?:py|md|ya?ml|json|txt|toml|sh|ts|mjs|js|mmd|png|svg|go)"
# A path: segments joined by '/', not part of a URL, an absolute or a home path; a file (known extension) or a
# folder (trailing '/'); `<kind>` and STACK are placeholders.
PATH = re.compile(r"(?<![\w./:@~$-])((?:\.\.?/)*[A-Za-z0-9_.\-<>]+(?:/[A-Za-z0-9_.\-<>]+)+/?)")
LINK = re.compile(r"\]\(([^)#\s]+)")
MODULE = re.compile(r"python -m ([a-z_][a-z0-9_.]*[a-z0-9_])")


def named_paths(doc: Path) -> list[str]:
    """The paths a document names: relative to the repository, a link's (`link:...`) to the document."""
    text = doc.read_text()
    found = [p for p in PATH.findall(text) if re.search(EXTENSIONS + "$", p) or p.endswith("/")]
    return found + [f"link:{t}" for t in LINK.findall(text) if "://" not in t]


def missing(doc: Path, path: str) -> bool:
    link = path.startswith("link:")
    target = (doc.parent / path[5:] if link else ROOT / path).resolve()
    if not target.is_relative_to(ROOT) or path in MADE_BY_THE_USER:
        return False  # outside the repository (../shared/...), or made by the user
    pattern = PLACEHOLDERS.sub("*", str(target.relative_to(ROOT)))
    return not any(ROOT.glob(pattern)) if pattern != "." else False


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_the_docs_name_is_in_the_tree(doc: Path) -> None:
    paths = named_paths(doc)
    assert paths or doc.name != "README.md"
    assert sorted({p for p in paths if missing(doc, p)}) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_module_the_docs_run_is_in_the_tree(doc: Path) -> None:
    def exists(module: str) -> bool:
        parts = module.split(".")
        return any(
            base.joinpath(*parts).with_suffix(".py").is_file()
            or (base.joinpath(*parts) / "__init__.py").is_file()
            for base in (ROOT, ROOT / "components")
        )

    assert [m for m in MODULE.findall(doc.read_text()) if not exists(m)] == []


def test_the_path_finder_finds_what_the_issue_found(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "extend the lists of `program/regions.py`; see components/validators.py, [verify](verify.md), "
        "`program/kinds/<kind>/__init__.py`, https://example.com/a/b.py, ~/.cache/x/y.py, `policies/config/STACK.json`"
    )
    assert named_paths(doc) == [
        "program/regions.py",
        "components/validators.py",
        "program/kinds/<kind>/__init__.py",
        "policies/config/STACK.json",
        "link:verify.md",
    ]
    assert [p for p in named_paths(doc) if missing(ROOT / "docs" / "x.md", p)] == [
        "program/regions.py",
        "components/validators.py",
    ]


def readme_headings() -> set[str]:
    return {m.strip() for m in re.findall(r"^#{2,3} (.+)$", (ROOT / "README.md").read_text(), re.M)}


def test_every_readme_section_the_tree_names_is_a_heading_of_the_readme() -> None:
    sources = [*DOCS, ROOT / "Makefile", ROOT / "policies" / "README.md", ROOT / "components" / "README.md"]
    for top in ("components", "program", "mldiag", "dev", "policies", "tests"):
        sources += [p for p in (ROOT / top).rglob("*.py") if "venv" not in p.parts]
    named = {
        (str(p.relative_to(ROOT)), section)
        for p in sources
        for section in re.findall(r'\bREADME,? "([^"]+)"', p.read_text())
    }
    assert len(named) > 5
    headings = readme_headings()
    assert sorted((p, s) for p, s in named if s not in headings) == []


def test_no_seed_in_what_users_read() -> None:
    """Our word for the vendor documents; users read them by title (README "The vendor documents")."""
    read = [*DOCS, *(ROOT / "stacks").glob("*.yaml"), *(ROOT / "fleet").glob("*.yaml")]
    read += [p for p in (ROOT / "examples").rglob("*") if p.is_file() and "node_modules" not in p.parts]
    read += [ROOT / "policies" / "README.md", ROOT / "components" / "README.md"]
    said = [
        f"{p.relative_to(ROOT)}: {line.strip()[:80]}"
        for p in read
        for line in p.read_text(errors="replace").splitlines()
        if re.search(r"\bseeds?\b", line, re.I)
    ]
    assert said == []


def test_the_readme_is_a_users_page() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 450
    sections = [h for h in re.findall(r"^## (.+)$", text, re.M)]
    for wanted in (
        "Install",
        "Quick start",
        "The real workflow",
        "Configuration",
        "Verify",
        "Fleet",
        "Upgrading",
        "Removing everything",
        "Troubleshooting",
    ):
        assert wanted in sections, wanted
    assert sections.index("Configuration") < sections.index("Upgrading") < sections.index("Troubleshooting")
    # ESC after what the stack file holds; troubleshooting rows for the GKE flag and the Azure ML extension
    assert text.index("### What each target does") < text.index(
        "### Credentials and shared config from Pulumi ESC"
    )
    rows = text.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0]
    assert "| GKE: " in rows and "| Azure ML: " in rows
    # maintainers' material lives in docs/development.md, linked
    for gone in ("## Add a target kind", "## Layout", "## Tests and benchmarks", "make bench"):
        assert gone not in text, gone
    assert (
        "(docs/development.md)" in text
        and "## Add a target kind" in (ROOT / "docs/development.md").read_text()
    )


def test_the_readme_s_picture_parses(mermaid_parse: Callable[[list[str]], list[dict[str, Any]]]) -> None:
    (block,) = mermaid_blocks((ROOT / "README.md").read_text())
    (parsed,) = mermaid_parse([block])
    assert parsed["ok"], parsed.get("error")
    assert parsed["vertices"] == 8 and parsed["edges"] >= 10
