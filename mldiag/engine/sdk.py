"""The one place the product reaches into the Pulumi SDK's internals (pulumi==3.272.0, requirements.txt).

The offline engine runs a program under the SDK's mock runtime the way the engine would run it, and a few
things it needs have no public name. Everything such lives here, checked against the pinned version by
tests/test_sdk_internals.py, which fails loudly (naming the attribute) when an upgrade moves one. (The policy
pack is self-contained and keeps its one such place to itself: policies/mldiag_policy/serving.py.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

import pulumi
from pulumi import _types
from pulumi.runtime import known_types as _known_types
from pulumi.runtime import resource as _resource
from pulumi.runtime import rpc as _rpc
from pulumi.runtime import settings as _settings
from pulumi.runtime import sync_await as _sync
from pulumi.runtime.proto import source_pb2

PINNED = "3.272.0"
T = TypeVar("T")

# The wire format's markers of special values (a secret, a resource reference).
SIG_KEY: str = _rpc._special_sig_key
SECRET_SIG: str = _rpc._special_secret_sig
RESOURCE_SIG: str = _rpc._special_resource_sig
UNKNOWN: str = _rpc.UNKNOWN


def run_to_completion(awaitable: Awaitable[T]) -> T:
    """Runs an awaitable on the SDK's own event loop as the SDK's synchronous entry points do."""
    return _sync._sync_await(awaitable)


@contextlib.contextmanager
def without_stack_traces() -> Iterator[None]:
    """The SDK captures the Python stack of every registration for the CLI's diagnostics (a walk of the whole
    stack each time); a mock monitor records none, so a run under mocks skips it."""
    saved = _resource._get_stack_trace
    _resource._get_stack_trace = lambda: source_pb2.StackTrace()
    try:
        yield
    finally:
        _resource._get_stack_trace = saved


@contextlib.contextmanager
def resource_types_cached() -> Iterator[None]:
    """The SDK derives a resource class's output types from its annotations again for every resource whose
    outputs it resolves (a throwaway class and `get_type_hints` each time: for annotated component classes
    about a fifth of a plan's SDK overhead over the typed floor); a class's annotations do not change during a
    run, so each class's are derived once."""
    saved = _types.resource_types
    _types.resource_types = functools.cache(saved)
    try:
        yield
    finally:
        _types.resource_types = saved


def _unknown_in(value: Any, seen: set[int]) -> bool:
    if _known_types.is_unknown(value):
        return True
    if id(value) in seen:
        return False
    seen.add(id(value))
    if isinstance(value, dict):
        return any(_unknown_in(value[k], seen) for k in value)  # not .values(): output types shadow it
    if isinstance(value, list):
        return any(_unknown_in(v, seen) for v in value)
    return False


def contains_unknowns(val: Any) -> bool:
    """`pulumi.runtime.rpc.contains_unknowns` without its garbage: the SDK's defines a recursive closure per
    call, a reference cycle only the collector frees; the SDK calls it for every Output it makes and every
    value it serializes."""
    if isinstance(val, (dict, list)):
        return _unknown_in(val, set())
    return _known_types.is_unknown(val)


@contextlib.contextmanager
def no_cycle_per_unknowns_check() -> Iterator[None]:
    """The SDK's `contains_unknowns` replaced by `contains_unknowns` above for the run (same answers): a
    500-target plan left about 200,000 such cycles, half of the objects the run's collection walked."""
    saved = _rpc.contains_unknowns
    _rpc.contains_unknowns = contains_unknowns
    try:
        yield
    finally:
        _rpc.contains_unknowns = saved


@contextlib.contextmanager
def monitor_calls_on_one_thread(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """The SDK sends every monitor call (register, outputs, invoke) through `run_in_executor(None, ...)`, to
    the loop's default pool of up to cores + 4 threads, for a gRPC call that blocks. A mock monitor answers in
    Python at once, so those threads only took the GIL from each other: lock handoffs were a quarter of a
    plan's CPU (2,000 namespaces: 3.6 -> 2.6 s with one thread). During a run under mocks the calls go to
    one thread of their own. (Not the loop's own thread: the mock monitor runs its own event loop for each
    call, which cannot nest in the running one.)"""
    saved = loop._default_executor  # type: ignore[attr-defined]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mock-monitor")
    loop.set_default_executor(pool)
    try:
        yield
    finally:
        loop._default_executor = saved  # type: ignore[attr-defined]
        pool.shutdown(wait=True)


def reset_run_state() -> None:
    """What one run under mocks leaves in the SDK's settings, cleared so the next starts clean."""
    _settings.SETTINGS.rpc_manager.clear()
    _settings.SETTINGS.outputs.clear()


def root_resource() -> Any:
    return _settings.get_root_resource()


def check() -> list[str]:
    """Every internal this module uses that the installed SDK lacks (empty: all are there)."""
    missing = [
        f"{module.__name__}.{name}"
        for module, names in (
            (
                _rpc,
                (
                    "_special_sig_key",
                    "_special_secret_sig",
                    "_special_resource_sig",
                    "UNKNOWN",
                    "contains_unknowns",
                ),
            ),
            (_known_types, ("is_unknown",)),
            (_sync, ("_sync_await",)),
            (_resource, ("_get_stack_trace",)),
            (_types, ("resource_types",)),
            (_settings, ("SETTINGS", "get_root_resource", "set_root_resource")),
        )
        for name in names
        if not hasattr(module, name)
    ]
    settings = getattr(_settings, "SETTINGS", None)
    missing += [
        f"pulumi.runtime.settings.SETTINGS.{n}"
        for n in ("rpc_manager", "outputs")
        if not hasattr(settings, n)
    ]
    return missing


__all__ = [
    "PINNED",
    "RESOURCE_SIG",
    "SECRET_SIG",
    "SIG_KEY",
    "UNKNOWN",
    "check",
    "contains_unknowns",
    "no_cycle_per_unknowns_check",
    "pulumi",
    "reset_run_state",
    "root_resource",
    "run_to_completion",
    "without_stack_traces",
]
