"""cert-manager chart values checked against the chart's own `values.schema.json`.

From v1.16.0 the cert-manager chart carries a draft-07 schema with `additionalProperties: false` at every
level: Helm refuses a release with an unknown key or a value of the wrong type, minutes into `pulumi up`,
after everything before the release was created. This checks the values the same way before anything is
registered, for every release whose schema the data holds; a version it holds none for (before v1.16.0,
or one newer than the data) is not refused for it, and `schema_note` says which.

The data, cert_manager_schema.json beside this file, is generated from cert-manager's Go modules
(`python -m dev.gen.cert_manager_schemas --write`): per release, its schema with the annotations
(description, default, ...) left out and the `$ref`s inlined, which validates exactly as the chart's own.

This module and its data exist twice, byte for byte, like compat.py: components/ml_diagnostics/ (the
library's, the source) and policies/mldiag_policy/ (the policy pack's copy; `python -m dev.gen.pack_compat`
writes it). Nothing here imports pulumi or a cloud SDK.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import semver

from . import compat

DATA = Path(__file__).with_name("cert_manager_schema.json")
SCHEMA_FROM = semver.Version(1, 16, 0)  # the first chart with values.schema.json

PathPart = str | int


@dataclass(frozen=True)
class Problem:
    """A value the chart's schema refuses: its path inside the values, and why."""

    path: tuple[PathPart, ...]
    message: str


def cert_manager_values(version: str, values: Mapping[str, Any] | None) -> dict[str, Any]:
    """The values the program sends: the CRD values of the version and the vendor's leader election
    namespace, with the caller's values deep-merged over them."""
    base = compat.deep_merge(
        compat.cert_manager_crd_values(version, values or {}),
        {"global": {"leaderElection": {"namespace": compat.CERT_MANAGER_NAMESPACE}}},
    )
    return compat.deep_merge(base, values or {})


@cache
def _data() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def known_versions() -> list[str]:
    """The releases whose schema the data holds, oldest first."""
    return sorted(_data()["versions"], key=compat.parse_semver)


@cache
def _validator(version: str) -> jsonschema.Draft7Validator | None:
    entry = _data()["versions"].get(_canonical(version))
    if entry is None:
        return None
    return jsonschema.Draft7Validator(_data()["schemas"][entry["schema"]])


def _canonical(version: str) -> str:
    """The data's spelling of a version (`v1.16.5`) for any spelling semver takes (`1.16.5`, `v1.16.5+b`)."""
    v = compat.parse_semver(version)
    return f"v{v.replace(build=None)}"


def schema_note(version: str) -> str:
    """Whether values of this chart version are checked against its schema, and if not, why."""
    try:
        v = compat.parse_semver(version)
    except ValueError:
        return "values unchecked: not a semantic version"
    if _validator(version) is not None:
        return "values checked against its values.schema.json"
    known = known_versions()
    if v < SCHEMA_FROM:
        return f"values unchecked: no values.schema.json before v{SCHEMA_FROM}"
    if v > compat.parse_semver(known[-1]):
        return f"values unchecked: newer than the schemas known (up to {known[-1]})"
    return f"values unchecked: no schema known for {_canonical(version)}"


def values_problems(
    version: str, values: Mapping[str, Any], unknown: Callable[[Any], bool] = lambda _: False
) -> list[Problem] | None:
    """What the chart version's schema refuses in `values` (as Helm gets them), or None when the data holds no
    schema for the version. A null value is left out, as Helm drops it when it merges values; a value
    `unknown` says is not known yet is checked for its key only."""
    validator = _validator(version)
    if validator is None:
        return None
    label = f"cert-manager {_canonical(version)}'s values.schema.json"
    instance = _without_nulls(values)
    problems = []
    for err in validator.iter_errors(instance):
        where = tuple(err.absolute_path)
        if err.validator == "additionalProperties":
            allowed = sorted(err.schema.get("properties", {}))
            patterns = list(err.schema.get("patternProperties", {}))
            extras = [
                k for k in err.instance if k not in allowed and not any(re.search(p, k) for p in patterns)
            ]
            for extra in sorted(extras):
                problems.append(
                    Problem((*where, extra), f"unknown key of {label}{_did_you_mean(extra, allowed)}")
                )
        elif not unknown(err.instance):  # a value known only later: its key was checked, its value cannot be
            problems.append(Problem(where, f"{_what(err)} ({label})"))
    return sorted(problems, key=lambda p: [str(x) for x in p.path])


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


_JSON_TYPES = {
    "object": "a map of key: value",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


# Python's types of JSON values, bool before int (a bool is an int to Python, not to JSON Schema)
_PY_TYPES = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (Mapping, "object"),
)


def _json_type(value: Any) -> str:
    return next((name for py, name in _PY_TYPES if isinstance(value, py)), type(value).__name__)


def _what(err: jsonschema.ValidationError) -> str:
    expected: Any = err.validator_value
    if err.validator == "type":
        wanted = [str(t) for t in (expected if isinstance(expected, list) else [expected])]
        got = _json_type(err.instance)
        return (
            f"must be {' or '.join(_JSON_TYPES.get(t, t) for t in wanted)}, not {_JSON_TYPES.get(got, got)}"
        )
    if err.validator == "enum":
        return f"must be one of {', '.join(json.dumps(v) for v in expected)}"
    return err.message


def _did_you_mean(key: str, allowed: list[str]) -> str:
    """` (did you mean X?); allowed keys: ...`."""
    folded = {a.lower(): a for a in allowed}
    match = difflib.get_close_matches(key.lower(), list(folded), n=1, cutoff=0.6)
    hint = f" (did you mean {folded[match[0]]!r}?)" if match else ""
    return f"{hint}; allowed keys: {', '.join(allowed)}" if allowed else f"{hint}; it takes no keys"
