"""Rules of a Vertex AI Model Development Cluster (`ModelDevelopmentCluster`).

The cluster's schema is `ml_diagnostics.specs.model_development.ClusterSpec` (shared with the dynamic
provider, whose `check` runs `validate_spec` again on the resolved inputs); these add everything spliced into
a REST path or checked by the API's naming rules, so a bad value is refused before any request.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import model_validator

from ml_diagnostics.rules import names
from ml_diagnostics.rules.base import Path, is_output, key, raise_issues
from ml_diagnostics.rules.google_api import GoogleApiSpec
from ml_diagnostics.specs.model_development import ClusterSpec
from ml_diagnostics.specs.model_development_rules import validate_spec

# Vertex AI display names: at most 128 UTF-8 characters.
DISPLAY_NAME_MAX = 128
_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def _mention(*parts: str | int) -> str:
    """A key path named inside a message, spelled for its reader (`key`)."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{key(part)}" if out else key(part))
    return out


def parse_path(text: str) -> Path:
    """`node_pools[0].id` -> ("node_pools", 0, "id")."""
    return tuple(int(m.group(2)) if m.group(2) else m.group(1) for m in _PART.finditer(text))


class ModelDevelopmentClusterRules(ClusterSpec):
    """A cluster's spec with every rule a stack file's modelDevelopmentClusters target has too."""

    @model_validator(mode="after")
    def _rules(self) -> ModelDevelopmentClusterRules:
        # An Output is known only later: the provider's own check runs these rules again on the resolved inputs.
        if any(is_output(getattr(self, f)) for f in ClusterSpec.model_fields):
            return self
        problems = self._identifier_problems()
        problems += [(parse_path(p), m) for p, m in validate_spec(self.spec_inputs(), mention=_mention)]
        raise_issues(problems)
        return self

    def spec_inputs(self) -> dict[str, Any]:
        """The dynamic resource's inputs (snake_case, unset fields left out)."""
        return _strip_empty(self.model_dump(include=set(ClusterSpec.model_fields), exclude_none=True))

    def _identifier_problems(self) -> list[tuple[Path, str]]:
        problems: list[tuple[Path, str]] = []
        for field, problem in (("project", names.gcp_project_problem), ("region", names.gcp_region_problem)):
            if p := problem(getattr(self, field)):
                problems.append(((field,), p))
        if self.display_name is not None and len(self.display_name) > DISPLAY_NAME_MAX:
            problems.append(
                (("display_name",), f"at most {DISPLAY_NAME_MAX} characters ({len(self.display_name)} given)")
            )
        problems += names.gcp_labels_problems(self.labels, ("labels",))
        if self.runtime_spec is not None and (
            p := names.gcp_service_account_problem(self.runtime_spec.service_account)
        ):
            problems.append((("runtime_spec", "service_account"), p))
        for i, pool in enumerate(self.node_pools):
            at: Path = ("node_pools", i)
            if p := names.gcp_zone_problem(pool.zone) or names.zone_in_region_problem(
                pool.zone, self.region, key("region")
            ):
                problems.append(((*at, "zone"), p))
            machine = pool.machine_spec
            if machine.accelerator_count is not None and machine.accelerator_type is None:
                problems.append(
                    ((*at, "machine_spec", "accelerator_count"), f"needs {key('accelerator_type')}")
                )
            if p := names.gcp_machine_type_problem(pool.machine_spec.machine_type):
                problems.append(((*at, "machine_spec", "machine_type"), p))
            problems += names.gcp_labels_problems(pool.labels, (*at, "labels"))
        return problems


def _strip_empty(v: Any) -> Any:
    """Drops empty lists and maps (unset = empty for the API) so the plan shows only what is set."""
    if isinstance(v, dict):
        return {k: _strip_empty(x) for k, x in v.items() if x != [] and x != {}}
    if isinstance(v, list):
        return [_strip_empty(x) for x in v]
    return v


class ModelDevelopmentClusterSpec(ModelDevelopmentClusterRules):
    """A Vertex AI Model Development Cluster (Slurm), as the component takes it."""

    google_api: GoogleApiSpec | None = None
    """How the REST client calls Google (endpoint, quota project, impersonation, emulator, retries)."""
    adopt: bool = False
    """Take over a cluster created with the REST API (its create GETs it, no POST)."""
