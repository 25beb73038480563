"""The table of target kinds: each kind is declared once, by its entry (program/kinds/<kind>/__init__.py),
and listed here.

The program (`__main__.py`), the stack config (`program.config.StackConfig`), the cross-target checks,
verify, the offline plan's mock answers and its diff all read this table. The order is the order
targets are built in. README "Add a target kind" says what a new entry needs.
"""

from __future__ import annotations

from program.kinds import azure_ml, gke, kubernetes, model_development
from program.kinds.base import BuildContext, Lazy, TargetKind

KINDS: tuple[TargetKind, ...] = (kubernetes.KIND, gke.KIND, azure_ml.KIND, model_development.KIND)
BY_KEY = {k.key: k for k in KINDS}

__all__ = ["BY_KEY", "KINDS", "BuildContext", "Lazy", "TargetKind"]
