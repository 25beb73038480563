"""A config model field's description for the generated docs: its explicit `Field(description=...)`, else the
attribute docstring under it in the source of the class that declares it.

The models do not ask pydantic for attribute docstrings (`use_attribute_docstrings` parses every model's source
at import, a sixth of a plan process's start); only these generators read them, from the source, here.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap

from pydantic import BaseModel


@functools.cache
def _docstrings(cls: type) -> dict[str, str | None]:
    """The fields `cls` itself annotates, each with the string literal right under it (None without one)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str | None] = {}
    for stmt, after in zip(body, [*body[1:], None], strict=True):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            literal = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            text = after.value.value if literal else None  # type: ignore[union-attr]
            docs[stmt.target.id] = inspect.cleandoc(text) if isinstance(text, str) else None
    return docs


def description(model: type[BaseModel], name: str) -> str | None:
    explicit = model.model_fields[name].description
    if explicit is not None:
        return explicit
    for cls in model.__mro__:  # the nearest class that declares the field
        if name in vars(cls).get("__annotations__", {}):
            return _docstrings(cls).get(name)
    return None
