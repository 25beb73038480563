"""How `mldiag verify --stack` reads a GkeCluster from a state from before `verifyRecord`
(program/verify/from_state.py says what a kind's state hook holds)."""

from __future__ import annotations

from typing import Any

from ml_diagnostics import verify_record
from program.in_cluster.from_state import in_cluster_from
from program.verify.from_state import TOKEN, Resource, google_api_from, under

GKE_CLUSTER = "gcp:container/cluster:Cluster"
GCP_PROVIDER = "pulumi:providers:gcp"
COMPONENTS = ("GkeCluster",)


def rebuild(top: Resource, descendants: list[Resource]) -> tuple[dict[str, Any] | None, str]:
    mode = top.outputs.get("mode")
    created = next((r for r in descendants if r.type == GKE_CLUSTER), None)
    flag = next((r for r in descendants if r.type.endswith(":ManagedMlDiagnostics")), None)
    google_api: dict[str, Any] = {}
    if created is not None:
        project, location, name = (created.inputs.get(k) for k in ("project", "location", "name"))
        gcp = next((r for r in descendants if r.type == GCP_PROVIDER), None)
        if gcp is not None:
            if gcp.inputs.get("impersonateServiceAccount"):
                google_api["impersonateServiceAccount"] = gcp.inputs["impersonateServiceAccount"]
            if gcp.inputs.get("billingProject"):
                google_api["quotaProject"] = gcp.inputs["billingProject"]
    elif flag is not None:
        project, location, name = (flag.inputs.get(k) for k in ("project", "location", "cluster"))
        google_api = google_api_from(flag.inputs, "container")
    else:
        return None, "neither the GKE cluster nor its managed-diagnostics flag resource is in the state"
    if mode not in ("managed", "manual") or not (project and location and name):
        return None, "the state does not say the cluster's project, location, name and mode"
    inner = next((r for r in descendants if r.type == f"{TOKEN}ClusterMlDiagnostics"), None)
    inside_of = [r for r in descendants if inner is not None and under(r, inner, descendants)]
    inside = in_cluster_from(inner, inside_of) if inner is not None else {}
    return verify_record.record(
        gke={
            "project": project,
            "location": location,
            "clusterName": name,
            "mode": mode,
            "googleApi": google_api,
            "inCluster": inside,
        }
    ), ""
