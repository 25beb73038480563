"""Config of `azureMl` targets (Azure Machine Learning extension on AKS or Arc)."""

from __future__ import annotations

from components.config import TargetBase


class AzureMlTarget(TargetBase):
    subscription_id: str
    resource_group: str
    cluster_name: str
