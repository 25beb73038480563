"""Config of `modelDevelopmentClusters` targets (Vertex AI Model Development Cluster, Slurm).

The keys are the cluster schema in `ml_diagnostics.specs.model_development` (one schema, shared with the dynamic
provider; camelCase here, snake_case as resource inputs) plus the target's name, `adopt` and `googleApi`.
The rules are the library's (`ml_diagnostics.rules.model_development`: the provider's check and every name
spliced into a REST path), so a bad stack file fails before any resource is registered, with the key path.
"""

from __future__ import annotations

from typing import Any

from ml_diagnostics.rules.model_development import DISPLAY_NAME_MAX, ModelDevelopmentClusterRules
from program.clouds.google import TargetGoogleApi
from program.config_base import TargetBase

__all__ = ["DISPLAY_NAME_MAX", "ModelDevelopmentClusterTarget"]


class ModelDevelopmentClusterTarget(TargetBase, ModelDevelopmentClusterRules):
    adopt: bool = False
    """Take over a cluster created with the REST API (curl): imported by its full resource name."""
    google_api: TargetGoogleApi | None = None
    """Per-target Google credentials/retry settings (override the stack's googleApi keys)."""

    def spec(self) -> dict[str, Any]:
        """The dynamic resource's inputs (snake_case, unset fields left out)."""
        return self.spec_inputs()
