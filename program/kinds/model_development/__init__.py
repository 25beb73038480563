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
        "    network:\n"
        "      network: projects/my-project/global/networks/default\n"
        "      subnetwork: projects/my-project/regions/us-central1/subnetworks/default\n"
        "    nodePools:\n"
        "      - id: login\n"
        "        machineSpec: {machineType: n2-standard-8}\n"
        "        scalingSpec: {minNodeCount: 1, maxNodeCount: 1}\n"
        "        zone: us-central1-a\n"
        "        nodeImage: projects/vertex-ai-slurm/global/images/slurm-cpu-2026-01-15   # pinned (prod requires it)\n"
        "      - id: cpu\n"
        "        machineSpec: {machineType: n2-standard-8}\n"
        "        scalingSpec: {minNodeCount: 0, maxNodeCount: 2}\n"
        "        zone: us-central1-a\n"
        "        nodeImage: projects/vertex-ai-slurm/global/images/slurm-cpu-2026-01-15\n"
        "    orchestratorSpec:\n"
        "      slurmSpec:\n"
        "        homeDirectoryStorage: projects/my-project/locations/us-central1-a/instances/home\n"
        "        partitions: [{id: cpu, nodePoolIds: [cpu]}]\n"
        "        loginNodePoolId: login\n"
        "        defaultPartitionId: cpu\n"
        "    deletionPolicy: PREVENT              # staging and prod want PREVENT or ABANDON: a delete is for good\n"
    ),
)


KIND = TargetKind(
    order=40,
    key="modelDevelopmentClusters",
    model=ModelDevelopmentClusterTarget,
    description="Vertex AI Model Development Clusters (Slurm).",
    prefix="mdc",
    cloud=GOOGLE,
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
