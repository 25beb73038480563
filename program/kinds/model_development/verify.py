"""Verify checks of a modelDevelopmentClusters target: the cluster as the Vertex AI API reports it."""

from __future__ import annotations

from program.kinds.model_development.model import ModelDevelopmentClusterTarget
from program.verify.context import VerifyContext
from program.verify.google import check_model_development_cluster
from program.verify.result import TargetResult


def verify(target: ModelDevelopmentClusterTarget, ctx: VerifyContext, result: TargetResult) -> None:
    check_model_development_cluster(target, ctx.cfg.google_api, result)
