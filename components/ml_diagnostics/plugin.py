"""What the component plugin (components/PulumiPlugin.yaml) offers other languages, and its schema.

The schema is inferred from the components' typed Args and outputs by the SDK's analyzer
(`pulumi.provider.experimental`), the same way `pulumi package get-schema components` infers it; it is
committed as components/ml_diagnostics/schema.json (shipped in the wheel, so an installed plugin can `--check`) (`python -m ml_diagnostics.plugin --write`; a test fails when it is stale).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def schema() -> dict[str, Any]:
    """The schema as the engine hands it out (`pulumi package get-schema`): the analyzer's, in the shape of the
    CLI's package spec (a type reference under `items`/`additionalProperties` has no description; empty
    lists and dependencies are left out; `config` is always there)."""
    from pulumi.provider.experimental.component import ComponentProvider

    with summaries():
        provider = ComponentProvider(components(), NAME, version=VERSION)
        return _as_package_spec(json.loads(provider.schema or "{}"))


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

    return Provider(components(), NAME, version=VERSION)


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
