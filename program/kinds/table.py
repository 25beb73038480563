"""The table of target kinds, found, not listed: every package under program/kinds/ whose entry
(`program/kinds/<kind>/__init__.py`) declares a `KIND`, in the order the entries declare (`order`).

The program (`__main__.py`), the stack config (`program.config.StackConfig`), the cross-target checks,
verify, the offline plan's mock answers and its diff all read this table. The order is the order
targets are built in. docs/development.md, "Add a target kind", says what a new entry needs.
"""

from __future__ import annotations

import importlib
import pkgutil

import program.kinds
from program.kinds.base import BuildContext, Lazy, TargetKind


def discover() -> tuple[TargetKind, ...]:
    """Every kind of program/kinds/, by its order; two kinds of one order or one key are an error."""
    found: list[TargetKind] = []
    for info in sorted(pkgutil.iter_modules(program.kinds.__path__), key=lambda i: i.name):
        if info.ispkg:
            kind = getattr(importlib.import_module(f"program.kinds.{info.name}"), "KIND", None)
            if isinstance(kind, TargetKind):
                found.append(kind)
    for attr in ("order", "key"):
        seen: dict[object, str] = {}
        for kind in found:
            other = seen.setdefault(getattr(kind, attr), kind.package)
            if other != kind.package:
                raise ValueError(
                    f"kinds {other} and {kind.package} have the same {attr} {getattr(kind, attr)!r}"
                )
    return tuple(sorted(found, key=lambda k: k.order))


KINDS: tuple[TargetKind, ...] = discover()
BY_KEY = {k.key: k for k in KINDS}

__all__ = ["BY_KEY", "KINDS", "BuildContext", "Lazy", "TargetKind", "discover"]
