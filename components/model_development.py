"""A `modelDevelopmentClusters` target: one Vertex AI Model Development Cluster (Slurm).

pulumi-gcp 10.2.0 has no resource for it, so the cluster is the dynamic resource
`pulumi-python:dynamic/vertexai:ModelDevelopmentCluster` (components/providers/model_development_cluster.py),
whose inputs follow the Terraform beta resource `google_vertex_ai_model_development_cluster`.
"""

from __future__ import annotations

import pulumi

from components.config import GoogleApiSettings
from components.config_base import secret_inputs
from components.providers.model_development_cluster import ModelDevelopmentCluster as ClusterResource
from components.targets.model_development import ModelDevelopmentClusterTarget


class ModelDevelopmentCluster(pulumi.ComponentResource):
    """Outputs: clusterName (full resource name), state, updateMode, deletionPolicy."""

    def __init__(
        self,
        name: str,
        target: ModelDevelopmentClusterTarget,
        google_api: GoogleApiSettings | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("mldiag:index:ModelDevelopmentCluster", name, None, opts)
        google_api = google_api or GoogleApiSettings()
        # endpoint, quota project, impersonation, emulator mode, retry: the target's googleApi over the stack's
        props = {
            **secret_inputs(target.spec()),
            **google_api.for_target(target.google_api).rest_inputs("aiplatform"),
            # Adopted (created with curl): the provider's create takes the existing cluster over. Not
            # `import_`: the engine imports by calling Read without the dynamic provider it would need.
            **({"adopt": True} if target.adopt else {}),
        }
        # PREVENT also guards the cluster against `pulumi destroy` at the engine level.
        protect = target.deletion_policy == "PREVENT"
        # ABANDON is Pulumi's retainOnDelete (the provider's delete also leaves an ABANDON cluster alone).
        retain = target.deletion_policy == "ABANDON"
        self.cluster = ClusterResource(
            f"{name}-cluster",
            props,
            pulumi.ResourceOptions(
                parent=self,
                protect=protect or None,
                retain_on_delete=retain or None,
            ),
        )
        self.cluster_name = self.cluster.name
        self.state = self.cluster.state
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "state": self.state,
                "updateMode": target.update_mode,
                "deletionPolicy": target.deletion_policy,
            }
        )
