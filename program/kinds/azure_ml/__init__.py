"""The azureMl kind: the Azure ML extension on AKS or Arc clusters."""

from __future__ import annotations

from typing import Any

from program.kinds.azure_ml.model import AzureMlTarget
from program.kinds.base import Claim, Lazy, TargetKind


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


# This kind's rules by environment. `azureml-allowed-subscriptions` needs each stack's subscriptions: a
# stack's own policies/config/<stack>.json sets them.
POLICY_DEFAULTS: dict[str, dict[str, Any]] = {
    "dev": {
        "azureml-workloads-enabled": "mandatory",
        "azureml-secrets-protected": "mandatory",
        "azureml-inference-router-ha": "mandatory",
        "azureml-inference-https": {"enforcementLevel": "advisory", "allowInsecureConnections": True},
    },
    "staging": {
        "azureml-inference-https": {"enforcementLevel": "mandatory", "allowInsecureConnections": True},
        "azureml-version-pinned": "advisory",
        "aks-node-size-minimum": "advisory",
        "aks-authorized-ip-ranges": "advisory",
    },
    "prod": {
        "azureml-inference-https": {"enforcementLevel": "mandatory", "allowInsecureConnections": False},
        "aks-authorized-ip-ranges": "advisory",
    },
}

KIND = TargetKind(
    key="azureMl",
    field="azure_ml",
    model=AzureMlTarget,
    description="Azure ML extension on AKS or Arc clusters.",
    prefix="azureml",
    export="azureMl",
    build=Lazy("program.kinds.azure_ml.build:build"),
    verify=Lazy("program.kinds.azure_ml.verify:verify"),
    mock_answers=Lazy("program.kinds.azure_ml.mocks"),
    policy_defaults=POLICY_DEFAULTS,
    claims=claims,
    preflight=Lazy("program.kinds.azure_ml.preflight:sizing_problems"),
)
