"""What a target kind is: one entry of the table in `program/kinds/__init__.py`.

Everything the program, the cross-target checks, verify and the offline plan need to know about a kind is
declared once, in its entry. Entries name their heavier parts (the component factory, the verify checks,
the offline plan's mock answers) as `Lazy` references, so validating a stack file imports no cloud SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pulumi

    from program.config_base import TargetBase
    from program.google_api import GoogleApiSettings
    from program.previous_deployment import PreviousDeployment

# (identity of the physical resource, what it is, key path relative to the kind's list entry)
Claim = tuple[tuple[Any, ...], str, str]


@dataclass(frozen=True)
class Lazy:
    """`module:attribute` (or a whole `module`), imported on first use."""

    ref: str

    def load(self) -> Any:
        module, _, attr = self.ref.partition(":")
        loaded = importlib.import_module(module)
        return getattr(loaded, attr) if attr else loaded

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)


@dataclass
class BuildContext:
    """What a component factory gets besides its target: the stack's settings and shared readers."""

    environment: str
    google_api: GoogleApiSettings
    previous: PreviousDeployment
    pending_steps: list[pulumi.Output[str | None]] = field(default_factory=list)


@dataclass(frozen=True)
class TargetKind:
    key: str
    """The stack config key (`ml-diagnostics:<key>`): a list of targets."""
    field: str
    """The StackConfig attribute holding the list."""
    model: type[TargetBase]
    """The config model of one target."""
    description: str
    """One line for the config reference."""
    prefix: str
    """Component name prefix: the target's component is `<prefix>-<name>` (renames alias it)."""
    export: str
    """Stack output key prefix: `<export>:<name>`."""
    build: Lazy
    """(target, BuildContext) -> the stack output of the target, after registering its component."""
    verify: Lazy
    """(target, StackConfig, TargetResult, verify options) -> None: read-only post-deploy checks."""
    mock_answers: Lazy
    """The offline plan's answers: {"invokes": {token: fn(args)}, "outputs": {type: fn(name, inputs)}}."""
    policy_defaults: Mapping[str, Mapping[str, Any]]
    """Policy pack levels of this kind's rules by environment: {environment: {rule: level or settings}}."""
    claims: Callable[[Any], list[Claim]] = lambda target: []
    """The physical resources a target manages (two targets may not manage one)."""
    generated_names: Callable[[Any], list[tuple[str, str]]] = lambda target: []
    """(resource name, relative key path) of resources whose names include a part the user chooses."""
    preflight: Callable[[Any, str], list[tuple[str, str]]] = lambda target, environment: []
    """(relative key path, problem) of a target that depend on the stack's environment (e.g. sizing)."""
    verify_label: str = ""
    """How verify reports name the kind (default: the key)."""


def merge_defaults(*parts: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Policy defaults of several sources, environment by environment (later ones win per rule)."""
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        for env, rules in part.items():
            out.setdefault(env, {}).update(rules)
    return out
