"""The bottom of the config layer: the base model, the error types and the secret wrapper.

Layers point down only: the library's rules (ml_diagnostics.rules) -> `config_base` -> the kinds' models
(`kinds/<kind>/model.py`) -> `config` (StackConfig, load) -> the kinds' factories -> `__main__`. This
module imports nothing else of the program, so every kind's model can import it alone.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, Literal

import pulumi
from pydantic import (
    BaseModel,
    SecretStr,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)
from pydantic_core import PydanticCustomError

from ml_diagnostics.nested import holds, map_leaves
from ml_diagnostics.rules import names
from ml_diagnostics.rules.base import Issues as Issues
from ml_diagnostics.rules.base import Spec, key
from ml_diagnostics.rules.base import raise_issues as raise_issues

NAMESPACE = "ml-diagnostics"

# The offline plan (`mldiag plan`) runs without the stack's secrets provider; it substitutes a value starting with this prefix
# (plus a digest of the ciphertext, so a changed secret still shows as changed) for every `secure:` value.
# Validators that inspect a secret's content (PEM checks) treat it as opaque: use `is_placeholder()`.
PLACEHOLDER_SECRET = "offline-plan-placeholder-secret"

Environment = Literal["dev", "staging", "prod"]
"""A stack's environment: the policy pack publishes each one's levels (policies/config/environments/)."""
ENVIRONMENTS: tuple[str, ...] = typing.get_args(Environment)


def is_placeholder(value: object) -> bool:
    if isinstance(value, (SecretStr, Secret)):
        value = value.get_secret_value()
    return isinstance(value, str) and value.startswith(PLACEHOLDER_SECRET)


class ConfigError(pulumi.RunError):
    """A stack configuration problem. RunError: the engine prints the message without a traceback."""

    def __init__(self, problems: list[str], total: int | None = None):
        # `total`: how many problems were found when `problems` lists only the first of them
        self.problems = problems
        self.total = len(problems) if total is None else total
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid stack configuration ({self.total} problem(s)):\n{lines}")


class Secret:
    """A `secure:` value inside free-form data (chart values, Slurm config...): never printed.

    The loader puts one in place of every secret leaf of a free-form field; `secret_inputs()` turns them into
    `Output.secret` where the data becomes a resource input, so the engine encrypts them in state.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "[secret]"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


def reveal(value: Any) -> Any:
    """The value with every `Secret` leaf replaced by its plain text (for config-time checks only)."""
    return map_leaves(value, lambda v: v.get_secret_value() if isinstance(v, Secret) else v)


def contains_secret(value: Any) -> bool:
    return holds(value, lambda v: isinstance(v, Secret))


# Validation context keys. PLAIN_SECRETS_OK: the engine marked a key secret but where its secret leaves are is
# unknown (no stack file), so every string leaf of that key arrives as a `Secret`; fields that take no secret
# unwrap them and secret fields accept plain text.
PLAIN_SECRETS_OK = "plain_secrets_ok"


def _secret_text(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    if isinstance(value, Secret):
        return handler(value.get_secret_value())
    if value is None or isinstance(value, SecretStr) or (info.context or {}).get(PLAIN_SECRETS_OK):
        return handler(value)
    if isinstance(value, str):
        raise PydanticCustomError("plain_secret", "holds a secret but was set in plain text")
    return handler(value)


SecretText = Annotated[SecretStr, WrapValidator(_secret_text)]
"""Secret material (kubeconfig, PEM text): only a `secure:` value is accepted; plain text is refused."""


class _FreeForm:
    """Marks a field as free-form data (maps/lists no model describes): `secure:` leaves are allowed inside."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return handler(source)


FREE_FORM = _FreeForm()


def _free_form_text(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validates the plain text of a free-form value, then puts its `Secret` leaves back."""
    validated = handler(reveal(value))
    return _rewrap(value, validated)


def _rewrap(raw: Any, validated: Any) -> Any:
    if isinstance(raw, Secret):
        return raw
    if isinstance(raw, dict) and isinstance(validated, dict):
        return {k: _rewrap(raw.get(k), v) for k, v in validated.items()}
    if isinstance(raw, list) and isinstance(validated, list) and len(raw) == len(validated):
        return [_rewrap(r, v) for r, v in zip(raw, validated, strict=True)]
    return validated


FreeTextMap = Annotated[dict[str, str], FREE_FORM, WrapValidator(_free_form_text)]
"""A string map of free-form settings (e.g. slurm.conf): values may be `secure:`."""
FreeTextList = Annotated[list[str], FREE_FORM, WrapValidator(_free_form_text)]
"""A list of free-form strings (e.g. scripts): items may be `secure:`."""


async def _now(value: Any) -> Any:
    return value


def _secret(text: str) -> pulumi.Output[str]:
    """`Output.secret` of a text known now, as one Output (`Output.secret` makes three): a stack file's
    chart values may hold thousands of secrets."""
    return pulumi.Output(set(), _now(text), _now(True), _now(True))


def secret_inputs(value: Any) -> Any:
    """Free-form config data as resource inputs: every `Secret` leaf becomes `Output.secret`."""
    return map_leaves(value, lambda v: _secret(v.get_secret_value()) if isinstance(v, Secret) else v)


def secret_output(value: SecretStr | None) -> pulumi.Output[str] | None:
    """Unwraps a config secret for a resource input, keeping it a Pulumi secret end to end."""
    if value is None:
        return None
    return _secret(value.get_secret_value())


class Model(Spec):
    """Base of every config model of the program's own keys: a library Spec (camelCase keys, unknown keys
    refused, immutable, no surprising coercion; field docs are the attribute docstrings, which the generated
    config reference prints). The keys a stack file shares with the library are the library's Specs."""


def unwrap_misplaced_secrets(model: type[BaseModel], data: Any, context: Mapping[str, Any]) -> Any:
    """Before a model validates (the Specs call it from their context): with PLAIN_SECRETS_OK every string leaf
    of a secret key arrived as a `Secret`; the fields that take no secret get their plain text back."""
    if not (context.get(PLAIN_SECRETS_OK) and isinstance(data, dict)):
        return data
    kinds = field_kinds(model)
    return {k: reveal(v) if kinds.get(k) == "plain" else v for k, v in data.items()}


@cache
def field_kinds(model: type[BaseModel]) -> dict[str, str]:
    """alias -> "secret" (takes secret text), "free" (free-form data), "model" (nested models) or "plain"."""

    def parts(ann: Any) -> list[Any]:
        return [ann, *[p for a in typing.get_args(ann) for p in parts(a)]]

    out = {}
    for name, f in model.model_fields.items():
        found = parts(f.annotation) + list(f.metadata)
        if SecretStr in found:
            kind = "secret"
        elif (
            Any in found
            or FREE_FORM in found
            or any(FREE_FORM in getattr(a, "__metadata__", ()) for a in found)
        ):
            kind = "free"
        elif any(isinstance(a, type) and issubclass(a, BaseModel) for a in found):
            kind = "model"
        else:
            kind = "plain"
        out[f.alias or name] = kind
    return out


class TargetBase(Model):
    """Common to every target: a name unique within its kind (used in resource names)."""

    name: str
    """Unique per kind; part of every resource name of the target (rename with previousName, see README)."""
    previous_name: str | None = None
    """The target's name before a rename: its resources are aliased to the old names (no replacement)."""

    @field_validator("name")
    @classmethod
    def _name_shape(cls, v: str) -> str:
        return names.check(names.target_name_problem, v)

    @field_validator("previous_name")
    @classmethod
    def _previous_name_shape(cls, v: str | None) -> str | None:
        return None if v is None else names.check(names.target_name_problem, v)

    def named_after_target(self, field: str, what: str, noun: str) -> None:
        """A rename keeps `what` (a `noun`), which is named after the target unless `field` names it: so with
        `previous_name` that field must name it."""
        if self.previous_name and getattr(self, field) is None:
            raise_issues(
                [
                    (
                        (field,),
                        f"required with {key('previous_name')}: {what} is named after the target; set "
                        f"{key(field)}: {self.previous_name} to keep the {noun} it names",
                    )
                ]
            )
