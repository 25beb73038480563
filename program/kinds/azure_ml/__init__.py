"""The azureMl kind: the Azure ML extension on AKS or Arc clusters."""

from __future__ import annotations

from program.clouds.azure import AZURE
from program.kinds.azure_ml.model import AzureMlTarget
from program.kinds.base import Claim, Costly, KindDocs, Lazy, TargetKind


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


DOCS = KindDocs(
    summary=(
        (
            "**`azureMl`**: the `Extension` with the settings the CLI derives (cluster ids, location, per-kind relay and\n"
            "ingress flags, small-cluster defaults), PEMs as protected secrets; `cluster.location` is taken in any form ARM\n"
            "takes (`eastus`, `EastUS`, `East US`) and sent as the CLI sends it (`eastus`); on Arc also the Azure Relay namespace,\n"
            "hybrid connection and `azureml_rw` rule. Before anything runs, the node count (and with `cluster.vmSize`\n"
            "the node size) is checked against the extension's sizing table for the stack's environment, and prod must\n"
            "pin `version` with `autoUpgradeMinorVersion: false` (the plan shows the version each extension runs)."
        ),
    ),
    checks=(
        (
            "Azure ML (`azureMl`)",
            "`azureml.extension`: provisioning state Succeeded (Failed shows ARM's error and statuses, with the "
            "troubleshooting guide's fix for the errors it names: earlier operation still in progress, namespace "
            'being terminated, "Chart path not found", invalid ownership metadata, a name still in use); Arc: '
            "`azureml.relay`: the relay namespace, hybrid connection and `azureml_rw` rule exist",
        ),
        (
            "Azure ML, in the cluster (with `verifyAccess`)",
            "`azureml.namespace`: `azureml` exists and is not terminating; `azureml.healthcheck.<code>`: the "
            "extension's own report, configmap `arcml-healthcheck` (pre-install, pre-upgrade, pre-rollback, "
            "pre-delete), code by code with the guide's fix (E40001 load balancer, E40002 HA needs 3 nodes, "
            "E40003 internal LB only on AKS, E40007 SSL certificate vs CNAME, E45002 Prometheus conflict, E45003 "
            "network, E45004/E45005 legacy azureml-fe; other codes as written), failing while the extension is "
            "not Succeeded; `azureml.pods`: the components the Azure ML extension docs list for the chosen workloads and install "
            "flags Running and ready, or why not (waiting reason, scheduler message); `azureml.clash.prometheus` "
            "/ `.volcano` / `.ingress-class`: a Prometheus operator, Volcano or an nginx IngressClass another "
            "release owns, against `installPromOp`, `installVolcano` and `nginxIngressController`",
        ),
    ),
    removed=(
        "the `Extension` is deleted (what `az k8s-extension delete` does); on Arc also the relay namespace, "
        "hybrid connection and `azureml_rw` rule the program made"
    ),
    example=(
        "{project}:azureMl:                        # the Azure ML extension on AKS or Arc\n"
        "  - name: aks\n"
        "    cluster:\n"
        "      kind: aks                          # or arc\n"
        "      subscriptionId: 00000000-0000-0000-0000-000000000000   # your workspace's: list it in\n"
        '                                         #   policies/config/STACK.json (README "Configuration")\n'
        "      resourceGroup: rg-ml\n"
        "      name: aks-ml\n"
        "      location: westeurope\n"
        "      nodeCount: 3\n"
        "    training: true\n"
        '    version: 1.1.39                      # pinned (prod requires it): README "Upgrading"\n'
        "    autoUpgradeMinorVersion: false\n"
    ),
)


KIND = TargetKind(
    order=30,
    key="azureMl",
    model=AzureMlTarget,
    description="Azure ML extension on AKS or Arc clusters.",
    prefix="azureml",
    cloud=AZURE,
    component="mldiag:index:AzureMlExtension",  # the extension on a cluster the target names
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
    docs=DOCS,
)
