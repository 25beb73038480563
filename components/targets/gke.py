"""Config of `gkeClusters` targets (created or adopted GKE clusters)."""

from __future__ import annotations

from components.config import TargetBase


class GkeClusterTarget(TargetBase):
    project: str
    location: str
