"""Config of `modelDevelopmentClusters` targets (Vertex AI Model Development Cluster, Slurm)."""

from __future__ import annotations

from components.config import TargetBase


class ModelDevelopmentClusterTarget(TargetBase):
    project: str
    region: str
