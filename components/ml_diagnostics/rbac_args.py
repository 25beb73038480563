"""Arguments of the read-only verify role, shared by the in-cluster and the Azure ML components (no SDK
imports: the Azure component takes them without loading the Kubernetes SDK)."""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from typing import NotRequired, TypedDict

__all__ = ["RbacSubjectArgs", "VerifyRbacArgs"]


class RbacSubjectArgs(TypedDict):
    """Who the verify role is bound to."""

    kind: str
    """User, Group or ServiceAccount."""
    name: str
    """User or group name as the cluster authenticates it, or the ServiceAccount's name."""
    namespace: NotRequired[str]
    """ServiceAccount only: the namespace it lives in."""


class VerifyRbacArgs(TypedDict):
    """A ClusterRole and Roles holding exactly the reads `mldiag verify` makes, bound to `subjects`."""

    subjects: list[RbacSubjectArgs]
    """Who runs verify against this cluster."""
    name: NotRequired[str]
    """Name of the ClusterRole, the Roles and their bindings (default ml-diagnostics-verify)."""
