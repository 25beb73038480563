"""A chart's values against the chart's own `values.schema.json`: cert-manager's, merged with the program's
values, for every chart version whose schema ml_diagnostics.cert_manager_schema holds (docs/constraints.md
names the source). A value only known at deployment (a pulumi.Output) is checked for its key only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ml_diagnostics import cert_manager_schema
from ml_diagnostics.rules.base import MapKey, Path, is_output


def cert_manager_values_problems(version: str, values: Mapping[str, Any]) -> list[tuple[Path, str]]:
    """Each value of `values` (merged with the program's) the chart version's schema refuses, at its key path
    below `values`; nothing for a version without a known schema (cert_manager_schema.schema_note says why)."""
    merged = cert_manager_schema.cert_manager_values(version, values)
    found = cert_manager_schema.values_problems(version, merged, unknown=is_output) or []
    return [
        (("values", *(MapKey(p) if isinstance(p, str) else p for p in problem.path)), problem.message)
        for problem in found
    ]
