"""The base of every component: its arguments are checked once, by its Spec, and it is built from the Spec.

`Diagon("d", args, opts)`, a program's call, checks the whole Args against the Spec first (raising one
InvalidArgsError that names every problem, before anything is registered) and then builds. `from_spec`
builds from a Spec that is already checked, without checking it again: what a component hands its own
children, and what the stack program hands the components (its stack-file models are these Specs).
"""

# No `from __future__ import annotations`: the component plugin infers its schema from the annotations.
from typing import Any, Generic, Self, TypeVar

import pulumi
from pydantic import BaseModel

from ml_diagnostics import rules
from ml_diagnostics.nested import holds
from ml_diagnostics.parts import Part
from ml_diagnostics.rules.base import is_output

S = TypeVar("S", bound=BaseModel)
T = TypeVar("T")


async def _now(value: T) -> T:
    return value


def known(value: "T | pulumi.Output[T]") -> "pulumi.Output[T]":
    """An output of a value: plain data known now is one Output (where `Output.from_input` makes one per
    nested value); data holding an Output is lifted as `from_input` does."""
    if isinstance(value, pulumi.Output):
        return value
    if holds(value, is_output):
        return pulumi.Output.from_input(value)
    return pulumi.Output(set(), _now(value), _now(True))


class Component(pulumi.ComponentResource, Generic[S]):
    """A component whose arguments are a Spec: checked in `__init__`, trusted in `from_spec`.

    A subclass names its type token (`_TYPE`) and Spec (`_SPEC`), keeps an `__init__(name, args: XArgs,
    opts)` of its own (the plugin's schema reads that annotation), and builds its children in `_build`."""

    _TYPE: str
    _SPEC: type[BaseModel]

    def __init__(self, name: str, args: Any, opts: pulumi.ResourceOptions | None = None, **extra: Any):
        self._create(name, self.checked(name, args), opts, extra)

    @classmethod
    def checked(cls, name: str, args: Any) -> S:
        """`args` validated by the Spec; InvalidArgsError naming every problem otherwise."""
        owner = f"{cls.__name__}Args"
        return rules.check(cls._SPEC, args, component=cls.__name__, name=name, owner=owner)  # type: ignore[return-value]

    @classmethod
    def from_spec(cls, name: str, spec: S, opts: pulumi.ResourceOptions | None = None, **extra: Any) -> Self:
        """The component built from an already checked Spec (no second check)."""
        self = cls.__new__(cls)
        self._create(name, spec, opts, extra)
        return self

    def _create(self, name: str, spec: S, opts: pulumi.ResourceOptions | None, extra: dict[str, Any]) -> None:
        pulumi.ComponentResource.__init__(self, self._TYPE, name, None, self._options(spec, opts))
        self._build(name, spec, **extra)

    def _known(self, **values: Any) -> None:
        """Outputs whose values are known now: each becomes an Output when first read (a nested component's
        outputs mostly never are; what `register_outputs` records is given as plain values)."""
        self.__dict__.setdefault("_known_outputs", {}).update(values)

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_known_outputs")
        if values is None or name not in values:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        out = self.__dict__[name] = known(values.pop(name))
        return out

    def _options(self, spec: S, opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions | None:
        """The component's own options (a subclass adds what its Spec asks, e.g. protect)."""
        return opts

    def _build(self, name: str, spec: S, **extra: Any) -> None:
        raise NotImplementedError


PART = Part(
    order=0, exports=("rules.errors:InvalidArgsError", "lifecycle:DeletionPolicy", "DeletionPolicyInput")
)
"""What every component shares: its refusal of bad arguments, its deletion policy."""
