"""A Vertex AI Model Development Cluster (Slurm).

pulumi-gcp 10.2.0 has no resource for it, so the cluster is the dynamic resource
`pulumi-python:dynamic/vertexai:ModelDevelopmentCluster` (ml_diagnostics/providers/model_development_cluster.py),
whose inputs follow the Terraform beta resource `google_vertex_ai_model_development_cluster`.
"""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from collections.abc import Mapping
from typing import Any

import pulumi

from ml_diagnostics import docs, lifecycle, verify_record
from ml_diagnostics.args import ModelDevelopmentClusterArgs
from ml_diagnostics.component import Component, known
from ml_diagnostics.google_api import rest_inputs
from ml_diagnostics.parts import Part
from ml_diagnostics.providers.model_development_cluster import ModelDevelopmentCluster as ClusterResource
from ml_diagnostics.records import ModelDevelopmentRecord
from ml_diagnostics.rules.model_development import ModelDevelopmentClusterSpec
from ml_diagnostics.specs.model_development import DEFAULT_OPERATION_TIMEOUT_MINUTES

SPEC_DEFAULTS = {
    "update_mode": "USER_AND_SERVICE",
    "deletion_policy": "DELETE",
    "operation_timeout_minutes": DEFAULT_OPERATION_TIMEOUT_MINUTES,
}


def _strip_empty(v: Any) -> Any:
    """Drops None, empty lists and maps (unset = empty for the API) so the state shows only what is set."""
    if isinstance(v, Mapping):
        return {k: _strip_empty(x) for k, x in v.items() if x is not None and x != [] and x != {}}
    if isinstance(v, list):
        return [_strip_empty(x) for x in v]
    return v


class ModelDevelopmentCluster(Component[ModelDevelopmentClusterSpec]):
    """A Vertex AI Model Development Cluster (Slurm), with safe partial updates."""

    cluster_name: pulumi.Output[str]
    """The cluster's full resource name."""
    state: pulumi.Output[str]
    """The cluster's state (ACTIVE, ...)."""
    update_mode: pulumi.Output[str]
    """USER_AND_SERVICE or USER_ONLY."""
    deletion_policy: pulumi.Output[str]
    """DELETE, ABANDON or PREVENT."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:ModelDevelopmentCluster"
    _SPEC = ModelDevelopmentClusterSpec

    def __init__(
        self, name: str, args: ModelDevelopmentClusterArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(name, args, opts)

    def _options(
        self, spec: ModelDevelopmentClusterSpec, opts: pulumi.ResourceOptions | None
    ) -> pulumi.ResourceOptions | None:
        # PREVENT guards the whole component (and so the cluster) against `pulumi destroy` at the engine.
        guard = (
            pulumi.ResourceOptions(protect=True)
            if _policy(spec) is lifecycle.DeletionPolicy.PREVENT
            else None
        )
        return pulumi.ResourceOptions.merge(opts, guard)

    def _build(self, name: str, spec: ModelDevelopmentClusterSpec, **_: Any) -> None:
        props = _cluster_inputs(spec)
        policy = _policy(spec)
        self.cluster = ClusterResource(
            f"{name}-cluster",
            props,
            pulumi.ResourceOptions.merge(
                pulumi.ResourceOptions(parent=self), lifecycle.deletion_options(policy)
            ),
        )
        self.cluster_name = self.cluster.name
        self.state = self.cluster.state
        self.update_mode = known(props["update_mode"])
        self.deletion_policy = known(policy.value)
        self.verify_record = known(
            verify_record.record(
                modelDevelopment=verify_record.model_development(
                    spec.project, spec.region, spec.model_development_cluster_id, spec.google_api
                )
            )
        )
        self.register_outputs(
            {
                verify_record.OUTPUT: self.verify_record,
                "clusterName": self.cluster_name,
                "state": self.state,
                "updateMode": props["update_mode"],
                "deletionPolicy": policy.value,
            }
        )


def _set_keys(spec: ModelDevelopmentClusterSpec) -> dict[str, Any]:
    """The cluster's own keys the caller set, with what is empty left out."""
    args = spec.model_dump(exclude_unset=True, warnings=False)
    return {
        **SPEC_DEFAULTS,
        **_strip_empty({k: v for k, v in args.items() if k not in ("google_api", "adopt")}),
    }


def _policy(spec: ModelDevelopmentClusterSpec) -> lifecycle.DeletionPolicy:
    return lifecycle.DeletionPolicy(_set_keys(spec)["deletion_policy"])


def _cluster_inputs(spec: ModelDevelopmentClusterSpec) -> dict[str, Any]:
    """The dynamic resource's inputs: the cluster's keys, the REST client's account settings, adoption."""
    return {
        **_set_keys(spec),
        **rest_inputs(spec.model_dump(exclude_unset=True, warnings=False).get("google_api"), "aiplatform"),
        # Adopted (created with curl): the provider's create takes the existing cluster over. Not
        # `import_`: the engine imports by calling Read without the dynamic provider it would need.
        **({"adopt": True} if spec.adopt else {}),
    }


docs.document(ModelDevelopmentCluster, ModelDevelopmentClusterArgs)

PART = Part(
    order=110,
    component="ModelDevelopmentCluster",
    spec=ModelDevelopmentClusterSpec,
    exports=("ModelDevelopmentCluster", "ModelDevelopmentClusterArgs", "GoogleApiArgs", "RetryArgs"),
    record=ModelDevelopmentRecord,
    section="model_development",
    readme=(
        "`ModelDevelopmentCluster`",
        "a Vertex AI Model Development Cluster (Slurm) through its REST API, with safe partial updates",
    ),
)


__all__ = ["ModelDevelopmentCluster", "ModelDevelopmentClusterArgs"]
