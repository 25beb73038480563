"""Lifecycle as Pulumi's own resource options: deletion behaviour, renames, adoption.

Every component that owns something expensive or stateful takes a `deletion_policy` and applies it here
(`deletion_options`); callers resolve the policy in force with `effective_policy`.

- `deletion_policy` maps onto Pulumi's options, nothing else:
  DELETE -> none; ABANDON -> `retain_on_delete` (left running, dropped from the state);
  PREVENT -> `protect` (the engine refuses to delete or replace it until unprotected).
  Unset: PREVENT in prod for what is expensive or stateful (created clusters, Model Development Clusters),
  DELETE elsewhere.
- `previousName` on a target -> an alias of the target's component to its old name. Every child's name
  starts with the component's name, so the engine carries the alias down to the children (a rename is no
  replacement of anything).
- `adopt: true` on a part -> `import_` with the id its provider expects (see `import_ids`).
"""

from __future__ import annotations

from enum import StrEnum

import pulumi


class DeletionPolicy(StrEnum):
    """What removing a resource from the program (or `pulumi destroy`) does to it."""

    DELETE = "DELETE"
    """Deleted (Pulumi's default)."""
    ABANDON = "ABANDON"
    """Left running and dropped from the state (`retainOnDelete`)."""
    PREVENT = "PREVENT"
    """The engine refuses to delete or replace it until unprotected (`protect`)."""


DELETION_POLICIES: tuple[str, ...] = tuple(p.value for p in DeletionPolicy)


def effective_policy(
    explicit: DeletionPolicy | str | None, environment: str, *, expensive: bool
) -> DeletionPolicy:
    """The policy in force: the configured one, else PREVENT for expensive/stateful parts in prod."""
    if explicit is not None:
        return DeletionPolicy(explicit)
    return DeletionPolicy.PREVENT if environment == "prod" and expensive else DeletionPolicy.DELETE


def deletion_options(policy: DeletionPolicy | str) -> pulumi.ResourceOptions:
    """The resource options a deletion policy stands for."""
    policy = DeletionPolicy(policy)
    if policy is DeletionPolicy.PREVENT:
        return pulumi.ResourceOptions(protect=True)
    if policy is DeletionPolicy.ABANDON:
        return pulumi.ResourceOptions(retain_on_delete=True)
    return pulumi.ResourceOptions()


def rename_options(component_prefix: str, previous_name: str | None) -> pulumi.ResourceOptions:
    """Options of a target's component: an alias to `<prefix>-<previousName>` when the target was renamed."""
    if not previous_name:
        return pulumi.ResourceOptions()
    return pulumi.ResourceOptions(aliases=[pulumi.Alias(name=f"{component_prefix}-{previous_name}")])


def adopt_options(import_id: str | None) -> pulumi.ResourceOptions:
    """`import_` for an adopted part (None: nothing to adopt). Harmless once the resource is in the state."""
    return pulumi.ResourceOptions(import_=import_id) if import_id else pulumi.ResourceOptions()


# -- import ids: the id each provider expects for `import_` (and `pulumi import --file`) ---------------------


def k8s_id(namespace: str | None, name: str) -> str:
    """Kubernetes objects and Helm v3 releases: `namespace/name`; cluster-scoped objects: `name`."""
    return f"{namespace}/{name}" if namespace else name


def azure_extension_id(cluster_resource_id: str, extension_name: str) -> str:
    return f"{cluster_resource_id}/providers/Microsoft.KubernetesConfiguration/extensions/{extension_name}"


def azure_relay_ids(
    subscription_id: str, resource_group: str, namespace: str, hybrid_connection: str, rule: str
) -> tuple[str, str, str]:
    """ARM ids of the relay namespace, its hybrid connection and the connection's authorization rule."""
    ns = (
        f"/subscriptions/{subscription_id}/resourceGroups/{resource_group}"
        f"/providers/Microsoft.Relay/namespaces/{namespace}"
    )
    hc = f"{ns}/hybridConnections/{hybrid_connection}"
    return ns, hc, f"{hc}/authorizationRules/{rule}"
