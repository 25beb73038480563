"""Writes the cert-manager chart's values schemas the library checks `certManager.values` against
(components/ml_diagnostics/cert_manager_schema.json; the pack's copy through dev.gen.pack_compat), from
cert-manager's Go modules: for each release of VERSIONS, `deploy/charts/cert-manager/values.schema.json`
with the annotations left out (description, default, ...: they validate nothing) and every `$ref` inlined
(draft-07 ignores a `$ref`'s siblings, and so does the inlining); each distinct schema once.

    python -m dev.gen.cert_manager_schemas --write
    python -m dev.gen.cert_manager_schemas --check   # exit 1 when stale (tests/test_cert_manager_schema.py)

Both need `go` and the Go module proxy (or the modules in Go's module cache).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from dev import gen
from dev.e2e.cert_manager_chart import CHART_SOURCE, MODULE, ChartError, go_download
from dev.gen import pack_compat

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "components" / "ml_diagnostics" / "cert_manager_schema.json"

# The releases with values.schema.json (from v1.16.0) the data holds. v1.18.4 is left out: the proxy serves
# it, but the checksum database has no entry for it, so go refuses to download it.
VERSIONS = (
    *(f"v1.16.{p}" for p in range(6)),
    *(f"v1.17.{p}" for p in range(5)),
    *(f"v1.18.{p}" for p in (0, 1, 2, 3, 5, 6)),
    *(f"v1.19.{p}" for p in range(5)),
    *(f"v1.20.{p}" for p in range(3)),
    *(f"v1.21.{p}" for p in range(3)),
)

ANNOTATIONS = frozenset({"description", "default", "title", "examples", "$comment", "readOnly", "writeOnly"})
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependencies"})  # name -> schema
SCHEMA_ONE = frozenset(
    {
        "items",
        "additionalProperties",
        "additionalItems",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    }
)
SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf"})
DEFINITIONS = frozenset({"$defs", "definitions", "$schema", "$id"})


def resolve(root: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        raise ValueError(f"only local references are inlined, not {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def reduce(node: Any, root: dict[str, Any], refs: tuple[str, ...] = ()) -> Any:
    """`node` without annotations, its `$ref`s replaced by what they point at."""
    if not isinstance(node, dict):
        return node  # true / false, or a list of schemas (`items`, `dependencies`' names)
    if "$ref" in node:
        ref = node["$ref"]
        if ref in refs:
            raise ValueError(f"recursive reference {ref!r}: cannot be inlined")
        return reduce(resolve(root, ref), root, (*refs, ref))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ANNOTATIONS or key in DEFINITIONS:
            continue
        if key in SCHEMA_MAPS:
            out[key] = {name: reduce(s, root, refs) for name, s in value.items()}
        elif key in SCHEMA_ONE or key in SCHEMA_LISTS:
            out[key] = (
                [reduce(s, root, refs) for s in value]
                if isinstance(value, list)
                else reduce(value, root, refs)
            )
        else:
            out[key] = (
                value  # a keyword with a literal value: type, enum, const, minimum, pattern, required, ...
            )
    return out


def reduced(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "http://json-schema.org/draft-07/schema#", **reduce(schema, schema)}


def generate() -> str:
    answers = go_download(list(VERSIONS))
    schemas: dict[str, dict[str, Any]] = {}
    ids: dict[str, str] = {}  # canonical JSON -> the first version with it
    versions: dict[str, dict[str, str]] = {}
    for version in VERSIONS:
        source = Path(answers[version]["Dir"]) / CHART_SOURCE / "values.schema.json"
        schema = reduced(json.loads(source.read_text()))
        text = json.dumps(schema, sort_keys=True)
        schema_id = ids.setdefault(text, version)
        schemas.setdefault(schema_id, schema)
        versions[version] = {"schema": schema_id, "sum": answers[version]["Sum"]}
    doc = {
        "generatedBy": "python -m dev.gen.cert_manager_schemas --write",
        "source": f"{CHART_SOURCE}/values.schema.json of {MODULE}, per release (sum: its go.sum hash); "
        "annotations left out, $refs inlined",
        "versions": versions,
        "schemas": schemas,
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


GENERATOR = "python -m dev.gen.cert_manager_schemas --write"


def main(argv: list[str]) -> int:
    if argv not in (["--write"], ["--check"]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        text = generate()
    except ChartError as e:  # the Go module proxy, not the input: exit 1 as any failed check
        print(f"cert-manager schemas: {e}", file=sys.stderr)
        return 1
    code = gen.write_or_check(
        argv, {OUT.relative_to(ROOT): text}, ROOT, GENERATOR, "cert-manager schemas are current"
    )
    return pack_compat.main([]) if code == 0 and argv == ["--write"] else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
