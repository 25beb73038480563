"""Config of the optional read-only role `python -m mldiag.verify` needs in a cluster (`verifyRbac` on a
cluster target, beside `diagon`):

    verifyRbac:
      enabled: true
      subjects:
        - {kind: User, name: ci-deploy@acme-ml-prod.iam.gserviceaccount.com}   # GKE: a Google identity
        - {kind: Group, name: ml-platform-oncall}
        - {kind: ServiceAccount, name: verify, namespace: ops}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import model_validator

from program import validators
from program.config_base import Model, raise_issues

if TYPE_CHECKING:
    from ml_diagnostics.rbac_args import VerifyRbacArgs


class RbacSubject(Model):
    """Who the verify role is bound to."""

    kind: Literal["User", "Group", "ServiceAccount"]
    """Kubernetes RBAC subject kind."""
    name: str
    """User or group name as the cluster authenticates it, or the ServiceAccount's name."""
    namespace: str | None = None
    """ServiceAccount only: the namespace it lives in."""

    @model_validator(mode="after")
    def _check(self) -> RbacSubject:
        problems: list[tuple[str, str]] = []
        if not self.name:
            problems.append(("name", "must not be empty"))
        if self.kind == "ServiceAccount":
            if self.namespace is None:
                problems.append(("namespace", "required for kind ServiceAccount"))
            elif p := validators.namespace_problem(self.namespace):
                problems.append(("namespace", p))
        elif self.namespace is not None:
            problems.append(("namespace", f"only for kind ServiceAccount, not {self.kind}"))
        raise_issues(problems)
        return self


class VerifyRbacSettings(Model):
    """A ClusterRole and Roles holding exactly the reads `mldiag.verify` makes, bound to `subjects`."""

    enabled: bool = False
    """Create the role and its bindings (README "After `pulumi up`" lists the rules)."""
    subjects: list[RbacSubject] = []
    """Who runs `python -m mldiag.verify` against this cluster."""
    name: str = "ml-diagnostics-verify"
    """Name of the ClusterRole, the Roles and their bindings."""

    @model_validator(mode="after")
    def _check(self) -> VerifyRbacSettings:
        problems: list[tuple[str, str]] = []
        if self.enabled and not self.subjects:
            problems.append(
                ("subjects", "name at least one subject (User, Group or ServiceAccount) to bind the role to")
            )
        if p := validators.dns_subdomain_problem(self.name):
            problems.append(("name", p))
        raise_issues(problems)
        return self

    def to_args(self) -> VerifyRbacArgs:
        """As the library's VerifyRbacArgs."""
        return {
            "name": self.name,
            "subjects": [
                {"kind": x.kind, "name": x.name, **({"namespace": x.namespace} if x.namespace else {})}  # type: ignore[typeddict-item]
                for x in self.subjects
            ],
        }
