"""One exit-code table (mldiag/exit_codes.py) for every command, and the README's table is it."""

from __future__ import annotations

import ast
from pathlib import Path

from mldiag.exit_codes import Exit, readme_table

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_table_is_the_modules():
    assert readme_table() in (ROOT / "README.md").read_text()


def test_no_command_defines_exit_numbers_of_its_own():
    """A module of the product may name the codes (EXIT_OK = Exit.OK), never assign them numbers."""
    offenders = []
    for path in sorted((ROOT / "mldiag").rglob("*.py")):
        if path.name == "exit_codes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.startswith("EXIT_")
                for t in ast.walk(node)
                if isinstance(t, ast.Name)
            ):
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                if any(isinstance(v, ast.Constant) and isinstance(v.value, int) for v in values):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_codes():
    assert [(c.name, int(c)) for c in Exit] == [
        ("OK", 0),
        ("FINDING", 1),
        ("INVALID", 2),
        ("UNREACHABLE", 3),
        ("INCOMPLETE", 4),
    ]
