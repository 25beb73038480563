"""Verify checks of an azureMl target: the extension (and Arc relay) as ARM reports them."""

from __future__ import annotations

from program.kinds.azure_ml.model import AzureMlTarget
from program.verify.azure import check_extension
from program.verify.context import VerifyContext
from program.verify.result import TargetResult


def verify(target: AzureMlTarget, ctx: VerifyContext, result: TargetResult) -> None:
    check_extension(target, ctx.arm(), result)
