"""The offline plan's answers for the modelDevelopmentClusters kind.

INVOKES: invoke token -> fn(arguments, camelCase as sent) -> result. OUTPUTS: resource type -> fn(name,
inputs) -> the outputs a resource gets beyond its inputs.
"""

from __future__ import annotations

from typing import Any

INVOKES: dict[str, Any] = {}
OUTPUTS: dict[str, Any] = {}


def _model_development_cluster(_name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    project, region = inputs["project"], inputs["region"]
    return {
        "name": f"projects/{project}/locations/{region}/modelDevelopmentClusters/{inputs['model_development_cluster_id']}",
        "state": "ACTIVE",
        "create_time": "2026-01-01T00:00:00Z",
        "update_time": "2026-01-01T00:00:00Z",
    }


OUTPUTS["pulumi-python:dynamic/vertexai:ModelDevelopmentCluster"] = _model_development_cluster
