"""Nested plain data, as YAML, JSON and the engine give it (maps and lists of values): whether any value in it
passes a test, and a copy with every value that is no map or list replaced."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def holds(value: Any, test: Callable[[Any], bool]) -> bool:
    """Whether `value`, or a value at any depth of its maps and lists, passes `test`."""
    if test(value):
        return True
    if isinstance(value, Mapping):
        return any(holds(v, test) for v in value.values())
    if isinstance(value, list | tuple):
        return any(holds(v, test) for v in value)
    return False


def map_leaves(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """`value` with its maps (as dicts) and lists rebuilt and every other value replaced by `leaf(value)`."""
    if isinstance(value, Mapping):
        return {k: map_leaves(v, leaf) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [map_leaves(v, leaf) for v in value]
    return leaf(value)


__all__ = ["holds", "map_leaves"]
