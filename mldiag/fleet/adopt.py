"""`mldiag fleet adopt FLEET`: an environment deployed by its own stack (`pulumi up -s prod`) moved onto its
member stacks, each target's resources to its `<env>.<prefix>-<target>` stack, nothing replaced or recreated.

A target's resources in the environment stack are its component (`<prefix>-<target>`, a child of the stack)
and everything under it, its explicit providers included; they get the same names and inputs in the member
stack, only the stack in their URNs changes (program/fleet_member.py). The move is `pulumi state move`'s:
each resource's URN, parent, provider reference and dependencies rewritten to the member stack, providers it
uses from outside the target copied, the member's state written first and the environment's second. Pulumi
3.274's `pulumi state move` refuses this layout (it copies a provider that is a child of a moved component
ahead of its parent: "failed to verify integrity of destination snapshot ... comes after it"), so the same
rewrite goes through `pulumi stack export` and `pulumi stack import`, secrets staying ciphertext (the member
stacks share the environment's secrets provider).

Refused, with nothing moved: an environment stack with pending operations, pending steps or changes to apply
(its preview must show none), a resource under no target of the fleet, a member stack that has resources.
Afterwards each member's preview is checked for no change, and the lease stack records that the member
stacks deploy the environment (its own `pulumi up` then refuses: program/fleet_member.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mldiag.fleet.planner import Member, Plan

STACK_TYPE = "pulumi:pulumi:Stack"
PROVIDER_PREFIX = "pulumi:providers:"


class AdoptRefused(Exception):
    """The environment cannot be moved as it is (why, and what to do); nothing was moved."""


def rename(urn: str, stack: str) -> str:
    """`urn:pulumi:<stack>::<project>::<type>::<name>` with another stack."""
    head, _, rest = urn.partition("::")
    return f"urn:pulumi:{stack}::{rest}" if head.startswith("urn:pulumi:") else urn


def _rename_ref(ref: str, stack: str) -> str:
    """A provider reference `<urn>::<id>`."""
    urn, sep, pid = ref.rpartition("::")
    return f"{rename(urn, stack)}{sep}{pid}" if urn.startswith("urn:pulumi:") else ref


def root_urn(stack: str, project: str) -> str:
    return f"urn:pulumi:{stack}::{project}::{STACK_TYPE}::{project}-{stack}"


def owners(resources: list[dict[str, Any]], plan: Plan) -> tuple[dict[str, Member], list[str]]:
    """Each resource's member (by URN: a target's component and everything under it), and the resources the
    environment manages that are under no target (besides its stack, providers and stack references)."""
    by_component = {f"{m.prefix}-{m.name}": m for m in plan.members}
    owner: dict[str, Member] = {}
    roots = {str(r["urn"]) for r in resources if r.get("type") == STACK_TYPE}
    stray = []
    for r in resources:  # a state lists parents before children
        urn, parent = str(r["urn"]), str(r.get("parent") or "")
        if parent in owner:
            owner[urn] = owner[parent]
        elif parent in roots and urn.rsplit("::", 1)[-1] in by_component:
            owner[urn] = by_component[urn.rsplit("::", 1)[-1]]
        elif r.get("type") not in (STACK_TYPE, "pulumi:pulumi:StackReference") and not str(
            r.get("type", "")
        ).startswith(PROVIDER_PREFIX):
            stray.append(urn)
    return owner, stray


@dataclass
class Move:
    """One member's part of the environment: the member's state after the move, and what moved."""

    member: Member
    urns: list[str]
    copied_providers: list[str]
    deployment: dict[str, Any] = field(default_factory=dict)


def moves(
    source: dict[str, Any], plan: Plan, project: str, qualified: Callable[[str], str]
) -> tuple[list[Move], dict[str, Any]]:
    """The members' deployments and the environment's after the move (pure: exported deployments in, new
    ones out). AdoptRefused when a resource is under no target of the fleet."""
    resources = list(source.get("resources") or [])
    owner, stray = owners(resources, plan)
    if stray:
        raise AdoptRefused(
            f"{len(stray)} resource(s) of the environment stack are under no target of the fleet ({', '.join(stray[:3])}"
            f"{' ...' if len(stray) > 3 else ''}): every resource must belong to one target's component"
        )
    by_ref = {
        f"{r['urn']}::{r.get('id', '')}": r
        for r in resources
        if str(r.get("type", "")).startswith(PROVIDER_PREFIX)
    }
    out = []
    for m in plan.members:
        mine = [r for r in resources if owner.get(str(r["urn"])) is m]
        if not mine:
            continue
        moved = {str(r["urn"]) for r in mine}
        used = [str(r["provider"]) for r in mine if r.get("provider")]
        copied = []
        for ref in dict.fromkeys(used):
            prov = by_ref.get(ref)
            if prov is not None and str(prov["urn"]) not in moved:
                copied.append(prov)
        stack = m.stack
        root = root_urn(stack, project)
        new = [{"urn": root, "custom": False, "type": STACK_TYPE}]
        for r in copied:
            new.append(_rewritten(r, stack, root, moved, keep_parent=False))
        for r in mine:
            new.append(_rewritten(r, stack, root, moved, keep_parent=str(r.get("parent") or "") in moved))
        deployment = {
            "manifest": source.get("manifest"),
            "secrets_providers": source.get("secrets_providers"),
            "resources": new,
        }
        out.append(Move(m, [str(r["urn"]) for r in mine], [str(r["urn"]) for r in copied], deployment))
    gone = {u for mv in out for u in mv.urns}
    remaining = []
    for r in resources:
        if str(r["urn"]) in gone:
            continue
        kept = dict(r)
        kept["dependencies"] = [d for d in r.get("dependencies") or [] if d not in gone]
        kept["propertyDependencies"] = {
            k: [d for d in v if d not in gone] for k, v in (r.get("propertyDependencies") or {}).items()
        }
        remaining.append(
            {k: v for k, v in kept.items() if v or k not in ("dependencies", "propertyDependencies")}
        )
    left = {**source, "resources": remaining, "pending_operations": []}
    return out, left


def _rewritten(
    r: dict[str, Any], stack: str, root: str, moved: set[str], keep_parent: bool
) -> dict[str, Any]:
    new = dict(r)
    new["urn"] = rename(str(r["urn"]), stack)
    new["parent"] = rename(str(r["parent"]), stack) if keep_parent else root
    if r.get("provider"):
        new["provider"] = _rename_ref(str(r["provider"]), stack)
    # dependencies on what stays in the environment are dropped, as `pulumi state move` does
    if "dependencies" in r:
        new["dependencies"] = [rename(d, stack) for d in r.get("dependencies") or [] if d in moved]
    if "propertyDependencies" in r:
        new["propertyDependencies"] = {
            k: [rename(d, stack) for d in v if d in moved]
            for k, v in (r.get("propertyDependencies") or {}).items()
        }
    if r.get("deletedWith"):
        new["deletedWith"] = rename(str(r["deletedWith"]), stack) if r["deletedWith"] in moved else ""
    return {k: v for k, v in new.items() if v not in ("", None) or k in ("id",)}


def run(
    plan: Plan,
    executor: Any,
    lease: Any,
    log: Callable[[str], None],
) -> list[str]:
    """Moves the environment onto its member stacks (an AutomationExecutor; `lease`: a rollout.Lease not yet
    taken). What was done, one line per member; AdoptRefused when nothing could be moved."""
    from mldiag.common import PROJECT
    from mldiag.fleet import recovery

    env_name = plan.environment_stack
    env = executor.environment_stack()
    if env is None:
        raise AdoptRefused(f"stack {env_name} does not exist: there is nothing to adopt")
    source = executor.export_state(env)
    if recovery.pending_operations(source):
        raise AdoptRefused(
            f"stack {env_name} has pending operations (an interrupted update): settle them first "
            f"(`mldiag fleet recover {plan.fleet.name} --environment-stack`), then adopt"
        )
    outputs = executor.outputs(env)
    if outputs.get("pendingSteps"):
        raise AdoptRefused(
            f"stack {env_name} has pending steps ({outputs['pendingSteps']}): finish them with `pulumi up -s "
            f"{env_name}` first"
        )
    moved, left = moves(source, plan, PROJECT, plan.qualified)
    if not moved:
        raise AdoptRefused(
            f"stack {env_name} manages no resource of the fleet's targets: there is nothing to adopt"
        )
    log(f"adopt: previewing {env_name} (it must have nothing to change)")
    changes = executor.preview_changes(env)
    if changes:
        raise AdoptRefused(
            f"stack {env_name} has changes to apply ({_changes(changes)} in `pulumi preview -s {env_name}`): "
            f"apply them with `pulumi up -s {env_name}` first, so the members take over what is deployed"
        )
    lease.acquire()
    done: list[str] = []
    try:
        stacks = {}
        for mv in moved:
            st = executor.stack(mv.member)
            have = [
                str(r["urn"])
                for r in executor.export_state(st).get("resources") or []
                if r.get("type") != STACK_TYPE
            ]
            want = [str(r["urn"]) for r in mv.deployment["resources"] if r.get("type") != STACK_TYPE]
            if have and sorted(have) != sorted(want):
                raise AdoptRefused(
                    f"member stack {mv.member.stack} has resources already ({len(have)}): it is not empty, so "
                    f"{mv.member.ref} cannot be moved into it"
                )
            stacks[mv.member] = (st, bool(have))
        for mv in moved:
            st, already = stacks[mv.member]
            if not already:
                executor.import_state(st, mv.deployment)
            log(
                f"adopt: {mv.member.ref}: {'moved' if not already else 'already in'} {len(mv.urns)} resource(s) "
                f"{'to' if not already else 'of'} {mv.member.stack}"
                + (f" (copied {len(mv.copied_providers)} provider(s) it uses)" if mv.copied_providers else "")
            )
        executor.import_state(env, left)
        log(f"adopt: {env_name} keeps {len(left['resources'])} resource(s) (its stack, providers and reads)")
        lease.executor.exclusive(lambda existing: existing, mark=True)
        for mv in moved:
            st, _ = stacks[mv.member]
            found = executor.preview_changes(st)
            line = f"{mv.member.ref}: {len(mv.urns)} resource(s) in {mv.member.stack}, preview: " + (
                _changes(found) if found else "no changes"
            )
            log(f"adopt: {line}")
            done.append(line)
    finally:
        lease.release()
    return done


def _changes(changes: dict[str, int]) -> str:
    return ", ".join(f"{n} to {op}" for op, n in sorted(changes.items()))
