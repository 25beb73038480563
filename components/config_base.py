"""The bottom of the config layer: the base model, the error types and the secret wrapper.

Layers point down only: `config_base` and `validators` -> `targets/*` -> `config` (StackConfig, load) ->
components -> `__main__`. This module imports nothing from the project, so every target model (and the
Model Development Cluster spec shared with its provider) can import it alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pydantic import BaseModel, ConfigDict, SecretStr, field_validator
from pydantic.alias_generators import to_camel

from components import validators

NAMESPACE = "ml-diagnostics"

# `tools/plan` runs without the stack's secrets provider; it substitutes a value starting with this prefix
# (plus a digest of the ciphertext, so a changed secret still shows as changed) for every `secure:` value.
# Validators that inspect a secret's content (PEM checks) treat it as opaque: use `is_placeholder()`.
PLACEHOLDER_SECRET = "offline-plan-placeholder-secret"


def is_placeholder(value: object) -> bool:
    if isinstance(value, (SecretStr, Secret)):
        value = value.get_secret_value()
    return isinstance(value, str) and value.startswith(PLACEHOLDER_SECRET)


class ConfigError(pulumi.RunError):
    """A stack configuration problem. RunError: the engine prints the message without a traceback."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid stack configuration ({len(problems)} problem(s)):\n{lines}")


class Issues(ValueError):
    """Raised by model validators to report problems on specific sub-paths of the model.

    `problems` is a list of (relative path, message); the path may be "" for the model itself,
    `"inference.sslCname"` or `"nodePools[2].id"`.
    """

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{p}: {m}" if p else m for p, m in problems))


def raise_issues(problems: list[tuple[str, str]]) -> None:
    if problems:
        raise Issues(problems)


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


def secret_inputs(value: Any) -> Any:
    """Free-form config data as resource inputs: every `Secret` leaf becomes `Output.secret`."""
    if isinstance(value, Secret):
        return pulumi.Output.secret(value.get_secret_value())
    if isinstance(value, Mapping):
        return {k: secret_inputs(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [secret_inputs(v) for v in value]
    return value


def secret_output(value: SecretStr | None) -> pulumi.Output[str] | None:
    """Unwraps a config secret for a resource input, keeping it a Pulumi secret end to end."""
    if value is None:
        return None
    return pulumi.Output.secret(value.get_secret_value())


class Model(BaseModel):
    """Base of every config model: camelCase keys, unknown keys rejected, immutable, no surprising coercion.

    Field descriptions are the attribute docstrings (the generated config reference prints them).
    """

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        str_strip_whitespace=True,
        hide_input_in_errors=True,
        use_attribute_docstrings=True,
    )


class TargetBase(Model):
    """Common to every target: a name unique within its kind (used in resource names)."""

    name: str
    """Unique per kind; part of every resource name of the target (rename with previousName, see README)."""
    previous_name: str | None = None
    """The target's name before a rename: its resources are aliased to the old names (no replacement)."""

    @field_validator("name")
    @classmethod
    def _name_shape(cls, v: str) -> str:
        return validators.check(validators.target_name_problem, v)

    @field_validator("previous_name")
    @classmethod
    def _previous_name_shape(cls, v: str | None) -> str | None:
        return None if v is None else validators.check(validators.target_name_problem, v)
