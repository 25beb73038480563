"""Each rule's enforcement level (and options) by environment, declared once: beside the rule.

Every rule passes `levels=` to `common.resource_rule` / `common.stack_rule`: its entry of the pack config in
each environment where it does not simply take that environment's base level (`BASE_LEVELS`, the `all`
key), in the pack config's own form (a level, or `{"enforcementLevel": level, option: value, ...}`).
An environment a rule's `levels` leaves out gives it the base level and the options' schema defaults;
naming one pins the rule there (`everywhere(MANDATORY)`: a rule that blocks in dev too; `FOLLOWS_BASE`: a
rule with no environment of its own).

    levels={"dev": ADVISORY, "prod": with_options(MANDATORY, requireDigest=True)}

Nothing is imported here, so the product CLI reads the environments (`ENVIRONMENTS`) without pulumi_policy.
The environments' config files, policies/config/environments/<environment>.json, are written from these
declarations (`pack.environment_config`; in the repository `python -m dev.gen.policy_levels --write`).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping
from typing import Any

ADVISORY, MANDATORY = "advisory", "mandatory"
ENFORCEMENT_LEVELS = (ADVISORY, MANDATORY, "remediate", "disabled")

# The level of every rule an environment's config does not name (its `all`), by environment.
BASE_LEVELS: dict[str, str] = {"dev": ADVISORY, "staging": MANDATORY, "prod": MANDATORY}
ENVIRONMENTS: tuple[str, ...] = tuple(BASE_LEVELS)
# The environment whose levels a rule has when the pack runs with no config at all.
UNCONFIGURED = "prod"

Entry = str | dict[str, Any]
"""A rule's entry in one environment's pack config: a level, or {"enforcementLevel": level, option: value}."""
Levels = Mapping[str, Entry]
"""A rule's entries by environment, for the environments where it does not take the base level."""

FOLLOWS_BASE: Levels = {}


def with_options(level: str, **options: Any) -> dict[str, Any]:
    """An entry that sets options besides the level."""
    return {"enforcementLevel": level, **options}


def everywhere(entry: Entry) -> dict[str, Entry]:
    """The same entry in every environment."""
    return {env: entry for env in ENVIRONMENTS}


def level_of(entry: Entry) -> str:
    return entry["enforcementLevel"] if isinstance(entry, dict) else entry


def level_in(levels: Levels, environment: str) -> str:
    """A rule's level in an environment: its own entry's, else the environment's base level."""
    return level_of(levels.get(environment, BASE_LEVELS[environment]))


def options_in(levels: Levels, environment: str) -> dict[str, Any]:
    """The options a rule's own entry sets in an environment (the others keep their schema defaults)."""
    entry = levels.get(environment)
    return {k: v for k, v in entry.items() if k != "enforcementLevel"} if isinstance(entry, dict) else {}


def problems(levels: Levels, options: Collection[str]) -> list[str]:
    """What is wrong with a declaration, given the names of the rule's options (their values are checked
    against the rule's schema by `common`)."""
    out = []
    for env, entry in levels.items():
        if env not in BASE_LEVELS:
            out.append(f"unknown environment {env!r}; environments: {', '.join(ENVIRONMENTS)}")
            continue
        if isinstance(entry, str):
            level: Any = entry
        elif isinstance(entry, dict):
            level = entry.get("enforcementLevel")
            if level is None:
                out.append(f"{env}: an entry with options names its enforcementLevel too (with_options)")
            unknown = sorted(set(entry) - {"enforcementLevel"} - set(options))
            if unknown:
                out.append(
                    f"{env}: unknown option(s) {', '.join(unknown)}; the rule's options: "
                    f"{', '.join(sorted(options)) or 'none'}"
                )
        else:
            out.append(f"{env}: {entry!r} is neither a level nor an entry with options")
            continue
        if level is not None and level not in ENFORCEMENT_LEVELS:
            out.append(f"{env}: level {level!r} is not one of {', '.join(ENFORCEMENT_LEVELS)}")
    return out


def environment_config(environment: str, declared: Iterable[tuple[str, Levels]]) -> dict[str, Any]:
    """An environment's pack config: `all` (its base level), then the entry of every rule that names this
    environment, by rule name."""
    if environment not in BASE_LEVELS:
        raise ValueError(f"environment {environment!r} is unknown; allowed: {', '.join(ENVIRONMENTS)}")
    named = {name: levels[environment] for name, levels in declared if environment in levels}
    return {"all": BASE_LEVELS[environment], **{name: copy.deepcopy(named[name]) for name in sorted(named)}}
