"""How verify reads inside an AKS or Arc cluster, and the node facts of the sizing preflight (config models
of an `azureMl` target beside its extension settings in model.py):

    verifyAccess:                       # optional: verify's in-cluster checks (health report, pods, clashes)
      kubeconfig: {secure: ...}         # AKS or Arc: a kubeconfig secret (`mldiag secrets set`)
      context: admin                    # optional context of that kubeconfig
      aksUserCredentials: true          # AKS only, instead: ARM listClusterUserCredential (Cluster User role)
    verifyRbac: {enabled: true, subjects: [...]}   # the read-only role verify needs, created through verifyAccess
    cluster:
      vmSize: Standard_D4s_v3           # optional: the nodes' VM size, for the sizing preflight
      nodeResources: {vcpus: 8, memoryGiB: 32}   # for a size the built-in table does not know
"""

from __future__ import annotations

from pydantic import Field, model_validator

from ml_diagnostics.rules.base import Path
from program.config_base import Model, SecretText, raise_issues


class NodeResources(Model):
    """vCPUs and memory of one node, for a VM size the built-in table (compat.AZURE_VM_SIZES) does not know."""

    vcpus: float = Field(gt=0, le=1024)
    """vCPUs of one node."""
    memory_gib: float = Field(gt=0, le=65536)
    """Memory of one node in GiB."""


class AzureVerifyAccess(Model):
    """How `mldiag verify` reads inside the cluster: a kubeconfig secret (AKS or Arc), or on AKS the cluster
    user credentials ARM lists for the verifying identity."""

    kubeconfig: SecretText | None = None
    """Kubeconfig text, a secret (`mldiag secrets set` or `pulumi config set --secret`); verify decrypts it
    with the stack's passphrase, or through `--pulumi-stack`."""
    context: str | None = None
    """Context of that kubeconfig; default: its current context."""
    aks_user_credentials: bool = False
    """AKS: POST listClusterUserCredential with verify's Azure identity (Azure Kubernetes Service Cluster User
    Role); the kubeconfig stays in memory."""

    @model_validator(mode="after")
    def _one_way(self) -> AzureVerifyAccess:
        problems: list[tuple[Path, str]] = []
        if (self.kubeconfig is None) == (not self.aks_user_credentials):
            problems.append(((), "give either kubeconfig (a secret) or aksUserCredentials: true, not both"))
        if self.context is not None:
            if self.kubeconfig is None:
                problems.append((("context",), "only with kubeconfig"))
            elif not 0 < len(self.context) <= 253 or not self.context.isprintable():
                problems.append(
                    (("context",), "must be a kubeconfig context name: 1-253 printable characters")
                )
        raise_issues(problems)
        return self
