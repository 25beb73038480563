"""Checks across targets: one physical resource claimed twice, two targets generating one resource name, or
a target's setting the stack's settings rule out.

Each problem names both key paths (relative to the `ml-diagnostics:` namespace). Resource names follow the
components' scheme (`<kind prefix>-<target>-<part>`); only parts a user chooses (node pools, workload
namespaces) can make two different targets produce the same name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from program.kinds.base import TargetKind


def cross_target_problems(cfg: Any, kinds: Iterable[TargetKind]) -> list[str]:
    """Problems across the targets of `cfg` (a StackConfig), from each kind's claims and generated names."""
    problems: list[str] = []
    owner: dict[tuple[Any, ...], str] = {}
    names: dict[str, str] = {}
    for kind in kinds:
        for i, t in enumerate(cfg.targets(kind)):
            at = f"{kind.key}[{i}]"
            for ident, what, rel in kind.claims(t):
                path = at + rel
                if ident in owner:
                    problems.append(
                        f"{path}: {what} is already managed by {owner[ident]}; one target per resource"
                    )
                else:
                    owner[ident] = path
            for name, rel in kind.generated_names(t):
                path = f"{at}.{rel}"
                first = names.setdefault(name, path)
                if first != path and first.split("]")[0] != path.split("]")[0]:
                    problems.append(
                        f"{path}: generates the resource name {name.split(':', 1)[1]!r} that {first} generates too; "
                        "rename one of the targets"
                    )
    return problems + _emulator_problems(cfg, kinds)


def _emulator_problems(cfg: Any, kinds: Iterable[TargetKind]) -> list[str]:
    """The stack's `googleApi.emulator` uses no credentials: no target may impersonate under it."""
    if not cfg.google_api.emulator:
        return []
    return [
        f"{kind.key}[{i}].googleApi.impersonateServiceAccount: googleApi.emulator is true, which uses no "
        "credentials; remove impersonateServiceAccount here or the emulator"
        for kind in kinds
        for i, t in enumerate(cfg.targets(kind))
        if getattr(getattr(t, "google_api", None), "impersonate_service_account", None)
    ]
