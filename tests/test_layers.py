"""Every module imports alone, the layers point down only, and no two modules import each other.

One fresh interpreter imports each module of components/ (the library `ml_diagnostics` and the old-path
shims), program/, mldiag/, dev/ and policies/ with every project module dropped from `sys.modules` before it
(third-party packages stay cached, which keeps this fast; the import order between project modules, where
circles live, is the same as in a fresh process), and records which project modules each import pulled in.
The modules' text is read too, so an import inside a function or under TYPE_CHECKING counts.

    library ml_diagnostics  <-  program  <-  mldiag (the CLI)  <-  dev (tooling)  <-  tests
    policies/ (the pack): imports none of them, and none imports it
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dev.gen import parts

ROOT = Path(__file__).resolve().parent.parent

_PROBE = textwrap.dedent(
    """
    import importlib, json, sys, traceback
    roots, names, prefixes = json.loads(sys.argv[1])
    sys.path[:0] = roots
    out = {}
    for name in names:
        for m in [m for m in sys.modules if m.split(".")[0] in prefixes]:
            del sys.modules[m]
        try:
            importlib.import_module(name)
            err = None
        except BaseException as e:  # noqa: BLE001 - report whatever the import raised
            err = "".join(traceback.format_exception_only(type(e), e)).strip()
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in prefixes and m != name)
        out[name] = {"error": err, "loaded": loaded}
    print(json.dumps(out))
    """
)


def _modules(base: Path, package_root: Path) -> list[str]:
    names = []
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(package_root).with_suffix("")
        skip = any(p.startswith(".") or p in ("__pycache__", "tests", "node_modules") for p in rel.parts)
        if path.name == "__main__.py" or skip:
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        names.append(".".join(parts))
    return names


# The policy pack runs from its own directory: its modules are imported relative to policies/ (its own
# tests, under policies/tests, run there too and are not modules of the pack).
POLICY_MODULES = _modules(ROOT / "policies", ROOT / "policies")
LIBRARY_MODULES = _modules(ROOT / "components" / "ml_diagnostics", ROOT / "components")
SHIM_MODULES = [
    m for m in _modules(ROOT / "components", ROOT) if not m.startswith("components.ml_diagnostics")
]
ALL_MODULES = (
    LIBRARY_MODULES
    + SHIM_MODULES
    + _modules(ROOT / "program", ROOT)
    + _modules(ROOT / "mldiag", ROOT)
    + _modules(ROOT / "dev", ROOT)
    + POLICY_MODULES
)
# `policies` too: the pack under a second name (policies.mldiag_policy) is still the pack, and is refused
PROJECT_PACKAGES = sorted({m.split(".")[0] for m in ALL_MODULES} | {"policies"})


@pytest.fixture(scope="module")
def imports() -> dict[str, dict]:
    roots = [str(ROOT / "policies"), str(ROOT), str(ROOT / "components")]
    args = json.dumps([roots, ALL_MODULES, PROJECT_PACKAGES])
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_module_imports_alone(imports):
    failed = {name: r["error"] for name, r in imports.items() if r["error"]}
    assert failed == {}
    assert {
        "ml_diagnostics",
        "program.config",
        "program.config_base",
        "program.kinds",
        "mldiag.plan.cli",
    } <= set(imports)


def _top(m: str) -> str:
    return m.split(".")[0]


# The modules that hold a component, as the library's parts say (dev/gen/parts.py finds them).
COMPONENT_MODULES = {f"ml_diagnostics.{f.module}" for f in parts.components(parts.discover())}


# Each layer and what it may import: itself and the layers before it. The old-path shims are the library's.
LAYERS = ("ml_diagnostics", "program", "mldiag", "dev")
PACK = "mldiag_policy"


def _layer(m: str) -> str:
    top = _top(m)
    if top in ("__main__", "conftest"):  # the pack's entry point and its tests' conftest, in policies/
        return PACK
    if top == "policies":  # the pack's modules under a second name: the same file loaded twice
        return "policies"
    return "ml_diagnostics" if top == "components" else top


def _allowed(m: str) -> set[str]:
    """The pack stands alone; the product reads the data it publishes (policies/config/), and only dev's
    tooling (its generators, its benchmark) imports it, under its one name."""
    layer = _layer(m)
    if layer == PACK:
        return {PACK}
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    return allowed | {PACK} if layer == "dev" else allowed


@pytest.mark.parametrize("layer", [*LAYERS, PACK])
def test_each_layer_imports_only_itself_and_those_below_it(imports, layer):
    names = [m for m in imports if _layer(m) == layer]
    assert names, layer
    wrong = {
        name: sorted(m for m in imports[name]["loaded"] if _layer(m) not in _allowed(name)) for name in names
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_no_module_text_imports_upward_or_the_tests():
    """The static graph: lazy imports in functions and TYPE_CHECKING imports obey the layers too; and no
    project module (the tests' fakes are dev's) imports anything of tests/."""
    wrong = {
        name: sorted(t for t in targets if _layer(t) not in _allowed(name))
        for name, targets in _import_graph().items()
    }
    assert {k: v for k, v in wrong.items() if v} == {}
    for path in [
        p
        for base in ("components", "program", "mldiag", "dev", "policies")
        for p in (ROOT / base).rglob("*.py")
    ]:
        if "node_modules" in path.parts or "tests" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level:
                assert _top(node.module or "") != "tests", path
            elif isinstance(node, ast.Import):
                assert all(_top(a.name) != "tests" for a in node.names), path


def test_the_layer_rule_catches_an_upward_import():
    """The rule the two tests apply refuses what it should: the library naming the program, the program the
    CLI, the CLI dev's tooling, the pack anything of the project; and allows the downward ones."""
    assert "program" not in _allowed("ml_diagnostics.gke_cluster")
    assert "mldiag" not in _allowed("program.config")
    assert "dev" not in _allowed("mldiag.plan.cli")
    assert _allowed("mldiag_policy.pack") == {PACK}
    assert PACK not in _allowed("mldiag.stacks.policy_config") and PACK in _allowed("dev.gen.policy_levels")
    assert "policies" not in _allowed("dev.gen.policy_levels") | _allowed("mldiag.stacks.new_stack")
    assert {"ml_diagnostics", "program", "mldiag"} <= _allowed("dev.bench.plan")
    assert _layer("components.providers.model_development_cluster") == "ml_diagnostics"


def _module_files() -> dict[str, Path]:
    """Import name -> file, for every module of the library, the shims, the program, the tools and the pack."""
    files = {}
    for base, root in (
        (ROOT / "components" / "ml_diagnostics", ROOT / "components"),
        (ROOT / "components" / "providers", ROOT),
        (ROOT / "program", ROOT),
        (ROOT / "mldiag", ROOT),
        (ROOT / "dev", ROOT),
        (ROOT / "policies", ROOT / "policies"),
    ):
        for path in base.rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            if any(p.startswith(".") or p in ("__pycache__", "tests", "node_modules") for p in rel.parts):
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            if parts:
                files[".".join(parts)] = path
    return files


def _import_graph() -> dict[str, set[str]]:
    """Every import a module's text makes (any level, TYPE_CHECKING included), to the project modules named."""
    files = _module_files()
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            edges |= {t for t in targets if t in files and t != name}
        graph[name] = edges
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components: any component of two or more nodes is a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_import_circles():
    graph = _import_graph()
    assert len(graph) > 100
    assert _circles(graph) == []


def _room(module: str, top: str) -> str | None:
    """The room of `top` (mldiag, program) a module is in: its folder, or its own name at the top level."""
    parts = module.split(".")
    return parts[1] if parts[0] == top and len(parts) > 1 else None


@pytest.mark.parametrize("top", ["mldiag", "program"])
def test_no_arrow_runs_back_up_between_the_rooms(top):
    """Inside the product CLI and the program, the folders (and top-level modules) import one way: a shared
    base below the commands, the kinds below nothing that imports them."""
    rooms: dict[str, set[str]] = {}
    for name, targets in _import_graph().items():
        if (room := _room(name, top)) is not None:
            rooms.setdefault(room, set()).update(
                r for t in targets if (r := _room(t, top)) is not None and r != room
            )
    assert len(rooms) > 5
    assert _circles(rooms) == []
    assert _circles({"plan": {"diff"}, "diff": {"report", "plan"}, "report": set()}) == [["diff", "plan"]]


def test_the_clouds_stand_below_the_rooms_that_read_them():
    """The clouds' clients raise `Unreachable` of their own (program/clouds): they import nothing of the
    program but the clouds and its base, so verify's result, the kinds and in-cluster checks sit above them."""
    graph = _import_graph()
    clouds = {name: targets for name, targets in graph.items() if _room(name, "program") == "clouds"}
    assert {"program.clouds.kubernetes_client", "program.clouds.google_client"} <= set(clouds)
    above = {
        name: sorted(t for t in targets if _room(t, "program") not in (None, "clouds", "lazy"))
        for name, targets in clouds.items()
    }
    assert {k: v for k, v in above.items() if v} == {}
    assert "program.clouds" in graph["program.verify.result"]


def test_base_layer_imports_nothing_above_it(imports):
    # below the program's base layer: the library's rules (and what they use: compat, the MDC schema, nested data)
    loaded = set(imports["program.config_base"]["loaded"])
    assert loaded - {"program", "program.config_base"} <= {
        m for m in loaded if m.startswith(("ml_diagnostics.rules", "ml_diagnostics.specs"))
    } | {
        "ml_diagnostics",
        "ml_diagnostics._exports",
        "ml_diagnostics.compat",
        "ml_diagnostics.lifecycle",
        "ml_diagnostics.nested",
    }
    assert not loaded & COMPONENT_MODULES


def test_the_parts_are_found():
    assert {
        "ml_diagnostics.cluster_ml_diagnostics",
        "ml_diagnostics.gke_cluster",
        "ml_diagnostics.model_development",
    } <= COMPONENT_MODULES


def test_importing_the_package_imports_no_component(imports):
    """The package reads its generated export table; the components are imported on first use."""
    assert set(imports["ml_diagnostics"]["loaded"]) == {"ml_diagnostics._exports"}


def test_kind_models_and_the_stack_config_import_no_component(imports):
    from program.kinds.table import KINDS

    models = sorted({k.model.__module__ for k in KINDS})
    assert set(models) <= set(imports) and len(models) == len(KINDS)
    for name in [*models, "program.config", "program.kinds"]:
        loaded = set(imports[name]["loaded"])
        assert not loaded & COMPONENT_MODULES, name
        assert not [m for m in loaded if m.startswith("ml_diagnostics.providers")], name
