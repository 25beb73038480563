"""A per-cluster stack of a fleet rollout (`mldiag fleet`, docs/fleet.md): one target of an environment.

`mldiag fleet` derives the member stack `<env>.<kind prefix>-<target>` from the environment's stack file: its
config is the environment's, verbatim, plus

    ml-diagnostics:fleetMember: {environmentStack: prod, kind: kubernetesClusters, name: onprem-prod}

The whole environment config is validated as usual (so a member reports the same problems, with the same key
paths, as `pulumi up -s prod`), then only the named target is kept. Its resources get the same names and inputs
as in the environment stack; only the stack name in their URNs differs. A config without the key is untouched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ml_diagnostics.rules.names import quote, target_name_problem
from program import config_input
from program.config_base import NAMESPACE, ConfigError
from program.kinds.table import KINDS

KEY = f"{NAMESPACE}:fleetMember"
FIELDS = ("environmentStack", "kind", "name")
# Pulumi's stack name rule; it also keeps the stack file path (`Pulumi.<stack>.yaml`) inside stackConfigDir.
_STACK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


@dataclass(frozen=True)
class FleetMember:
    environment_stack: str
    """The environment stack whose stack file this member's config was copied from."""
    kind: str
    """The target's kind key (`kubernetesClusters`, ...)."""
    name: str
    """The target's name within its kind."""


def take(raw: Mapping[str, Any]) -> tuple[dict[str, Any], FleetMember | None]:
    """(the config without the fleetMember key, the member it names or None); ConfigError for a bad value."""
    rest = {k: v for k, v in raw.items() if k != KEY}
    if KEY not in raw:
        return rest, None
    value, problems = config_input.decode({KEY: raw[KEY]})
    if problems:
        raise ConfigError(problems)
    member = value.get("fleetMember")
    if not isinstance(member, dict):
        raise ConfigError([f"{KEY}: must be a map with {', '.join(FIELDS)}"])
    out: list[str] = []
    for key in sorted(set(member) - set(FIELDS)):
        out.append(f"{KEY}.{quote(str(key), 40)[1:-1]}: unknown key; allowed keys: {', '.join(FIELDS)}")
    for key in FIELDS:
        if key not in member:
            out.append(f"{KEY}.{key}: required key is missing")
        elif not isinstance(member[key], str):
            out.append(f"{KEY}.{key}: must be a string")
    if not out:
        kinds = [k.key for k in KINDS]
        if not _STACK_NAME.fullmatch(member["environmentStack"]):
            out.append(
                f"{KEY}.environmentStack: {quote(member['environmentStack'])} is not a stack name "
                "(letters, digits, '_', '.', '-'; at most 100)"
            )
        if member["kind"] not in kinds:
            out.append(f"{KEY}.kind: must be one of {', '.join(kinds)}")
        if (problem := target_name_problem(member["name"])) is not None:
            out.append(f"{KEY}.name: {problem}")
    if out:
        raise ConfigError(out)
    return rest, FleetMember(member["environmentStack"], member["kind"], member["name"])


def keep(cfg: Any, member: FleetMember) -> Any:
    """The validated StackConfig with the member's target alone (every other kind's list empty)."""
    kind = next(k for k in KINDS if k.key == member.kind)
    targets = cfg.targets(kind)
    mine = [t for t in targets if t.name == member.name]
    if not mine:
        names = ", ".join(t.name for t in targets) or "none"
        raise ConfigError(
            [
                f"{KEY}.name: the config has no {member.kind} target {quote(member.name)} "
                f"(its {member.kind}: {names}); rerun `mldiag fleet` to derive the member stack again"
            ]
        )
    return cfg.model_copy(update={k.field: (mine if k is kind else []) for k in KINDS})
