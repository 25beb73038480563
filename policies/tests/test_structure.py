"""The pack's module structure (issue 24): no import cycle between its modules, and no module imports
another one's private (`_`-prefixed) names."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mldiag_policy"


def _module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(imported module, names) for every `from ... import` of this package in the file."""
    here = _module(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[: len(here) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            names = [a.name for a in node.names]
            if node.module is None:  # from .. import compat: each name is a module
                out += [(f"{target}.{n}", []) for n in names]
            else:
                out.append((target, names))
    return out


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {m: sorted({t for t, _ in _imports(p) if t in MODULES and t != m}) for m, p in MODULES.items()}


def test_no_module_imports_another_modules_private_names():
    private = [
        f"{m} imports {n} from {t}"
        for m, p in MODULES.items()
        for t, names in _imports(p)
        for n in names
        if n.startswith("_")
    ]
    assert private == []


def test_the_pack_modules_import_no_cycle():
    done: set[str] = set()

    def visit(m: str, path: tuple[str, ...]) -> None:
        assert m not in path, " -> ".join((*path, m))
        if m not in done:
            for t in GRAPH[m]:
                visit(t, (*path, m))
            done.add(m)

    for m in GRAPH:
        visit(m, ())


def test_values_and_forms_sit_below_common():
    assert GRAPH["mldiag_policy.values"] == []
    assert GRAPH["mldiag_policy.forms"] == ["mldiag_policy.values"]
    assert "mldiag_policy.forms" in GRAPH["mldiag_policy.common"]
