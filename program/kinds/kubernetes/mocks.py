"""The offline plan's answers for the kubernetesClusters kind: none (the Kubernetes resources echo their inputs)."""

from __future__ import annotations

from typing import Any

INVOKES: dict[str, Any] = {}
OUTPUTS: dict[str, Any] = {}
