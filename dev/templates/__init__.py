"""The template kind (dev/templates/kind/): the files a new target kind brings, with its names to fill in.

    python -m dev.templates lab_flavour --order 50 --part-order 120                  # on the kubernetes cloud
    python -m dev.templates eks_cluster --cloud aws --new-cloud --order 60 --part-order 130

writes its library module and Spec (with its record section), its program folder, its policy rule with the
rule's test file and its own test file; with `--new-cloud` also `program/clouds/<cloud>.py`. Nothing
existing is edited: then `python -m dev.gen.args --write` and the other generators (docs/development.md,
"Add a target kind"). tests/test_add_a_kind.py proves it in a copy of the tree.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "kind"
CLOUD_MODULE = Path("program") / "clouds" / "@@cloud@@.py.tmpl"


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@dataclass(frozen=True)
class Names:
    kind: str
    """snake_case: its modules' and its record section's name (`lab_flavour`)."""
    order: int
    """Its place in the table of kinds (program/kinds/table.py)."""
    part_order: int
    """Its part's place among the library's parts (ml_diagnostics/parts.py)."""
    cloud: str = "kubernetes"

    def values(self) -> dict[str, str]:
        camel = _camel(self.kind)
        return {
            "kind": self.kind,
            "Kind": camel[:1].upper() + camel[1:],
            "key": camel + "s",
            "section_key": camel,
            "prefix": self.kind.replace("_", "-"),
            "rule": self.kind.replace("_", "-") + "-replicas-limit",
            "label": self.kind.replace("_", " ").capitalize(),
            "cloud": self.cloud,
            "CLOUD": self.cloud.upper(),
            "order": str(self.order),
            "part_order": str(self.part_order),
        }


def fill(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace(f"@@{name}@@", value)
    if "@@" in text:
        raise ValueError(f"a name the template kind does not fill: {text[text.index('@@') :][:40]!r}")
    return text


def instantiate(root: Path, names: Names, new_cloud: bool = False) -> list[Path]:
    """Writes the template's files into the tree at `root`; returns their paths relative to it. Refuses to
    overwrite a file (a kind brings its own files only)."""
    values = names.values()
    written = []
    for source in sorted(TEMPLATE.rglob("*.tmpl")):
        rel = source.relative_to(TEMPLATE)
        if rel == CLOUD_MODULE and not new_cloud:
            continue
        target = Path(fill(str(rel), values).removesuffix(".tmpl"))
        path = root / target
        if path.exists():
            raise FileExistsError(f"{target} exists: a kind brings its own files")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fill(source.read_text(), values))
        written.append(target)
    # the names filled in move imports and lines: as ruff keeps the repository's code
    files = [str(p) for p in written if p.suffix == ".py"]
    for command in (["check", "--select", "I", "--fix", "-q"], ["format", "-q"]):
        subprocess.run([sys.executable, "-m", "ruff", *command, *files], cwd=root, check=True)
    return written


__all__ = ["TEMPLATE", "Names", "fill", "instantiate"]
