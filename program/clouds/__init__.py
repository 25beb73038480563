"""The clouds the target kinds run on. Each kind's entry (program/kinds/<kind>/__init__.py) names its cloud,
and the stack config, the build context, verify and the fleet read the cloud through that entry:

- `settings`: the stack file's key of the cloud's settings (`googleApi`), its model and docs (None: none);
- `client`: what verify reads the cloud with, made once per run from the settings and verify's options;
- `options`: verify's (and the fleet gates') command-line options for it (`--arm-endpoint`).

A client raises `Unreachable` when its cloud cannot be asked at all. A kind on a new cloud adds one module
here and names it in its entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class Unreachable(Exception):
    """The target cannot be reached (connection, credentials, missing secret): no check can run."""


@dataclass(frozen=True)
class Option:
    """A command-line option of verify for one cloud (also the fleet gates' setting of the same name)."""

    flag: str
    dest: str
    default: str
    help: str


@dataclass(frozen=True)
class Settings:
    """A cloud's stack-level settings: the stack file key and the model of its value."""

    key: str
    field: str
    model: type[Any]
    description: str


@dataclass(frozen=True)
class Cloud:
    name: str
    settings: Settings | None = None
    client: Callable[[Any, dict[str, Any]], Any] | None = None
    """(the stack's settings of this cloud or None, verify's options) -> the client verify's checks use."""
    options: tuple[Option, ...] = field(default_factory=tuple)


def clouds_of(kinds: Any) -> list[Cloud]:
    """The clouds of the given kinds, each once, in the kinds' order."""
    out: list[Cloud] = []
    for kind in kinds:
        if kind.cloud not in out:
            out.append(kind.cloud)
    return out
