"""The library's parts, found, not listed: every module of `ml_diagnostics` that declares a `PART`
(ml_diagnostics/parts.py), by its order. `python -m dev.gen.args` writes from them; the tests read them.

Finding them imports every module of the library (the cloud SDKs too): a developer's step, never the
package's own (`import ml_diagnostics` reads only the generated export table).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import ml_diagnostics
from ml_diagnostics.parts import Part

PACKAGE = "ml_diagnostics"


@dataclass(frozen=True)
class Found:
    module: str
    """The module's name under the package (`gke_cluster`)."""
    part: Part


@contextmanager
def _args_as_written() -> Iterator[None]:
    """While the modules are read for their parts, an Args the committed args.py does not hold yet (a new
    part's, which this generator is about to write) is a placeholder, so its module imports."""
    args = importlib.import_module(f"{PACKAGE}.args")

    def missing(name: str) -> Any:
        if name.endswith(("Args", "Input")):
            return type(name, (dict,), {})
        raise AttributeError(name)

    args.__dict__["__getattr__"] = missing
    try:
        yield
    finally:
        del args.__dict__["__getattr__"]


def discover() -> list[Found]:
    """Every part of the library, by its order; two parts of one order, or of one section, are an error."""
    found: list[Found] = []
    with _args_as_written():
        for info in sorted(pkgutil.iter_modules(ml_diagnostics.__path__), key=lambda i: i.name):
            if info.name.startswith("_") or info.ispkg:
                continue
            part = getattr(importlib.import_module(f"{PACKAGE}.{info.name}"), "PART", None)
            if isinstance(part, Part):
                found.append(Found(info.name, part))
    for attr in ("order", "section"):
        seen: dict[object, str] = {}
        for f in found:
            value = getattr(f.part, attr)
            if value == "":
                continue
            other = seen.setdefault(value, f.module)
            if other != f.module:
                raise ValueError(f"parts {other} and {f.module} have the same {attr} {value!r}")
    return sorted(found, key=lambda f: f.part.order)


def components(found: list[Found]) -> list[Found]:
    """The parts that hold a component."""
    return [f for f in found if f.part.component]


def exports(found: list[Found], args_names: set[str]) -> dict[str, str]:
    """Exported name -> the module of the package it is imported from (`args` for an Args)."""
    out: dict[str, str] = {}
    for f in found:
        for name in f.part.exports:
            if ":" in name:
                where, name = name.split(":")
            elif name in args_names:
                where = "args"
            else:
                value = getattr(sys.modules[f"{PACKAGE}.{f.module}"], name)
                where = getattr(value, "__module__", f"{PACKAGE}.{f.module}").removeprefix(f"{PACKAGE}.")
            if out.setdefault(name, where) != where:
                raise ValueError(f"{name} is exported from both {out[name]} and {where}")
    return out


def sections(found: list[Found]) -> list[tuple[str, type[Any]]]:
    """(field of VerifyRecord, its record class) of every part with a section of its own."""
    out = []
    for f in found:
        if (f.part.record is None) != (not f.part.section):
            raise ValueError(f"part {f.module}: a record section needs both its record class and section")
        if f.part.record is not None:
            out.append((f.part.section, f.part.record))
    return out


__all__ = ["Found", "components", "discover", "exports", "sections"]
