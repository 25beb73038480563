"""Realistic answers for the invokes the program makes, used by the offline plan's mock runtime.

Add one function per invoke token to ANSWERS. Each gets the invoke's arguments (camelCase, as sent)
and returns the result the provider would return.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Answer = Callable[[dict[str, Any]], dict[str, Any]]

ANSWERS: dict[str, Answer] = {}


def answer(token: str, args: dict[str, Any]) -> dict[str, Any]:
    fn = ANSWERS.get(token)
    if fn is None:
        raise KeyError(
            f"the offline plan has no mock answer for invoke {token!r}; add one to tools/mock_answers.py"
        )
    return fn(args)


ResourceOutputs = Callable[[str, dict[str, Any]], dict[str, Any]]

# Output properties a resource type gets beyond its inputs (e.g. a cluster's endpoint), keyed by type token.
RESOURCE_OUTPUTS: dict[str, ResourceOutputs] = {}
