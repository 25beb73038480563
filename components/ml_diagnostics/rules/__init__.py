"""The one home of every rule of the components' arguments: types, ranges, closed sets, required and unknown
keys, the version rules of `compat` and the rules across keys, as Spec models (pydantic).

Each component checks its whole Args with `check` before it registers anything (itself included), so a
refused call creates nothing and says every problem at once, in the caller's spelling:

    invalid arguments of GkeCluster 'train' (2 problem(s)):
      - GkeClusterArgs.location: 'mars-1' is not allowed: must be a region (us-central1) or a zone ...
      - GkeClusterArgs.node_pools[0].node_count: must be 0 or more

The program's stack-file models are these same Specs, validated by alias (camelCase keys), so a bad value
gets the same rule and message from a stack file, with the stack file's key path. Importing this package
loads no cloud SDK.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from ml_diagnostics.rules.errors import InvalidArgsError, problems_of

S = TypeVar("S", bound=BaseModel)

__all__ = ["InvalidArgsError", "check", "checked_args"]


def check(spec: type[S], args: Any, *, component: str, name: str, owner: str) -> S:
    """`args` validated by `spec`; raises InvalidArgsError naming every problem (`owner`: the Args' name)."""
    validated, problems = problems_of(spec, args, owner)
    if validated is None:
        raise InvalidArgsError(component, name, problems)
    return validated


def checked_args(spec: type[S], args: Any, *, component: str, name: str, owner: str) -> dict[str, Any]:
    """`check`, then the Args as the component reads them: the keys the caller gave, in their checked form
    (`AKS` is `aks`, `East US` is `eastus`); Outputs as they are."""
    return check(spec, args, component=component, name=name, owner=owner).model_dump(
        exclude_unset=True, warnings=False
    )
