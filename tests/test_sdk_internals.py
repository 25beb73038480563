"""The SDK internals the offline engine relies on (mldiag/engine/sdk.py) are there in the pinned SDK, and do
what the engine expects of them. An SDK upgrade that moves one fails here, by name, not somewhere in a plan."""

from __future__ import annotations

import ast
import asyncio
import gc
import importlib.metadata
import threading
from pathlib import Path

import pulumi
from pulumi import _types

from mldiag.engine import sdk

ROOT = Path(__file__).resolve().parents[1]


def test_the_pinned_sdk_has_every_internal_the_engine_uses():
    assert importlib.metadata.version("pulumi") == sdk.PINNED, (
        "requirements.txt pins another pulumi: re-check mldiag/engine/sdk.py"
    )
    assert sdk.check() == []
    assert (sdk.SIG_KEY, sdk.SECRET_SIG, sdk.UNKNOWN) == (
        "4dabf18193072939515e22adb298388d",
        "1b47061264138c4ac30d75fd1eb44270",
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
    )


def test_a_run_to_completion_and_no_stack_traces():
    async def answer() -> int:
        return 42

    assert sdk.run_to_completion(answer()) == 42
    from pulumi.runtime import resource

    before = resource._get_stack_trace
    with sdk.without_stack_traces():
        assert resource._get_stack_trace() == type(resource._get_stack_trace())()
    assert resource._get_stack_trace is before


def test_monitor_calls_go_to_one_thread_of_their_own_during_a_run_and_the_loop_gets_its_executor_back():
    loop = asyncio.new_event_loop()
    try:
        before = loop._default_executor

        async def calls() -> set[threading.Thread]:
            done = await asyncio.gather(
                *(loop.run_in_executor(None, threading.current_thread) for _ in range(20))
            )
            return set(done)

        with sdk.monitor_calls_on_one_thread(loop):
            (worker,) = loop.run_until_complete(calls())
        assert worker is not threading.current_thread() and worker.name.startswith("mock-monitor")
        assert not worker.is_alive()  # the pool was shut down with the run
        assert loop._default_executor is before
    finally:
        loop.close()


def test_a_plan_leaves_no_monitor_thread_behind():
    from mldiag.engine.runtime import run_config

    run_config({"ml-diagnostics:environment": "dev"}, (), stack="dev")
    assert not [t for t in threading.enumerate() if t.name.startswith("mock-monitor")]


class Annotated(pulumi.ComponentResource):
    endpoint: pulumi.Output[str]


def test_resource_types_are_derived_once_per_class_during_a_run_and_as_before_after():
    before = _types.resource_types
    with sdk.resource_types_cached():
        first = _types.resource_types(Annotated)
        assert first == before(Annotated) == {"endpoint": str}
        assert _types.resource_types(Annotated) is first
        assert _types.resource_types(pulumi.ComponentResource) == before(pulumi.ComponentResource)
    assert _types.resource_types is before


def _values_to_check() -> list:
    unknown = pulumi.output.Unknown()
    shared = {"a": [1, "x", None]}
    looped: dict = {"k": 1}
    looped["self"] = looped

    class Shadowing(dict):  # an SDK output type: a dict whose properties shadow dict's methods
        values = None

    shadowing = Shadowing(values={"v": unknown})
    return [
        None, 3, "s", unknown, [], {}, [1, [2, [3, unknown]]], {"a": {"b": [unknown]}}, {"a": {"b": [1]}},
        [shared, shared, {"deep": shared}], looped, {"x": looped, "y": [unknown]}, (unknown,), {unknown},
        pulumi.Output.from_input(1), [pulumi.Output.from_input(unknown)], shadowing,
    ]  # fmt: skip


def test_unknowns_are_found_as_the_sdk_finds_them_and_leave_no_garbage():
    from pulumi.runtime import rpc

    values = _values_to_check()
    assert [sdk.contains_unknowns(v) for v in values] == [rpc.contains_unknowns(v) for v in values]
    assert [sdk.contains_unknowns(v) for v in values].count(True) == 5  # tuples and sets are not looked into
    gc.collect()
    gc.disable()
    try:
        for v in values * 10:
            rpc.contains_unknowns(v)
        assert gc.collect() > 0  # the SDK's leaves cycles: the check can see them
        for v in values * 10:
            sdk.contains_unknowns(v)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_the_sdks_unknowns_check_is_replaced_for_a_run_only():
    from pulumi.runtime import rpc

    from mldiag.engine.runtime import run_config

    before, seen = rpc.contains_unknowns, []
    original = sdk.contains_unknowns
    sdk.contains_unknowns = lambda v: seen.append(v) or original(v)  # type: ignore[assignment]
    try:
        run_config({"ml-diagnostics:environment": "dev"}, (), stack="dev")
    finally:
        sdk.contains_unknowns = original  # type: ignore[assignment]
    assert seen and rpc.contains_unknowns is before
    with sdk.no_cycle_per_unknowns_check():
        assert rpc.contains_unknowns is sdk.contains_unknowns
    assert rpc.contains_unknowns is before


def internal_uses(source: str) -> list[str]:
    """`pulumi...._private` names a module's text uses (an import of one, or an attribute of a pulumi name)."""
    tree = ast.parse(source)
    pulumi_names = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            pulumi_names |= {a.asname or a.name for a in node.names if a.name.startswith("pulumi")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pulumi"):
            pulumi_names |= {a.asname or a.name for a in node.names}
            found += [f"{node.lineno} {a.name}" for a in node.names if a.name.startswith("_")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in pulumi_names:
                found.append(f"{node.lineno} {ast.unparse(node)}")
    return found


def test_the_finder_finds_internals():
    assert internal_uses("from pulumi.runtime import config as c\nc._SECRET_KEYS.get()\n") == [
        "2 c._SECRET_KEYS"
    ]
    assert internal_uses("from pulumi.runtime.sync_await import _sync_await\n") == ["1 _sync_await"]
    assert internal_uses("import pulumi\npulumi.Output.secret('x')\n") == []


def test_no_other_module_of_the_product_or_the_program_touches_sdk_internals():
    """Outside mldiag/engine/sdk.py (the pack keeps its own: serving.py)."""
    offenders = []
    for base in ("program", "mldiag", "components/ml_diagnostics", "__main__.py"):
        paths = [ROOT / base] if base.endswith(".py") else sorted((ROOT / base).rglob("*.py"))
        for path in paths:
            if path == ROOT / "mldiag" / "engine" / "sdk.py":
                continue
            offenders += [f"{path.relative_to(ROOT)}:{u}" for u in internal_uses(path.read_text())]
    assert offenders == []
