"""What a kind's state hook (`program/kinds/<kind>/state.py`) reads: the resources of a stack's state, as
`mldiag verify --stack` finds them (program/verify_stack.py), and the helpers several kinds share.

A kind's `state.py` may hold:

- `COMPONENTS`, the components (their names under `mldiag:index:`) whose record it rebuilds, and
  `rebuild(top, descendants)`: the record of such a component from before `verifyRecord`, from what is
  exact in the state, as `(record, "")`, or `(None, why not)`;
- `access(descendants, by_urn)`: how the cluster of a record of the kind's section is reached (the
  kubeconfig and context the stack's own provider holds); raises `Unreachable` when it cannot be read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ml_diagnostics.rules.base import alias_of

TOKEN = "mldiag:index:"


@dataclass
class Resource:
    urn: str
    type: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    provider: str | None

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


def google_api_from(inputs: dict[str, Any], api: str) -> dict[str, Any]:
    """The googleApi a dynamic resource's client inputs were made from (ml_diagnostics.google_api.rest_inputs)."""
    out: dict[str, Any] = {}
    endpoints = {}
    if input_of(inputs, "api_endpoint"):
        endpoints[api] = input_of(inputs, "api_endpoint")
    if input_of(inputs, "iam_endpoint"):
        endpoints["iamcredentials"] = input_of(inputs, "iam_endpoint")
    if endpoints:
        out["endpoints"] = endpoints
    for key in ("quota_project", "impersonate_service_account"):
        if input_of(inputs, key):
            out[alias_of(key)] = input_of(inputs, key)
    if input_of(inputs, "emulator"):
        out["emulator"] = True
    return out


def input_of(inputs: dict[str, Any], key: str) -> Any:
    """A dynamic resource's input: the engine keeps the SDK's camelCase of the Python keys."""
    return inputs.get(alias_of(key), inputs.get(key))


def under(r: Resource, top: Resource, everything: list[Resource]) -> bool:
    by_urn = {x.urn: x for x in everything}
    seen: set[str] = set()
    while r.parent and r.parent not in seen:
        if r.parent == top.urn:
            return True
        seen.add(r.parent)
        if r.parent not in by_urn:
            return False
        r = by_urn[r.parent]
    return False


__all__ = ["TOKEN", "Resource", "google_api_from", "input_of", "under"]
