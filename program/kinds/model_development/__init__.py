"""The modelDevelopmentClusters kind: Vertex AI Model Development Clusters (Slurm)."""

from __future__ import annotations

from program.clouds.google import GOOGLE
from program.kinds.base import Claim, Costly, KindDocs, TargetKind
from program.kinds.model_development.model import ModelDevelopmentClusterTarget


def claims(t: ModelDevelopmentClusterTarget) -> list[Claim]:
    ident = ("mdc", t.project, t.region, t.model_development_cluster_id)
    return [(ident, f"Model Development Cluster {t.project}/{t.region}/{t.model_development_cluster_id}", "")]


DOCS = KindDocs(
    summary=(
        (
            "**`modelDevelopmentClusters`**: a dynamic resource over the Vertex AI REST API shaped like the Terraform\n"
            "beta resource; an update is a PATCH whose `updateMask` names exactly the changed fields; a display-name\n"
            "change is an in-place update, never a delete."
        ),
    ),
    checks=(
        (
            "Model Development Clusters (`modelDevelopmentClusters`)",
            "`mdc.state`: RUNNING with no operation pending (PROVISIONING/UPDATING/REPAIRING/STOPPING: pending; "
            "ERROR: the cluster's error)",
        ),
    ),
    removed="the cluster per `deletionPolicy` (prod: `PREVENT` unless set)",
    example=(
        "{project}:modelDevelopmentClusters:       # Vertex AI Model Development Clusters (Slurm)\n"
        "  - name: slurm\n"
        "    project: my-project\n"
        "    region: us-central1\n"
        "    modelDevelopmentClusterId: slurm1\n"
    ),
)


KIND = TargetKind(
    package=__name__,
    order=40,
    key="modelDevelopmentClusters",
    field="model_development_clusters",
    model=ModelDevelopmentClusterTarget,
    description="Vertex AI Model Development Clusters (Slurm).",
    prefix="mdc",
    export="modelDevelopmentCluster",
    section="model_development",
    cloud=GOOGLE,
    component="mldiag:index:ModelDevelopmentCluster",
    costly=(
        Costly(
            "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster",
            "Model Development Cluster",
            "Model Development Clusters",
        ),
    ),
    claims=claims,
    docs=DOCS,
)
