"""Runs the Pulumi program under the SDK's mock runtime and records every resource registration.

Used by `mldiag/plan/cli.py` and by tests. Nothing here talks to a cloud or to the Pulumi CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import heapq
import json
import os
import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from google.protobuf import json_format
from pulumi.runtime import config as runtime_config
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.stack import run_pulumi_func

from mldiag.common import (
    PROJECT,
    ROOT,
    SECRET_MASK,
    STACK_REFERENCE_TYPE,
    STACK_TYPE,
    UNKNOWN_MASK,
    engine_urn,
)
from mldiag.engine import invented as plan_invented
from mldiag.engine import mock_answers, sdk

_SIG, _SECRET_SIG, _RESOURCE_SIG = sdk.SIG_KEY, sdk.SECRET_SIG, sdk.RESOURCE_SIG
# The pickled dynamic provider changes with any code change and is not compared by the engine.
_NOT_DIGESTED = {"__provider"}


@dataclass
class RecordedResource:
    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None
    provider: str | None
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    inputs: dict[str, Any]
    unmasked_inputs: dict[str, Any] = field(repr=False)
    secret_digests: dict[str, str] = field(default_factory=dict)
    protobuf_inputs: Any = field(default=None, repr=False)
    # Lifecycle options as the engine receives them: adopt by import, earlier URNs (renames), protection.
    import_id: str | None = None
    aliases: list[str] = field(default_factory=list)
    protect: bool = False
    retain_on_delete: bool = False
    # Input paths holding values the offline plan invented (mock answers, secret placeholders): plan_invented.
    invented: list[str] = field(default_factory=list)
    # Unmasked outputs: a custom resource's mock answer, a component's registered outputs (not in the report).
    outputs: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "custom": self.custom,
            "parent": self.parent,
            "provider": self.provider,
            "dependencies": self.dependencies,
            "inputs": self.inputs,
            "secretDigests": self.secret_digests,
            "invented": self.invented,
            "importId": self.import_id,
            "aliases": self.aliases,
            "protect": self.protect,
            "retainOnDelete": self.retain_on_delete,
        }


@dataclass
class PlanResult:
    stack: str
    resources: list[RecordedResource]
    outputs: dict[str, Any]
    unmasked_outputs: dict[str, Any] = field(repr=False)
    invented_outputs: list[str] = field(default_factory=list)

    def by_type(self, type_token: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str, name: str | None = None) -> RecordedResource:
        found = [r for r in self.by_type(type_token) if name is None or r.name == name]
        if len(found) != 1:
            names = [r.name for r in self.by_type(type_token)]
            raise LookupError(f"expected one {type_token} named {name!r}, found {len(found)} among {names}")
        return found[0]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def unwire(value: Any, path: str = "", digests: dict[str, str] | None = None) -> tuple[Any, Any]:
    """Converts a wire-format value to (masked, unmasked) plain JSON; records secret digests by path."""
    if isinstance(value, dict):
        sig = value.get(_SIG)
        if sig == _SECRET_SIG:
            _, inner = unwire(value.get("value"), path, None)
            if digests is not None and path.split(".", 1)[0] not in _NOT_DIGESTED:
                digests[path or "$"] = _digest(inner)
            return SECRET_MASK, inner
        if sig == _RESOURCE_SIG:
            ref = value.get("urn")
            return ref, ref
        if sig is not None:
            return f"[{sig}]", value
        masked, plain = {}, {}
        for k, v in value.items():
            masked[k], plain[k] = unwire(v, f"{path}.{k}" if path else k, digests)
        return masked, plain
    if isinstance(value, list):
        pairs = [unwire(v, f"{path}[{i}]", digests) for i, v in enumerate(value)]
        return [m for m, _ in pairs], [p for _, p in pairs]
    if value == rpc.UNKNOWN:
        return UNKNOWN_MASK, UNKNOWN_MASK
    if isinstance(value, float) and value.is_integer():
        return int(value), int(value)
    return value, value


class PlanMocks(mocks.Mocks):
    """Answers invokes from mldiag/engine/mock_answers.py; resources echo their inputs plus realistic outputs."""

    def __init__(self, previous_outputs: dict[str, Any] | None = None) -> None:
        self._ids = 0
        self.previous_outputs = previous_outputs or {}

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict]:
        self._ids += 1
        if args.typ == STACK_REFERENCE_TYPE:
            # The program reads only its own stack: what the last deployment exported (none: a first one).
            return args.name, {
                "name": args.name,
                "outputs": dict(self.previous_outputs),
                "secretOutputNames": [],
            }
        outputs = dict(args.inputs)
        extra = mock_answers.RESOURCE_OUTPUTS.get(args.typ)
        if extra:
            outputs.update(extra(args.name, args.inputs))
        rid = args.resource_id or outputs.get("id") or f"{args.name}-id"
        return str(rid), outputs

    def call(self, args: mocks.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        return mock_answers.answer(args.token, dict(args.args)), []


class RecordingMonitor(mocks.MockMonitor):
    """MockMonitor that keeps every RegisterResource request the program sends."""

    def __init__(self, mock: mocks.Mocks) -> None:
        super().__init__(mock)
        self.recorded: list[RecordedResource] = []
        self._by_urn: dict[str, RecordedResource] = {}
        self._names: dict[str, str] = {}  # urn -> name, to derive children's inherited aliases
        self._aliases: dict[str, list[str]] = {}
        # (resource URN, or None for an invoke; the strings its mock answer added): see mldiag/engine/invented.py.
        self.made: list[tuple[str | None, list[str]]] = []

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)
        if request.type == STACK_TYPE:
            return response
        digests: dict[str, str] = {}
        wire = json_format.MessageToDict(request.object)
        masked, plain = unwire(wire, "", digests)
        prop_deps = {k: list(v.urns) for k, v in request.propertyDependencies.items()}
        aliases = self._resolve_aliases(request)
        self._names[response.urn], self._aliases[response.urn] = request.name, aliases
        state: Any = {}
        if request.custom and request.type != STACK_REFERENCE_TYPE:  # a StackReference answers past outputs
            _, state = unwire(json_format.MessageToDict(response.object))
            given = [plain, request.importId]
            self.made.append((response.urn, plan_invented.answered(given, [state, response.id])))
        self.recorded.append(
            RecordedResource(
                urn=response.urn,
                type=request.type,
                name=request.name,
                custom=bool(request.custom),
                parent=request.parent or None,
                provider=_provider_urn(request.provider),
                dependencies=list(dict.fromkeys(request.dependencies)),
                property_dependencies=prop_deps,
                inputs=masked,
                unmasked_inputs=plain,
                secret_digests=digests,
                protobuf_inputs=request.object,
                import_id=request.importId or None,
                aliases=aliases,
                protect=bool(request.protect),
                retain_on_delete=bool(request.retainOnDelete),
                outputs=state if isinstance(state, dict) else {},
            )
        )
        self._by_urn[response.urn] = self.recorded[-1]
        return response

    def RegisterResourceOutputs(self, request):  # noqa: N802 (gRPC method name)
        recorded = self._by_urn.get(request.urn)
        if recorded is not None:
            _, outputs = unwire(json_format.MessageToDict(request.outputs))
            recorded.outputs = outputs if isinstance(outputs, dict) else {}
        return super().RegisterResourceOutputs(request)

    def Invoke(self, request):  # noqa: N802 (gRPC method name)
        response = super().Invoke(request)
        if request.tok != "pulumi:pulumi:getResource":
            _, args = unwire(json_format.MessageToDict(request.args))
            _, answer = unwire(json_format.MessageToDict(getattr(response, "return")))
            self.made.append((None, plan_invented.answered(args, answer, opaque=True)))
        return response

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The mock monitor's own URNs keep only the parent's type; the plan records the engine's URNs.
        return self._urn(parent, type_, name)

    def _urn(self, parent: str, type_: str, name: str, stack: str = "", project: str = "") -> str:
        return engine_urn(
            parent, type_, name, stack or settings.get_stack(), project or settings.get_project()
        )

    def _resolve_aliases(self, request: Any) -> list[str]:
        """Every earlier URN of the resource: its own aliases, then those inherited from its parent's
        aliases (child name prefix renamed with the parent), as the engine derives them from alias specs."""
        own: list[str] = list(request.aliasURNs)
        for alias in request.aliases:
            if alias.WhichOneof("alias") == "urn":
                own.append(alias.urn)
                continue
            spec = alias.spec
            parent = "" if spec.noParent else spec.parentUrn or request.parent
            name, type_ = spec.name or request.name, spec.type or request.type
            own.append(self._urn(parent, type_, name, spec.stack, spec.project))
        out = list(own)
        parent_name = self._names.get(request.parent, "")
        for parent_alias in self._aliases.get(request.parent, []):
            for name, type_ in [(request.name, request.type)] + [_name_and_type(u) for u in own]:
                if parent_name and name.startswith(parent_name):
                    name = parent_alias.rsplit("::", 1)[-1] + name[len(parent_name) :]
                out.append(self._urn(parent_alias, type_, name))
        return sorted(set(out) - {self._urn(request.parent, request.type, request.name)})


def _name_and_type(urn: str) -> tuple[str, str]:
    parts = urn.split("::")
    return parts[3], parts[2].split("$")[-1]


def _provider_urn(ref: str) -> str | None:
    # Provider references are "<urn>::<id>".
    if not ref:
        return None
    return ref.rsplit("::", 1)[0]


def _decode(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# How run_config treats the garbage collector during a run: the collector is off while the program runs,
# then one collection of generations 0-1 (what the run allocated) at its end, inside the run, where the
# plan's time is measured. Inside a process that goes on, that pass cannot go: the SDK's object graph is
# cyclic garbage after a run (1.2 of 1.4 million tracked objects at 300 targets). A process that plans once
# and ends with end_process() (one_shot()) never pays it: the collector stays off and the OS takes the heap
# back at once (400 self-managed targets: 8.9 -> 6.0 s wall). `python -m dev.bench.plan --gc` compares
# these against other treatments (it sets gc_policy).
GcPolicy = Callable[[], Callable[[], None]]
"""Applied as a run starts; returns what restores the collector as it ends."""


def collect_after_run() -> Callable[[], None]:
    enabled = gc.isenabled()
    gc.disable()

    def restore() -> None:
        if enabled:
            gc.enable()
        gc.collect(1)  # the generations holding what the run allocated, not the caller's whole heap

    return restore


def collector_off() -> Callable[[], None]:
    gc.disable()
    return lambda: None


gc_policy: GcPolicy = collect_after_run


def one_shot() -> None:
    """For a process that plans one stack and then ends with `end_process`: the collector stays off."""
    global gc_policy
    gc_policy = collector_off


def end_process(code: int) -> NoReturn:
    """Ends the process now: output flushed, the heap not walked or torn down (`one_shot`)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more reaches the reader
            stream.flush()
    os._exit(code)


def run_config(
    config: dict[str, Any],
    secret_keys: list[str] | tuple[str, ...] | set[str] = (),
    stack: str = "dev",
    program: Path | None = None,
    previous_outputs: dict[str, Any] | None = None,
) -> PlanResult:
    """Runs the program with the given config map (`"ml-diagnostics:x"` -> value) under mocks.

    `previous_outputs`: the stack outputs of the last deployment (as `pulumi stack output --json` prints
    them), answered to the program's StackReference to its own stack; None plans a first deployment.

    Raises whatever the program raises (ConfigError for bad config).
    """
    program = program or ROOT / "__main__.py"
    monitor = RecordingMonitor(PlanMocks(previous_outputs))
    settings.set_root_resource(None)  # type: ignore[arg-type]  # pulumi types it Resource; None resets it, as its reset_options does
    runtime_config.set_all_config({k: _decode(v) for k, v in config.items()}, list(secret_keys))
    # "organization": what the CLI reports with a file backend (a StackReference names org/project/stack).
    mocks.set_mocks(
        monitor.mocks,
        project=PROJECT,
        stack=stack,
        preview=False,
        monitor=monitor,
        organization="organization",
    )
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))

    def body() -> None:
        runpy.run_path(str(program), run_name="__main__")

    loop = _ensure_loop()
    restore_gc = gc_policy()
    try:
        with (
            sdk.without_stack_traces(),
            sdk.resource_types_cached(),
            sdk.no_cycle_per_unknowns_check(),
            sdk.monitor_calls_on_one_thread(loop),
        ):
            sdk.run_to_completion(run_pulumi_func(body))
            outputs_wire = sdk.run_to_completion(_serialize_outputs(sdk.root_resource()))
    finally:
        sdk.reset_run_state()
        runtime_config.set_all_config({}, [])
        restore_gc()
        del loop
    masked, plain = unwire(outputs_wire)
    resources = deterministic_order(monitor.recorded)
    inventory = plan_invented.Inventory(monitor.made, plan_invented.config_strings(config))
    by_urn = {r.urn: r for r in resources}
    for urn, paths in plan_invented.mark_resources(resources, inventory).items():
        by_urn[urn].invented = sorted(paths)
    return PlanResult(
        stack=stack,
        resources=resources,
        outputs=masked,
        unmasked_outputs=plain,
        invented_outputs=sorted(plan_invented.mark_outputs(masked, plain, inventory)),
    )


def deterministic_order(resources: list[RecordedResource]) -> list[RecordedResource]:
    """Parents, providers and dependencies before what needs them; otherwise by URN.

    The SDK registers resources as their inputs resolve, so the order it sends them in varies between runs;
    this order does not.
    """
    by_urn = {r.urn: r for r in resources}
    waits_for: dict[str, set[str]] = {}
    needed_by: dict[str, list[str]] = {u: [] for u in by_urn}
    for r in resources:
        r.dependencies.sort()
        for urns in r.property_dependencies.values():
            urns.sort()
        before = {u for u in (r.parent, r.provider, *r.dependencies) if u in by_urn and u != r.urn}
        waits_for[r.urn] = before
        for u in before:
            needed_by[u].append(r.urn)
    ready = [u for u, before in waits_for.items() if not before]
    heapq.heapify(ready)
    order: list[RecordedResource] = []
    while ready:
        urn = heapq.heappop(ready)
        order.append(by_urn[urn])
        for nxt in needed_by[urn]:
            waits_for[nxt].discard(urn)
            if not waits_for[nxt]:
                heapq.heappush(ready, nxt)
    placed = {r.urn for r in order}
    # A dependency cycle cannot come from a real program (the SDK awaits dependencies first); keep all anyway.
    return order + sorted((r for r in resources if r.urn not in placed), key=lambda r: r.urn)


async def _serialize_outputs(root: Any) -> dict[str, Any]:
    if root is None or not root.outputs:
        return {}
    struct = await rpc.serialize_properties(dict(root.outputs), {}, keep_output_values=False)
    return json_format.MessageToDict(struct)


def _ensure_loop() -> asyncio.AbstractEventLoop:
    try:
        return asyncio.get_event_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        return loop


__all__ = ["PROJECT", "ROOT", "PlanResult", "RecordedResource", "deterministic_order", "run_config", "unwire"]
