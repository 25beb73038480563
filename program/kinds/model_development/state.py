"""How `mldiag verify --stack` reads a ModelDevelopmentCluster from a state from before `verifyRecord`
(program/verify/from_state.py says what a kind's state hook holds)."""

from __future__ import annotations

from typing import Any

from ml_diagnostics import verify_record
from program.verify.from_state import Resource, google_api_from, input_of

COMPONENTS = ("ModelDevelopmentCluster",)


def rebuild(top: Resource, descendants: list[Resource]) -> tuple[dict[str, Any] | None, str]:
    cluster = next((r for r in descendants if r.type.endswith(":ModelDevelopmentCluster") and r.custom), None)
    if cluster is None:
        return None, "its cluster resource is not in the state"
    ident = [input_of(cluster.inputs, k) for k in ("project", "region", "model_development_cluster_id")]
    if not all(isinstance(v, str) and v for v in ident):
        return None, "the cluster resource's inputs do not name its project, region and id"
    project, region, cluster_id = ident
    return verify_record.record(
        modelDevelopment={
            "project": project,
            "region": region,
            "clusterId": cluster_id,
            "googleApi": google_api_from(cluster.inputs, "aiplatform"),
        }
    ), ""
