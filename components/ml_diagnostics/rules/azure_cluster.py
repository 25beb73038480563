"""Rules of the cluster the Azure ML extension goes on (`AzureClusterSpec`): an AKS or Arc cluster named by
its subscription, resource group and name, whose ARM id and facts (resource provider, node count, location as
the CLI sends it) are built from this, never looked up.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator

from ml_diagnostics.compat import arm_location
from ml_diagnostics.rules import names
from ml_diagnostics.rules.base import Spec, casefolded, check, checked

# The CLI derives a small-cluster setup (clusterPurpose=DevTest, one inference router) below this many nodes.
MIN_HA_NODES = 3


class AzureClusterSpec(Spec):
    """The AKS or Arc cluster the extension goes on: its ARM id and facts are built from this, never looked up."""

    kind: Annotated[Literal["aks", "arc"], BeforeValidator(casefolded)]
    """aks (managedClusters) or arc (connectedClusters), any case."""
    subscription_id: str
    """The cluster's subscription (the explicit provider is bound to it)."""
    resource_group: Annotated[str, checked(names.azure_resource_group_problem)]
    """The cluster's resource group (Arc: the Azure Relay goes here too)."""
    name: Annotated[str, checked(names.azure_cluster_name_problem)]
    """The cluster's name."""
    location: str
    """The cluster's Azure region in any form ARM takes: any case, with or without spaces (`eastus`, `EastUS`,
    `East US`). Sent as `az k8s-extension create` sends it, lowercase without spaces (`eastus`): the
    extension's `location`, `jobSchedulerLocation` and default `domain`, and on Arc the relay's location."""
    node_count: int = Field(ge=1, le=5000)
    """Total nodes (AKS: sum of agent pool counts; Arc: totalNodeCount), as the CLI reads it from ARM; fewer
    than 3 gets the CLI's small-cluster defaults."""
    openshift: bool = False
    """Arc-connected OpenShift (OCP/ARO); the CLI sends `openshift=true` for that distribution."""
    tenant_id: str | None = None
    """Entra tenant of the subscription (the explicit provider authenticates there); unset: ambient."""
    cloud_environment: Literal["public", "usgovernment", "china"] | None = None
    """Azure cloud of the subscription (the provider's `environment`); unset: public."""

    @field_validator("tenant_id")
    @classmethod
    def _tenant(cls, v: str | None) -> str | None:
        if v is not None:
            check(lambda x: names.azure_guid_problem(x, "tenant"), v)
        return v.lower() if v else v

    @field_validator("subscription_id")
    @classmethod
    def _subscription(cls, v: str) -> str:
        return check(names.azure_subscription_problem, v).lower()

    @field_validator("location")
    @classmethod
    def _location(cls, v: str) -> str:
        return arm_location(check(names.azure_location_problem, v))

    @property
    def cluster_rp(self) -> str:
        return "Microsoft.ContainerService" if self.kind == "aks" else "Microsoft.Kubernetes"

    @property
    def cluster_type(self) -> str:
        return "managedClusters" if self.kind == "aks" else "connectedClusters"

    @property
    def resource_id(self) -> str:
        return (
            f"/subscriptions/{self.subscription_id}/resourceGroups/{self.resource_group}"
            f"/providers/{self.cluster_rp}/{self.cluster_type}/{self.name}"
        )

    @property
    def small(self) -> bool:
        return self.node_count < MIN_HA_NODES
