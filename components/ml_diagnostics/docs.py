"""What `help()` shows of a component: its summary, then its Args' keys and its outputs, each with its doc.

Python keeps no docstring of an annotated attribute, so the outputs' docs are read from the class's source
(as the component plugin reads them for its schema). The schema itself describes a component and a type by
its summary only: `summary()` is what the plugin hands the SDK's analyzer.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

# The reference sections: an Args' keys (generated), a component's arguments and outputs (`document`).
_SECTION = re.compile(r"\n[ \t]*\n[ \t]*(Keys:|Arguments \()")


def summary(doc: str | None) -> str | None:
    """A docstring without the reference sections `help()` shows (the schema's description)."""
    return None if doc is None else _SECTION.split(doc, maxsplit=1)[0]


def attribute_docs(cls: type) -> dict[str, str]:
    """name -> the docstring after its annotation in the class body."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    out: dict[str, str] = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for node, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            out[node.target.id] = " ".join(nxt.value.value.split())
    return out


def document(component: type, args: type) -> None:
    """Appends the Args' keys and the component's outputs to its docstring."""
    keys = inspect.cleandoc(args.__doc__ or "").split("\n\nKeys:\n", 1)
    lines = [(component.__doc__ or "").rstrip(), "", f"Arguments ({args.__name__}):"]
    lines += [f"    {line.strip()}" for line in keys[1].strip().splitlines()] if len(keys) == 2 else []
    outputs = attribute_docs(component)
    if outputs:
        lines += ["", "Outputs:"] + [f"    {name}: {doc}" for name, doc in outputs.items()]
    component.__doc__ = "\n".join(lines) + "\n"
