"""modelDevelopmentClusters target -> `ml_diagnostics.ModelDevelopmentCluster`."""

from __future__ import annotations

from typing import Any

from ml_diagnostics import lifecycle
from ml_diagnostics.model_development import ModelDevelopmentCluster, ModelDevelopmentClusterArgs
from ml_diagnostics.rules.base import trusted
from ml_diagnostics.rules.model_development import ModelDevelopmentClusterSpec
from program.clouds.google import GOOGLE
from program.config_base import secret_inputs
from program.kinds.base import BuildContext
from program.kinds.model_development.model import ModelDevelopmentClusterTarget


def args(target: ModelDevelopmentClusterTarget, ctx: BuildContext) -> ModelDevelopmentClusterArgs:
    explicit = target.deletion_policy if "deletion_policy" in target.model_fields_set else None
    out: dict[str, Any] = {
        **secret_inputs(target.spec()),
        # Unset: PREVENT in prod (expensive and stateful), else DELETE.
        "deletion_policy": lifecycle.effective_policy(explicit, ctx.environment, expensive=True).value,
        "google_api": ctx.settings_of(GOOGLE).for_target(target.google_api).to_args(),
    }
    if target.adopt:
        out["adopt"] = True
    return out  # type: ignore[return-value]


def build(target: ModelDevelopmentClusterTarget, ctx: BuildContext) -> Any:
    mdc = ctx.component(
        ModelDevelopmentCluster, "mdc", target, trusted(ModelDevelopmentClusterSpec, args(target, ctx))
    )
    return {"name": mdc.cluster_name, "state": mdc.state}
