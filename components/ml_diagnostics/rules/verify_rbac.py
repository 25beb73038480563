"""Rules of the verify role (`VerifyRbac`, and `verifyRbac` of a cluster target): the ClusterRole and Roles
holding exactly the reads `mldiag verify` makes, and the subjects they are bound to."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from ml_diagnostics.rules import names
from ml_diagnostics.rules.base import Path, Spec, raise_issues


class RbacSubjectSpec(Spec):
    """Who the verify role is bound to."""

    kind: Literal["User", "Group", "ServiceAccount"]
    """Kubernetes RBAC subject kind: User, Group or ServiceAccount."""
    name: str
    """User or group name as the cluster authenticates it, or the ServiceAccount's name."""
    namespace: str | None = None
    """ServiceAccount only: the namespace it lives in."""

    @model_validator(mode="after")
    def _check(self) -> RbacSubjectSpec:
        problems: list[tuple[Path, str]] = []
        if not self.name:
            problems.append((("name",), "must not be empty"))
        if self.kind == "ServiceAccount":
            if self.namespace is None:
                problems.append((("namespace",), "required for kind ServiceAccount"))
            elif p := names.namespace_problem(self.namespace):
                problems.append((("namespace",), p))
            if self.name and (p := names.dns_subdomain_problem(self.name, "a ServiceAccount name")):
                problems.append((("name",), p))
        elif self.namespace is not None:
            problems.append((("namespace",), f"only for kind ServiceAccount, not {self.kind}"))
        raise_issues(problems)
        return self


class VerifyRbacSpec(Spec):
    """A ClusterRole and Roles holding exactly the reads `mldiag verify` makes, bound to `subjects`."""

    enabled: bool = True
    """False: no role (its other keys are kept, unused)."""
    subjects: list[RbacSubjectSpec] = []
    """Who runs `mldiag verify` against this cluster."""
    name: str = "ml-diagnostics-verify"
    """Name of the ClusterRole, the Roles and their bindings."""

    @model_validator(mode="after")
    def _check(self) -> VerifyRbacSpec:
        problems: list[tuple[Path, str]] = []
        if self.enabled and not self.subjects:
            problems.append(
                (
                    ("subjects",),
                    "name at least one subject (User, Group or ServiceAccount) to bind the role to",
                )
            )
        if p := names.dns_subdomain_problem(self.name):
            problems.append((("name",), p))
        raise_issues(problems)
        return self
