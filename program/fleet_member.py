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


# -- one way per environment ------------------------------------------------------------------------------------
# The lease stack of an environment's rollouts, `<environment>.fleet` (mldiag/fleet/progress.py), exports under
# MARK the targets its member stacks deploy: {"members": ["kubernetesClusters/a", ...], "fleet": "fleet/prod.yaml"}.
COORDINATOR_SUFFIX = "fleet"
MARK = "fleet"
READ_OUTPUTS = "pulumi:pulumi:readStackOutputs"


def fleet_members(read: Any = None) -> tuple[str, list[str]] | None:
    """(the fleet file, the targets it deploys) when member stacks deploy this environment, else None."""
    import pulumi
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.settings import get_monitor

    if read is None and isinstance(get_monitor(), MockMonitor):
        return None  # the offline plan (mock runtime) plans the stack as written
    name = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}.{COORDINATOR_SUFFIX}"
    try:
        found = (read or pulumi.runtime.invoke)(READ_OUTPUTS, {"name": name}).value
    except Exception as e:  # noqa: BLE001 - the engine reports a failed invoke as a plain Exception
        text = str(e).lower()
        if "unknown stack" in text or "no stack named" in text or "not found" in text:
            return None  # no rollout of this environment ever ran
        raise pulumi.RunError(
            f"the lease stack {name} of this environment's fleet could not be read: {e}"
        ) from None
    mark = ((found or {}).get("outputs") or {}).get(MARK)
    if not isinstance(mark, dict) or not mark.get("members"):
        return None
    return str(mark.get("fleet") or "its fleet file"), [str(m) for m in mark["members"]]


def one_way(cfg: Any, read: Any = None) -> None:
    """An environment whose targets its fleet's member stacks deploy refuses `pulumi up -s <env>` (both would
    manage the same objects); its preview says so as a warning. A member stack itself is not checked here."""
    import pulumi

    if pulumi.Config(NAMESPACE).get("fleetMember") is not None:
        return
    found = fleet_members(read)
    if found is None:
        return
    fleet, members = found
    mine = [f"{k.key}/{t.name}" for k in KINDS for t in cfg.targets(k)]
    shared = [m for m in mine if m in members]
    if not shared:
        return
    stack = pulumi.get_stack()
    message = (
        f"environment {stack} is deployed by its fleet's member stacks ({', '.join(shared[:5])}"
        f"{f' and {len(shared) - 5} more' if len(shared) > 5 else ''}: `mldiag fleet run {fleet}`); "
        f"`pulumi up -s {stack}` would manage the same clusters a second time. Roll it out with "
        f"`mldiag fleet run {fleet}` (docs/fleet.md, 'One way per environment')"
    )
    if pulumi.runtime.is_dry_run():
        pulumi.log.warn(f"`pulumi up` would be refused: {message}")
        return
    raise pulumi.RunError(message)
