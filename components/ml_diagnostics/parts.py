"""What a module of the library declares about itself: its `PART`.

A component module (and a module of shared arguments) says, in its `PART`, which component it holds, the
Spec its Args are generated from, the names the package exports from it, the section of the verify record
its component writes and its row of components/README.md. Nothing lists the modules: `python -m
dev.gen.args --write` finds every module of `ml_diagnostics` that declares a `PART` and writes from them
the Args (`args.py`), the export table `ml_diagnostics/__init__.py` reads (`_exports.py`), the verify
record's sections (`_record.py`) and the README's table. The package itself never scans: `import
ml_diagnostics` stays as light as the export table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Part:
    order: int
    """Where the part stands among the parts: the order its Args are written, its record section stands and
    its README row comes."""
    component: str = ""
    """The component class the module holds (empty: a module of shared arguments)."""
    spec: type[Any] | None = None
    """The Spec its Args are generated from (a root of `python -m dev.gen.args`)."""
    exports: tuple[str, ...] = ()
    """The names `ml_diagnostics` exports for it (a component exported here is served by the plugin): an
    Args of `args.py` is exported from there, `module:Name` from that module of the package, any other name
    from the module that defines it."""
    record: type[Any] | None = None
    """The section of the verify record its component writes (a record class in a module that imports no
    SDK), when it is a section of its own."""
    section: str = ""
    """That section's field of `VerifyRecord` (snake_case; its key in the record is the camelCase)."""
    readme: tuple[str, str] | None = None
    """Its row of components/README.md's table: (component cell, what it creates)."""


__all__ = ["Part"]
