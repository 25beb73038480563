"""The azureMl kind: the Azure ML extension on AKS or Arc clusters."""

from __future__ import annotations

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
    policy_defaults={},  # the policy pack declares every rule's levels (policies/mldiag_policy/levels.py)
    claims=claims,
    preflight=Lazy("program.kinds.azure_ml.preflight:sizing_problems"),
)
