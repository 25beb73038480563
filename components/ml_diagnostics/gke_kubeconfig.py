"""How a GKE cluster is reached: a kubeconfig whose credential comes from `gke-gcloud-auth-plugin` at use
time (no token in it, nor in the state). The component's Kubernetes provider and verify use the same one; it
imports no SDK.
"""

from __future__ import annotations

import json
from typing import Any

AUTH_PLUGIN = "gke-gcloud-auth-plugin"
AUTH_PLUGIN_HINT = (
    "Install gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin); see "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin"
)


def gke_kubeconfig(
    project: str,
    location: str,
    cluster: str,
    endpoint: str,
    ca_certificate: str,
    env: list[dict[str, str]] | None = None,
) -> str:
    """A kubeconfig (JSON) for one GKE cluster; credentials come from `gke-gcloud-auth-plugin` at use time."""
    ref = f"gke_{project}_{location}_{cluster}"
    exec_cfg: dict[str, Any] = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": AUTH_PLUGIN,
        "installHint": AUTH_PLUGIN_HINT,
        "provideClusterInfo": True,
    }
    if env:
        exec_cfg["env"] = env
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": ref,
                    "cluster": {
                        "server": f"https://{endpoint}",
                        "certificate-authority-data": ca_certificate,
                    },
                }
            ],
            "contexts": [{"name": ref, "context": {"cluster": ref, "user": ref}}],
            "current-context": ref,
            "users": [
                {
                    "name": ref,
                    "user": {"exec": exec_cfg},
                }
            ],
        },
        sort_keys=True,
    )
