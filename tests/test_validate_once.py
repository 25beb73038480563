"""Every value is validated once: a stack file's targets by the stack model (whose targets are the library's
Specs), never again by the components they build, nested ones included; a program's direct call is checked
once, at the component it calls, and its children are built from the checked Spec."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from ml_diagnostics import rules
from mldiag.engine.runtime import run_config

KEY = "ml-diagnostics:kubernetesClusters"
IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """The components' checks of their Args, counted by component."""
    seen: Counter[str] = Counter()
    check = rules.check

    def counted(spec, args, *, component, name, owner):  # type: ignore[no-untyped-def]
        seen[component] += 1
        return check(spec, args, component=component, name=name, owner=owner)

    monkeypatch.setattr(rules, "check", counted)
    yield seen


def target(name: str) -> dict:
    return {
        "name": name,
        "context": f"ctx-{name}",
        "workloadNamespaces": [{"name": "ai-workloads", "create": True}],
        "manualInstall": {"jaxVersion": "0.9"},
        "diagon": {"enabled": True, "image": IMAGE},
    }


def test_a_stack_files_targets_are_not_checked_again_by_the_components(checks):
    result = run_config({"ml-diagnostics:environment": "dev", KEY: [target("a"), target("b")]}, [KEY])
    types = Counter(r.type for r in result.resources)
    assert types["mldiag:index:Diagon"] == 2 and types["kubernetes:helm.sh/v3:Release"] == 6
    assert checks == Counter()


def test_a_direct_call_is_checked_once_at_the_component_called(checks):
    program = f"""
import ml_diagnostics
ml_diagnostics.KubernetesCluster("lab", {{
    "context": "lab",
    "workload_namespaces": [{{"name": "ai-workloads", "create": True}}],
    "manual_install": {{"jax_version": "0.9"}},
    "diagon": {{"image": "{IMAGE}"}},
}})
"""
    run_inline(program)
    assert checks == Counter({"KubernetesCluster": 1})


def run_inline(source: str) -> None:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        main = Path(tmp) / "__main__.py"
        main.write_text(source)
        result = run_config({}, (), stack="inline", program=main)
    kinds = Counter(r.type for r in result.resources)
    assert kinds["mldiag:index:Diagon"] == 1 and kinds["kubernetes:helm.sh/v3:Release"] == 3
