"""Every module imports alone, and the config layers point down only.

One fresh interpreter imports each module of components/, policies/ and tools/ with every project module
dropped from `sys.modules` before it (third-party packages stay cached, which keeps this fast; the import
order between project modules, where circles live, is the same as in a fresh process), and records which
project modules each import pulled in.

    config_base, validators -> targets/* -> config (StackConfig) -> components -> __main__
    providers/* and the policy pack import no config model.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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
ALL_MODULES = _modules(ROOT / "components", ROOT) + _modules(ROOT / "tools", ROOT) + POLICY_MODULES
PROJECT_PACKAGES = sorted({m.split(".")[0] for m in ALL_MODULES})


@pytest.fixture(scope="module")
def imports() -> dict[str, dict]:
    args = json.dumps([[str(ROOT / "policies"), str(ROOT)], ALL_MODULES, PROJECT_PACKAGES])
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_module_imports_alone(imports):
    failed = {name: r["error"] for name, r in imports.items() if r["error"]}
    assert failed == {}
    assert {"components.config", "components.config_base", "tools.plan"} <= set(imports)


COMPONENT_MODULES = {
    "components.azure_ml",
    "components.cert_manager",
    "components.cluster_ml_diagnostics",
    "components.diagon",
    "components.gke_cluster",
    "components.kubernetes_cluster",
    "components.mldiagnostics_manual",
    "components.model_development",
    "components.workload_opt_in",
}
# Target models share schemas with the providers through components/specs/, never a provider module.
_PENDING: set[str] = set()


def _is_provider(m: str) -> bool:
    return m.startswith("components.providers") and "spec" not in m.rsplit(".", 1)[-1]


def _config_models(m: str) -> bool:
    return m in ("components.config", "components.config_base") or m.startswith("components.targets")


def test_base_layer_imports_nothing_above_it(imports):
    for name in ("components.config_base", "components.validators"):
        assert set(imports[name]["loaded"]) <= {
            "components",
            "components.config_base",
            "components.validators",
        }


def test_target_models_point_down_only(imports):
    targets = [m for m in imports if m.startswith("components.targets.")]
    assert targets
    for name in targets:
        loaded = set(imports[name]["loaded"])
        assert "components.config" not in loaded, name
        assert not loaded & COMPONENT_MODULES, name
        if name not in _PENDING:
            assert not [m for m in loaded if _is_provider(m)], name


def test_stack_config_imports_no_component(imports):
    loaded = set(imports["components.config"]["loaded"])
    assert not loaded & COMPONENT_MODULES


def test_providers_and_policy_pack_import_no_config_model(imports):
    checked = [m for m in imports if m.startswith("components.providers")] + POLICY_MODULES
    assert len(checked) > len(POLICY_MODULES) > 0
    for name in checked:
        assert not [m for m in imports[name]["loaded"] if _config_models(m)], name
