"""The machinery of the rules: the Spec base model, problems with their paths, and how each caller reads them.

A rule is written once, on a Spec model (a field's type, constraint or validator), and two callers read it:
a program calling a component (its Args in snake_case: `GkeClusterArgs.node_pools[0].node_count`) and the
stack file of the program in this repository (camelCase: `ml-diagnostics:gkeClusters[0].nodePools[0].nodeCount`),
whose config models are these Specs validated by alias. So a rule never writes a key path or a key name as
text: a problem's path is a tuple of field names, list indexes and `MapKey`s (user-chosen keys, spelled as
given), and a key named inside a message is `key("node_count")`; `spell()` writes both for one caller.

How a refused value is then told (pydantic's errors read in either spelling, a component's InvalidArgsError)
is rules/errors.py.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from enum import Enum
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar

import pulumi
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

Spelling = Literal["args", "stack"]
"""args: a program's Args (field names, snake_case); stack: a stack file (aliases, camelCase)."""


class MapKey(str):
    """A key of a user's map in a problem's path (a label key): written as given, in any spelling."""


PathPart = str | int
Path = tuple[PathPart, ...]

# Markers inside a message, replaced by `spell`: `\x1f names \x1f` a key path; `\x1d stack \x1c args \x1d` a
# phrase each caller says its own way. Values in messages go through `quote` (repr), which escapes both.
_KEY = "\x1f"
_PHRASE, _PHRASE_SEP = "\x1d", "\x1c"
_MARKERS = re.compile(
    f"{_KEY}([^{_KEY}]*){_KEY}|{_PHRASE}([^{_PHRASE}]*){_PHRASE_SEP}([^{_PHRASE}]*){_PHRASE}"
)


def key(*names: str) -> str:
    """A key (or dotted key path, `key("diagon", "gcp_service_account")`) named inside a message."""
    return f"{_KEY}{'.'.join(names)}{_KEY}"


def phrase(*, stack: str, args: str) -> str:
    """A phrase a stack file's reader and a program's author need said differently (where to add a region)."""
    return f"{_PHRASE}{stack}{_PHRASE_SEP}{args}{_PHRASE}"


# The camelCase keys that are not to_camel of their field's name (the vendor's own spelling).
ALIASES = {"router_ha": "routerHA", "memory_gib": "memoryGiB"}


def alias_of(name: str) -> str:
    """A field's key in a stack file (and in the APIs' JSON): camelCase."""
    return ALIASES.get(name) or to_camel(name)


def spell_name(name: str, spelling: Spelling) -> str:
    return alias_of(name) if spelling == "stack" else name


def spell(message: str, spelling: Spelling) -> str:
    """A rule's message for one caller: its key names and phrases in that caller's words."""

    def one(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return ".".join(spell_name(n, spelling) for n in m.group(1).split("."))
        return m.group(2) if spelling == "stack" else m.group(3)

    return _MARKERS.sub(one, message)


def join_path(base: str, path: Iterable[PathPart], spelling: Spelling) -> str:
    """`base` followed by a relative path: `.name`, `[index]`, `.map key`."""
    out = base
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, MapKey):
            out += f".{part[:60]}" if out else part[:60]
        else:
            name = spell_name(part, spelling)
            out += f".{name}" if out else name
    return out


class Issues(ValueError):
    """Problems a validator found, each on a path relative to the model it validates."""

    def __init__(self, problems: Sequence[tuple[Path, str]]):
        self.problems = list(problems)
        super().__init__(
            "; ".join(spell(f"{join_path('', p, 'args')}: {m}", "args") for p, m in self.problems)
        )


def raise_issues(problems: Sequence[tuple[Path, str]]) -> None:
    if problems:
        raise Issues(problems)


def nested(prefix: Path, problems: Iterable[tuple[Path, str]]) -> list[tuple[Path, str]]:
    return [((*prefix, *path), msg) for path, msg in problems]


def closest(value: str, allowed: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The allowed value nearest to `value` (ignoring case, spaces, '-' and '_'), for "did you mean"."""

    def norm(v: str) -> str:
        return re.sub(r"[\s_\-]", "", v.lower())

    options = list(allowed)
    by_norm = {norm(o): o for o in options}
    if norm(value) in by_norm:
        return by_norm[norm(value)]
    prefixed = [
        o
        for n, o in by_norm.items()
        if min(len(n), len(norm(value))) >= 3 and (n.startswith(norm(value)) or norm(value).startswith(n))
    ]
    if len(prefixed) == 1:
        return prefixed[0]
    match = difflib.get_close_matches(norm(value), list(by_norm), n=1, cutoff=cutoff)
    return by_norm[match[0]] if match else None


def did_you_mean(value: str, allowed: list[str]) -> str:
    """` (did you mean X?); allowed keys: ...`: the nearest allowed key first, then all of them."""
    hint = closest(value, allowed)
    listed = ", ".join(allowed)
    return f" (did you mean {hint!r}?); allowed keys: {listed}" if hint else f"; allowed keys: {listed}"


def allowed_keys(model: type[BaseModel], spelling: Spelling) -> list[str]:
    """The keys a model takes, as the caller spells them (a stack file does not see the Args-only ones)."""
    hidden: frozenset[str] = getattr(model, "ARGS_ONLY", frozenset()) if spelling == "stack" else frozenset()
    return sorted(
        (f.alias or n) if spelling == "stack" else n for n, f in model.model_fields.items() if n not in hidden
    )


# --- the Spec base model and its field types -------------------------------------------------------------


class Spec(BaseModel):
    """Base of every Spec: snake_case fields with camelCase aliases, unknown keys refused, immutable, and no
    surprising coercion ("3", 3.0 and true are not the integer 3). Field docs are attribute docstrings."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=alias_of,
        validate_by_name=True,
        validate_by_alias=True,
        frozen=True,
        strict=True,
        str_strip_whitespace=True,
        hide_input_in_errors=True,
        arbitrary_types_allowed=True,
    )

    ARGS_ONLY: ClassVar[frozenset[str]] = frozenset()
    """Fields a program passes but a stack file does not have (the program sets them itself)."""

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Spec:
        # Frozen: a default instance is shared, not copied for every target (copies dominated large stacks).
        return self

    @model_validator(mode="before")
    @classmethod
    def _caller(cls, data: Any, info: ValidationInfo) -> Any:
        """What the caller's validation context asks (the program's stack files set it; a program's Args none):
        `spelling` "stack" refuses the ARGS_ONLY keys; `prepare(model, data, context)` runs first."""
        context = info.context or {}
        prepare = context.get("prepare")
        if prepare is not None:
            data = prepare(cls, data, context)
        if cls.ARGS_ONLY and context.get("spelling") == "stack" and isinstance(data, Mapping):
            given = [n for n in cls.ARGS_ONLY if alias_of(n) in data or n in data]
            if given:
                allowed = allowed_keys(cls, "stack")
                raise Issues([((n,), f"unknown key{did_you_mean(alias_of(n), allowed)}") for n in given])
        return data

    def set_keys(self) -> set[str]:
        """The field names the caller set."""
        return set(self.model_fields_set)

    @classmethod
    def trusted(cls, data: Mapping[str, Any]) -> Self:
        """`data` (by field name) that this Spec's checks already passed, as this Spec without checking it
        again: nested Specs are built the same way and an enum field's string becomes its member. For data
        that comes out of a validated model (a stack file's target); anything else goes through validation."""
        return trusted(cls, data)


M = TypeVar("M", bound=BaseModel)


def trusted(model: type[M], data: Mapping[str, Any]) -> M:
    """`Spec.trusted` for any model (a Spec may hold plain pydantic models)."""
    convert = _converters(model)
    values = {
        k: v if v is None or is_output(v) or (c := convert.get(k)) is None else c(v) for k, v in data.items()
    }
    return model.model_construct(_fields_set=set(data), **values)


@cache
def _converters(spec: type[BaseModel]) -> dict[str, Callable[[Any], Any]]:
    """Per field of `spec` that holds Specs or an enum: how `Spec.trusted` builds its value."""
    out = {}
    for name, field in spec.model_fields.items():
        if (c := _converter(field.annotation)) is not None:
            out[name] = c
    return out


def _converter(ann: Any) -> Callable[[Any], Any] | None:
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is Annotated:
        return _converter(args[0])
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        model = ann
        return lambda v: v if isinstance(v, model) or is_output(v) else trusted(model, v)
    if isinstance(ann, type) and issubclass(ann, Enum):
        enum = ann
        return lambda v: v if isinstance(v, enum) or is_output(v) else enum(v)
    if origin in (typing.Union, types.UnionType):
        found = [c for a in args if a is not type(None) and (c := _converter(a)) is not None]
        return found[0] if len(found) == 1 else None
    if origin in (list, Sequence) and args:
        return _each(_converter(args[0]), lambda f, v: [None if x is None else f(x) for x in v])
    if origin in (dict, Mapping) and len(args) == 2:
        return _each(_converter(args[1]), lambda f, v: {k: None if x is None else f(x) for k, x in v.items()})
    return None


def _each(
    item: Callable[[Any], Any] | None, over: Callable[[Callable[[Any], Any], Any], Any]
) -> Callable[[Any], Any] | None:
    if item is None:
        return None
    return lambda v: v if is_output(v) else over(item, v)


def is_output(value: object) -> bool:
    """A value only known once resources resolve (pulumi.Output, or any awaitable): no rule can read it."""
    return isinstance(value, (pulumi.Output, Awaitable))


def _input(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    return value if is_output(value) else handler(value)


class _InputMark:
    """Marks a field that takes a `pulumi.Input` (the generated Args say so; an Output skips its rules)."""

    def __repr__(self) -> str:
        return "INPUT"


INPUT = _InputMark()
T = TypeVar("T")
if typing.TYPE_CHECKING:
    Input = Annotated[T, INPUT]
else:

    class Input:
        """`Input[str]`: a plain value, checked by the field's rules, or a pulumi.Output, taken as it is."""

        def __class_getitem__(cls, item: Any) -> Any:
            return Annotated[item, INPUT, WrapValidator(_input)]


def enum_of(enum: type[Enum]) -> Any:
    """The enum, also given as its string values ("manual" for MlDiagnosticsMode.MANUAL)."""
    values = [m.value for m in enum]
    expected = ", ".join(repr(v) for v in values[:-1]) + f" or {values[-1]!r}"

    def coerce(value: Any) -> Any:
        if isinstance(value, enum):
            return value
        for member in enum:
            if member.value == value:
                return member
        raise PydanticCustomError("enum", "must be one of {expected}", {"expected": expected})

    return Annotated[enum, BeforeValidator(coerce)]


def casefolded(value: Any) -> Any:
    """For a closed set of lowercase names: `AKS` is `aks` (anything else still refused by the set)."""
    return value.strip().lower() if isinstance(value, str) else value


def check(problem: Callable[[str], str | None], value: str) -> str:
    """Raises the problem (a ValueError, reported with the key path) or returns the value."""
    if (msg := problem(value)) is not None:
        raise ValueError(msg)
    return value


def checked(problem: Callable[[str], str | None]) -> AfterValidator:
    """A field's own rule, in its annotation (`name: Annotated[str, checked(names.short_name_problem)]`):
    `problem` says what is wrong with a value, as `check` reports it; None (an unset optional) passes. Unlike
    a `field_validator`, it is not inherited by a subclass that declares the field again."""
    return AfterValidator(lambda value: value if value is None else check(problem, value))
