"""The offline plan's answers for the invokes the program makes and the outputs its resources get, from each
target kind's `mocks` module (the table in program/kinds). A kind's answers live in program/kinds/<kind>/mocks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from program.kinds.table import KINDS

Answer = Callable[[dict[str, Any]], dict[str, Any]]
ResourceOutputs = Callable[[str, dict[str, Any]], dict[str, Any]]

ANSWERS: dict[str, Answer] = {}
# Output properties a resource type gets beyond its inputs (e.g. a cluster's endpoint), keyed by type token.
RESOURCE_OUTPUTS: dict[str, ResourceOutputs] = {}
for _kind in KINDS:
    _mocks = _kind.mock_answers.load()
    ANSWERS.update(_mocks.INVOKES)
    RESOURCE_OUTPUTS.update(_mocks.OUTPUTS)


def answer(token: str, args: dict[str, Any]) -> dict[str, Any]:
    fn = ANSWERS.get(token)
    if fn is None:
        raise KeyError(
            f"the offline plan has no mock answer for invoke {token!r}; add one to the mocks module of the "
            "target kind that makes it (program/kinds/<kind>/mocks.py)"
        )
    return fn(args)
