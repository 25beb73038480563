"""The modelDevelopmentClusters kind: Vertex AI Model Development Clusters (Slurm)."""

from __future__ import annotations

from program.kinds.base import Claim, Lazy, TargetKind
from program.kinds.model_development.model import ModelDevelopmentClusterTarget


def claims(t: ModelDevelopmentClusterTarget) -> list[Claim]:
    ident = ("mdc", t.project, t.region, t.model_development_cluster_id)
    return [(ident, f"Model Development Cluster {t.project}/{t.region}/{t.model_development_cluster_id}", "")]


KIND = TargetKind(
    key="modelDevelopmentClusters",
    field="model_development_clusters",
    model=ModelDevelopmentClusterTarget,
    description="Vertex AI Model Development Clusters (Slurm).",
    prefix="mdc",
    export="modelDevelopmentCluster",
    build=Lazy("program.kinds.model_development.build:build"),
    verify=Lazy("program.kinds.model_development.verify:verify"),
    mock_answers=Lazy("program.kinds.model_development.mocks"),
    policy_defaults={},  # the policy pack declares every rule's levels (policies/mldiag_policy/levels.py)
    claims=claims,
)
