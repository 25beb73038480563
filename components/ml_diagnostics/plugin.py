"""What the component plugin (components/PulumiPlugin.yaml) offers other languages, and its schema.

The schema is inferred from the components' typed Args and outputs by the SDK's analyzer
(`pulumi.provider.experimental`), the same way `pulumi package get-schema components` infers it; it is
committed as components/ml_diagnostics/schema.json (shipped in the wheel, so an installed plugin can `--check`) (`python -m ml_diagnostics.plugin --write`; a test fails when it is stale).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NotRequired

import pulumi

NAME = "mldiag"
VERSION = "0.2.0"
SCHEMA = Path(__file__).resolve().parent / "schema.json"


def components() -> list[type[pulumi.ComponentResource]]:
    """Every component the package exports (`ml_diagnostics.__all__`): the plugin serves them all."""
    import ml_diagnostics

    exported = [getattr(ml_diagnostics, name) for name in ml_diagnostics.__all__]
    return [c for c in exported if isinstance(c, type) and issubclass(c, pulumi.ComponentResource)]


@contextlib.contextmanager
def summaries() -> Iterator[None]:
    """The schema describes a component and a type by its summary: their docstrings also list keys and outputs
    (for `help()`), which the schema describes property by property."""
    from ml_diagnostics import args, docs

    documented = [getattr(args, name) for name in args.__all__] + list(components())
    saved = {cls: cls.__doc__ for cls in documented if isinstance(cls.__doc__, str)}
    for cls, doc in saved.items():
        cls.__doc__ = docs.summary(doc)
    try:
        yield
    finally:
        for cls, doc in saved.items():
            cls.__doc__ = doc


INT_OR_STRING = {"oneOf": [{"type": "integer"}, {"type": "string"}]}


@contextlib.contextmanager
def int_or_string() -> Iterator[dict[str, set[str]]]:
    """The analyzer takes no unions: an Args key Kubernetes types IntOrString (`int | str`, e.g. Diagon's
    max_unavailable) is shown to it as a string while it runs; yields {Args name: those keys}, which
    `with_int_or_string` then writes into the schema as a oneOf integer or string."""
    from ml_diagnostics import args

    swapped: dict[str, set[str]] = {}
    saved: list[tuple[dict[str, Any], str, Any]] = []
    for name in args.__all__:
        annotations = getattr(getattr(args, name), "__annotations__", {})
        for key, hint in annotations.items():
            inner = typing.get_args(hint)[0] if typing.get_origin(hint) is NotRequired else hint
            if set(typing.get_args(inner)) == {int, str}:
                saved.append((annotations, key, hint))
                annotations[key] = NotRequired[str] if inner is not hint else str
                swapped.setdefault(name, set()).add(key)
    try:
        yield swapped
    finally:
        for annotations, key, hint in saved:
            annotations[key] = hint


def with_int_or_string(spec_text: str, swapped: dict[str, set[str]]) -> str:
    """The analyzer's schema with each swapped key a oneOf integer or string, where its Args is a type and
    where a component takes it as its arguments."""
    spec = json.loads(spec_text)
    takes = {f"{NAME}:index:{c.__name__}": _args_name(c) for c in components()}
    places = [(f"{NAME}:index:{n}", "types", "properties", n) for n in swapped]
    places += [
        (token, "resources", "inputProperties", args) for token, args in takes.items() if args in swapped
    ]
    for token, group, key, args_name in places:
        props = spec.get(group, {}).get(token, {}).get(key, {})
        for field in swapped[args_name]:
            prop = props.get(_camel(field))
            if prop is not None and prop.get("type") == "string":
                del prop["type"]
                prop.update(INT_OR_STRING)
    return json.dumps(spec)


def _args_name(component: type[pulumi.ComponentResource]) -> str:
    hint = inspect.get_annotations(component.__init__).get("args")
    return getattr(hint, "__name__", "")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def schema() -> dict[str, Any]:
    """The schema as the engine hands it out (`pulumi package get-schema`): the analyzer's, in the shape of the
    CLI's package spec (a type reference under `items`/`additionalProperties` has no description; empty
    lists and dependencies are left out; `config` is always there)."""
    from pulumi.provider.experimental.component import ComponentProvider

    with summaries(), int_or_string() as swapped:
        provider = ComponentProvider(components(), NAME, version=VERSION)
        return _as_package_spec(json.loads(with_int_or_string(provider.schema or "{}", swapped)))


def _type_spec(t: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in t.items() if k != "description"}
    for key in ("items", "additionalProperties"):
        if key in out:
            out[key] = _type_spec(out[key])
    return out


def _properties(props: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, prop in props.items():
        prop = dict(prop)
        for key in ("items", "additionalProperties"):
            if key in prop:
                prop[key] = _type_spec(prop[key])
        out[name] = prop
    return out


def _as_package_spec(spec: dict[str, Any]) -> dict[str, Any]:
    spec = dict(spec)
    spec.setdefault("config", {})
    if not spec.get("dependencies"):
        spec.pop("dependencies", None)
    for group in ("resources", "types"):
        for token, item in list(spec.get(group, {}).items()):
            item = dict(item)
            for key in ("properties", "inputProperties"):
                if key in item:
                    item[key] = _properties(item[key])
            for key in ("required", "requiredInputs"):
                if key in item and not item[key]:
                    del item[key]
            spec[group][token] = item
    return spec


def render() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


def provider() -> Any:
    """The SDK's component provider over every component, except that a component's refused arguments
    (`InvalidArgsError`, a `pulumi.InputPropertiesError`) reach the engine as its input-property errors, one
    per property path: the SDK's `construct` wraps whatever a component raises, which hides them."""
    from pulumi.provider.experimental.component import ComponentProvider
    from pulumi.provider.server import ComponentInitError

    class Provider(ComponentProvider):
        def construct(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().construct(*args, **kwargs)
            except ComponentInitError as e:
                inner = e.inner
                if isinstance(inner, pulumi.InputPropertiesError):
                    # As itself it is also a RunError, which the SDK's server passes on as an unknown error.
                    raise pulumi.InputPropertiesError(inner.message, inner.errors) from None
                raise

    with int_or_string() as swapped:
        served = Provider(components(), NAME, version=VERSION)
    served.schema = with_int_or_string(served.schema or "{}", swapped)
    return served


def host() -> None:
    """Serve the components to the engine (run by the plugin's __main__.py)."""
    from pulumi.provider import main as serve

    with summaries():
        serve(provider(), sys.argv[1:])


def main(argv: list[str]) -> int:
    """`--write` the schema, `--check` it (exit 1 when stale), or print it."""
    try:
        text = render()
    except ImportError as e:
        print(
            f"the component plugin serves every component, and {e.name} is not installed: "
            "pip install 'ml-diagnostics[all]'",
            file=sys.stderr,
        )
        return 2
    if argv == ["--write"]:
        SCHEMA.write_text(text)
        print(f"wrote {SCHEMA}")
    elif argv == ["--check"]:
        same = SCHEMA.exists() and SCHEMA.read_text() == text
        print(
            f"{SCHEMA.name} is current"
            if same
            else f"{SCHEMA} is stale: python -m ml_diagnostics.plugin --write"
        )
        return 0 if same else 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
