"""What the component plugin (components/PulumiPlugin.yaml) offers other languages, and its schema.

The schema is inferred from the components' typed Args and outputs by the SDK's analyzer
(`pulumi.provider.experimental`), the same way `pulumi package get-schema components` infers it; it is
committed as components/schema.json (`python -m ml_diagnostics.plugin --write`; a test fails when it is stale).
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
SCHEMA = Path(__file__).resolve().parent.parent / "schema.json"


def components() -> list[type[pulumi.ComponentResource]]:
    from ml_diagnostics.azure_ml import AzureMlExtension
    from ml_diagnostics.cluster_ml_diagnostics import ClusterMlDiagnostics
    from ml_diagnostics.diagon import Diagon
    from ml_diagnostics.gke_cluster import GkeCluster
    from ml_diagnostics.kubernetes_cluster import KubernetesCluster
    from ml_diagnostics.model_development import ModelDevelopmentCluster
    from ml_diagnostics.workload_opt_in import WorkloadOptIn

    return [
        ClusterMlDiagnostics,
        Diagon,
        WorkloadOptIn,
        AzureMlExtension,
        ModelDevelopmentCluster,
        GkeCluster,
        KubernetesCluster,
    ]


KEYS_SECTION = "\n\nKeys:\n"


@contextlib.contextmanager
def summaries() -> Iterator[None]:
    """A type's description in the schema is its summary: the Args' docstrings also list their keys (for
    `help()`), which the schema describes property by property."""
    from ml_diagnostics import args

    docs = {}
    for name in args.__all__:
        cls = getattr(args, name)
        if isinstance(cls.__doc__, str) and KEYS_SECTION in cls.__doc__:
            docs[cls] = cls.__doc__
            cls.__doc__ = cls.__doc__.split(KEYS_SECTION, 1)[0]
    try:
        yield
    finally:
        for cls, doc in docs.items():
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


def host() -> None:
    """Serve the components to the engine (run by the plugin's __main__.py)."""
    from pulumi.provider.experimental import component_provider_host

    with summaries():
        component_provider_host(components(), name=NAME, version=VERSION)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        SCHEMA.write_text(render())
        print(f"wrote {SCHEMA}")
    elif sys.argv[1:] == ["--check"]:
        sys.exit(0 if SCHEMA.exists() and SCHEMA.read_text() == render() else 1)
    else:
        sys.stdout.write(render())
