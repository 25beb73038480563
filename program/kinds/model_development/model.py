"""Config of `modelDevelopmentClusters` targets (Vertex AI Model Development Cluster, Slurm).

The keys are the cluster schema in `ml_diagnostics.specs.model_development` (one schema, shared with the dynamic
provider; camelCase here, snake_case as resource inputs) plus the target's name, `adopt` and `googleApi`.
Every rule of the provider's check runs here too, so a bad stack file fails before any resource is
registered, with the key path.
"""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from ml_diagnostics.specs.model_development import ClusterSpec
from ml_diagnostics.specs.model_development_rules import validate_spec
from program import validators
from program.config_base import TargetBase, raise_issues
from program.google_api import TargetGoogleApi

# Vertex AI display names: at most 128 UTF-8 characters.
DISPLAY_NAME_MAX = 128


class ModelDevelopmentClusterTarget(TargetBase, ClusterSpec):
    adopt: bool = False
    """Take over a cluster created with the REST API (curl): imported by its full resource name."""
    google_api: TargetGoogleApi | None = None
    """Per-target Google credentials/retry settings (override the stack's googleApi keys)."""

    @model_validator(mode="after")
    def _rules(self) -> ModelDevelopmentClusterTarget:
        raise_issues(self._identifier_problems() + validate_spec(self.spec(), camel=True))
        return self

    def _identifier_problems(self) -> list[tuple[str, str]]:
        """Everything spliced into a REST path or checked by the API's naming rules, before any request."""
        problems: list[tuple[str, str]] = []
        for key, problem, value in (
            ("project", validators.gcp_project_problem, self.project),
            ("region", validators.gcp_region_problem, self.region),
        ):
            if p := problem(value):
                problems.append((key, p))
        if self.display_name is not None and len(self.display_name) > DISPLAY_NAME_MAX:
            problems.append(
                ("displayName", f"at most {DISPLAY_NAME_MAX} characters ({len(self.display_name)} given)")
            )
        problems += validators.gcp_labels_problems(self.labels, "labels")
        for i, pool in enumerate(self.node_pools):
            at = f"nodePools[{i}]"
            if p := validators.gcp_zone_problem(pool.zone):
                problems.append((f"{at}.zone", p))
            if p := validators.gcp_machine_type_problem(pool.machine_spec.machine_type):
                problems.append((f"{at}.machineSpec.machineType", p))
            problems += validators.gcp_labels_problems(pool.labels, f"{at}.labels")
        return problems

    def spec(self) -> dict[str, Any]:
        """The dynamic resource's inputs (snake_case, unset fields left out)."""
        return _strip_empty(
            self.model_dump(exclude={"name", "google_api", "previous_name", "adopt"}, exclude_none=True)
        )


def _strip_empty(v: Any) -> Any:
    """Drops empty lists and maps (unset = empty for the API) so the plan shows only what is set."""
    if isinstance(v, dict):
        return {k: _strip_empty(x) for k, x in v.items() if x != [] and x != {}}
    if isinstance(v, list):
        return [_strip_empty(x) for x in v]
    return v
