"""The ml-diagnostics policy pack: every rule of every module in `rules/`, found by importing them all (each
rule records itself in `common.DECLARED` as its module builds it; no list to keep by hand), in rule-name
order. See policies/README.md.

`environment_config` is an environment's pack config, made from the rules' declared levels (levels.py):
policies/config/environments/<environment>.json holds it.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from pulumi_policy import Policy

from . import common, forms, levels, rules

RULE_MODULES = tuple(
    importlib.import_module(f"{rules.__name__}.{m.name}")
    for m in sorted(pkgutil.iter_modules(rules.__path__), key=lambda m: m.name)
)
RULES: tuple[common.Declared, ...] = tuple(common.DECLARED[name] for name in sorted(common.DECLARED))
POLICIES: list[Policy] = [r.policy for r in RULES]
LEVELS: dict[str, levels.Levels] = {r.policy.name: r.levels for r in RULES}
TYPES: dict[str, frozenset[str] | None] = {r.policy.name: r.types for r in RULES}


def may_check(policy: Policy, resource_type: str) -> bool:
    """Whether `policy` can check a resource declared as `resource_type` (any other it returns from at once)."""
    types = TYPES.get(policy.name)
    return types is None or forms.may_hold(resource_type, types)


def environment_config(environment: str) -> dict[str, Any]:
    """The pack config of an environment: `all` (its base level), then every rule's own entry there."""
    return levels.environment_config(environment, LEVELS.items())
