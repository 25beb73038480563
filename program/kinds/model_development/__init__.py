"""The modelDevelopmentClusters kind: Vertex AI Model Development Clusters (Slurm)."""

from __future__ import annotations

from typing import Any

from program.kinds.base import Claim, Lazy, TargetKind
from program.kinds.model_development.model import ModelDevelopmentClusterTarget


def claims(t: ModelDevelopmentClusterTarget) -> list[Claim]:
    ident = ("mdc", t.project, t.region, t.model_development_cluster_id)
    return [(ident, f"Model Development Cluster {t.project}/{t.region}/{t.model_development_cluster_id}", "")]


# This kind's rules by environment.
POLICY_DEFAULTS: dict[str, dict[str, Any]] = {
    "dev": {
        "mdc-node-pool-references": "mandatory",
        "mdc-slurm-config-exclusive": "mandatory",
        "mdc-deletion-policy": {
            "enforcementLevel": "advisory",
            "allowedDeletionPolicies": ["DELETE", "ABANDON", "PREVENT"],
        },
    },
    "staging": {
        "mdc-node-images-pinned": "advisory",
        "mdc-deletion-policy": {
            "enforcementLevel": "advisory",
            "allowedDeletionPolicies": ["PREVENT", "ABANDON"],
        },
    },
    "prod": {
        "mdc-node-images-pinned": "mandatory",
        "mdc-deletion-policy": {
            "enforcementLevel": "mandatory",
            "allowedDeletionPolicies": ["PREVENT", "ABANDON"],
        },
    },
}

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
    policy_defaults=POLICY_DEFAULTS,
    claims=claims,
)
