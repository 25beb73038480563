"""The azureMl kind: the Azure ML extension on AKS or Arc clusters."""

from __future__ import annotations

from program.clouds.azure import AZURE
from program.kinds.azure_ml.model import AzureMlTarget
from program.kinds.base import Claim, Costly, Lazy, TargetKind


def claims(t: AzureMlTarget) -> list[Claim]:
    # Microsoft.AzureML.Kubernetes installs at cluster scope, and a cluster takes one instance of a
    # cluster-scoped extension type: two targets on one cluster clash whatever their extension names.
    c = t.cluster
    ident = ("azureml", c.subscription_id.lower(), c.resource_group.lower(), c.kind, c.name.lower())
    return [
        (
            ident,
            f"the Azure ML extension of {c.kind} cluster {c.resource_group}/{c.name} (one per cluster, "
            f"a cluster-scoped extension type; this target names it {t.extension!r})",
            "",
        )
    ]


KIND = TargetKind(
    key="azureMl",
    field="azure_ml",
    model=AzureMlTarget,
    description="Azure ML extension on AKS or Arc clusters.",
    prefix="azureml",
    export="azureMl",
    build=Lazy("program.kinds.azure_ml.build:build"),
    verify=Lazy("program.kinds.azure_ml.verify:verify"),
    section="azure_ml",
    check=Lazy("program.kinds.azure_ml.verify:check"),
    mock_answers=Lazy("program.kinds.azure_ml.mocks"),
    cloud=AZURE,
    component="mldiag:index:AzureMlExtension",
    costly=(
        Costly("azure-native:kubernetesconfiguration:Extension", "Azure ML extension", "Azure ML extensions"),
    ),
    # The ARM path parameters (the resource id) and location cannot change in place.
    force_new={
        "azure-native:kubernetesconfiguration:Extension": (
            "resourceGroupName",
            "clusterRp",
            "clusterResourceName",
            "clusterName",
            "extensionName",
        ),
        "azure-native:relay:Namespace": ("resourceGroupName", "namespaceName", "location"),
        "azure-native:relay:HybridConnection": ("resourceGroupName", "namespaceName", "hybridConnectionName"),
        "azure-native:relay:HybridConnectionAuthorizationRule": (
            "resourceGroupName",
            "namespaceName",
            "hybridConnectionName",
            "authorizationRuleName",
        ),
        "azure-native:relay:NamespaceAuthorizationRule": (
            "resourceGroupName",
            "namespaceName",
            "authorizationRuleName",
        ),
        "azure-native:containerservice:ManagedCluster": ("resourceGroupName", "resourceName", "location"),
        "azure-native:resources:ResourceGroup": ("resourceGroupName", "location"),
    },
    claims=claims,
    preflight=Lazy("program.kinds.azure_ml.preflight:sizing_problems"),
)
