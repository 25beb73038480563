"""How a refusal is told: pydantic's errors read in either spelling (`describe`: a key path and a message per
problem, each key as the caller spells it) and a component's own refusal of its Args (`problems_of`, and
`InvalidArgsError`, what a program or another language through the plugin receives).
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import pulumi
from pulumi.errors import InputPropertyErrorDetails
from pydantic import BaseModel, ValidationError

from ml_diagnostics.rules.base import Issues, Spelling, allowed_keys, did_you_mean, join_path, spell

_TYPE_MESSAGES = {
    "int_type": "must be a whole number (not a string, boolean or decimal)",
    "int_from_float": "must be a whole number (not a string, boolean or decimal)",
    "float_type": "must be a number (not a string or boolean)",
    "bool_type": "must be true or false (not a string or number)",
    "string_type": "must be a string (quote numbers and booleans: '0.8', 'true')",
    "list_type": "must be a list",
    "dict_type": "must be a map of key: value",
    "model_type": "must be a map of key: value",
    "model_attributes_type": "must be a map of key: value",
}
_BOUNDS = {"less_than_equal": "at most", "greater_than_equal": "at least", "greater_than": "more than"}


def format_loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, str) and len(part) > 60:
            part = part[:60] + "..."
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            out += " (key)"
        elif str(part).startswith("["):
            out += str(part)
        else:
            out += f".{part}" if out else str(part)
    return out


def model_at(root: type[BaseModel], loc: tuple[Any, ...], spelling: Spelling) -> type[BaseModel] | None:
    """The model that owns the last key of `loc`, walking `root`'s fields (unknown-key hints)."""
    model: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = next(
            (
                f
                for n, f in model.model_fields.items()
                if ((f.alias or n) if spelling == "stack" else n) == part
            ),
            None,
        )
        if field is None:
            return None
        ann = field.annotation
        for _ in range(4):  # unwrap Optional / list / dict / Annotated to the model inside
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                break
            args = [a for a in typing.get_args(ann) if a is not type(None)]
            if not args:
                break
            ann = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), args[-1])
        model = ann
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def describe(err: Mapping[str, Any], root: type[BaseModel], spelling: Spelling) -> list[tuple[str, str]]:
    """(key path, message) of one pydantic error, every key and message in `spelling`."""
    loc = tuple(
        p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "is-instance[")))
    )
    path = format_loc(loc)
    typ = err["type"]
    ctx = err.get("ctx") or {}
    if typ == "value_error" and isinstance(ctx.get("error"), Issues):
        base = path
        return [(join_path(base, rel, spelling), spell(msg, spelling)) for rel, msg in ctx["error"].problems]
    if typ == "extra_forbidden":
        owner = model_at(root, loc, spelling)
        name = loc[-1] if loc and isinstance(loc[-1], str) else ""
        return [(path, f"unknown key{did_you_mean(name, allowed_keys(owner, spelling)) if owner else ''}")]
    if typ == "missing":
        return [(path, "required key is missing")]
    msg = _TYPE_MESSAGES.get(typ) or str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if typ in ("literal_error", "enum"):
        msg = f"must be one of {ctx.get('expected')}"
    if typ in _BOUNDS:
        limit = next(iter(ctx.values()), "")
        msg = (
            f"must be {_BOUNDS[typ]} {limit:g}"
            if isinstance(limit, float)
            else f"must be {_BOUNDS[typ]} {limit}"
        )
    return [(path, spell(msg, spelling))]


# --- a component's own check of its Args -----------------------------------------------------------------

MAX_PROBLEMS = 60
S = TypeVar("S", bound=BaseModel)


class InvalidArgsError(pulumi.InputPropertiesError, pulumi.RunError, ValueError):
    """A component refused its arguments, before it registered anything. Every problem is listed, each with
    its key path in the caller's spelling (`GkeClusterArgs.node_pools[0].node_count: must be 0 or more`).

    A ValueError for Python callers; a pulumi.RunError, so `pulumi up` prints it without a traceback; a
    pulumi.InputPropertiesError whose `errors` give each problem's property path (`node_pools[0].node_count`)
    and reason, which the component plugin returns to other languages as the engine's property errors."""

    def __init__(self, component: str, name: str, problems: list[str]):
        self.component, self.name, self.problems = component, name, problems
        shown = problems[:MAX_PROBLEMS]
        more = (
            [f"... and {len(problems) - MAX_PROBLEMS} more problem(s)"]
            if len(problems) > MAX_PROBLEMS
            else []
        )
        lines = "\n".join(f"  - {p}" for p in [*shown, *more])
        message = f"invalid arguments of {component} {name!r} ({len(problems)} problem(s)):\n{lines}"
        super().__init__(message, [_property_error(f"{component}Args", p) for p in problems])


def _property_error(owner: str, problem: str) -> InputPropertyErrorDetails:
    """`Owner.a.b[0]: reason` as the property path below the Args (`a.b[0]`) and the reason."""
    path, _, reason = problem.partition(": ")
    if path == owner or path.startswith((f"{owner}.", f"{owner}[")):
        path = path[len(owner) :].removeprefix(".")
    return {"property_path": path, "reason": reason}


def problems_of(spec: type[S], args: Any, owner: str) -> tuple[S | None, list[str]]:
    """The validated Spec of `args` (None when refused) and every problem, `owner` first in each key path."""
    if not isinstance(args, Mapping):
        return None, [f"{owner}: must be a dict of its keys, not {type(args).__name__}"]
    try:
        return spec.model_validate(dict(args), by_name=True, by_alias=False), []
    except ValidationError as e:
        found = [
            f"{join_path(owner, [], 'args')}{'.' if path and not path.startswith('[') else ''}{path}: {msg}"
            for err in e.errors(include_url=False)
            for path, msg in describe(err, spec, "args")
        ]
        return None, sorted(dict.fromkeys(found))
