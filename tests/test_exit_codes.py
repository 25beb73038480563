"""One exit-code table (mldiag/exit_codes.py) for every command, and the README's table is it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mldiag import cli
from mldiag.exit_codes import MEANINGS, Exit, readme_table

ROOT = Path(__file__).resolve().parents[1]


def read_markdown(text: str) -> dict[str, list[str]]:
    """The exit-code table of a Markdown document, read back: command -> the meaning of 0..4."""
    lines = text.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith("| command | 0 |")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return {", ".join(re.findall(r"`(mldiag [^`]+)`", r[0])): r[1:] for r in rows}


def read_help(text: str) -> dict[str, list[str]]:
    """The exit-code table of a `--help`, read back: command -> the meaning of 0..4 ("-" when it never ends so)."""
    table: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.split('exit codes (README "Exit codes"):\n', 1)[1].splitlines():
        if m := re.fullmatch(r"  (mldiag .+):", line):
            current = table.setdefault(m.group(1), ["-"] * 5)
        elif m := re.fullmatch(r"    (\d)  (.+)", line):
            current[int(m.group(1))] = m.group(2)
        elif line.startswith("       "):
            code = max(i for i, v in enumerate(current) if v != "-")
            current[code] += " " + line.strip()
    return table


def test_one_table_in_the_help_the_readme_and_the_docs():
    readme = read_markdown((ROOT / "README.md").read_text())
    assert readme == read_markdown((ROOT / "docs" / "offline-plan.md").read_text())
    assert readme == read_help(cli.help_text())
    assert readme == {
        ", ".join(f"mldiag {c}" for c in re.findall(r"`mldiag ([^`]+)`", k)): list(v)
        for k, v in MEANINGS.items()
    }
    assert readme_table() in (ROOT / "README.md").read_text()
    assert readme["mldiag plan, mldiag diff"][4] != "-"  # plan returns 4 too


def test_each_command_s_help_ends_with_its_rows():
    for command, parser in cli.parsers().items():
        rows = read_help(parser.format_help())
        assert rows and all(command in {n.split()[1] for n in name.split(", ")} for name in rows), command


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
