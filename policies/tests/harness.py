"""In-process harness for the pack's own tests: runs a rule's validate function with the SDK's public
argument classes and its unknown-checking proxy, as the analyzer server does, and collects messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mldiag_policy.pack import POLICIES
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

PACK_DIR = Path(__file__).resolve().parents[1]
BY_NAME = {p.name: p for p in POLICIES}


def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def env_options(env: str, policy: str) -> dict[str, Any]:
    entry = json.loads((PACK_DIR / "config" / "environments" / f"{env}.json").read_text()).get(policy)
    return {k: v for k, v in entry.items() if k != "enforcementLevel"} if isinstance(entry, dict) else {}


def check(policy: str, type_: str, props: dict[str, Any], config: dict[str, Any] | None = None) -> list[str]:
    """Messages (without the doc link) of one resource rule on one resource; 'UNKNOWN: ...' when it says
    the check waits for unknown values."""
    pol = BY_NAME[policy]
    out: list[str] = []
    if isinstance(pol, ResourceValidationPolicy):
        args = ResourceValidationArgs(
            type_,
            unknown_checking_proxy(props),
            f"urn:pulumi:t::p::{type_}::r",
            "r",
            _opts(),
            None,
            config or {},
        )
        try:
            pol.validate(args, lambda m, urn=None: out.append(m))
        except UnknownValueError as e:
            out.append(f"UNKNOWN: {e.message}")
        return [m.rsplit("\nSee ", 1)[0] for m in out]
    return check_stack(policy, [(type_, props)], config)


def check_stack(
    policy: str, resources: list[tuple[str, dict[str, Any]]], config: dict[str, Any] | None = None
) -> list[str]:
    pol = BY_NAME[policy]
    res = [
        PolicyResource(
            t, unknown_checking_proxy(p), f"urn:pulumi:t::p::{t}::r{i}", f"r{i}", _opts(), None, None, [], {}
        )
        for i, (t, p) in enumerate(resources)
    ]
    out: list[str] = []
    try:
        pol.validate(StackValidationArgs(res, config or {}), lambda m, urn=None: out.append(m))
    except UnknownValueError as e:
        out.append(f"UNKNOWN: {e.message}")
    return [m.rsplit("\nSee ", 1)[0] for m in out]
