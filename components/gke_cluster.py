"""A `gkeClusters` target: a GKE cluster created or adopted, its managed ML Diagnostics flag, and what
runs inside it (`ClusterMlDiagnostics`).

- created (`create: true`): `gcp.container.Cluster` with `managed_machine_learning_diagnostics_config`
  ALWAYS set explicitly (the block is Computed upstream: leaving it out never turns the feature off), the
  default node pool removed and each pool a separate `gcp.container.NodePool`, so that flipping the flag
  is an in-place update of the cluster alone.
- adopted: `gcp.container.get_cluster` for endpoint and CA; the flag through the `ManagedMlDiagnostics`
  dynamic resource (GKE API update + operation; its delete restores the flag's earlier value).
- both: a `kubernetes.Provider` whose kubeconfig uses the `gke-gcloud-auth-plugin` exec credential (no
  token in state), handed to `ClusterMlDiagnostics`.
- manual -> managed takes two updates (`managed_flag`): the engine deletes the manual releases only at the
  end of an update, so the first update removes them with the flag still off and the next turns it on.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi
from pulumi_gcp import container
from pulumi_gcp.provider import Provider as GcpProvider
from pulumi_kubernetes.provider import Provider as KubernetesProvider

from components import lifecycle
from components.cluster_ml_diagnostics import ClusterMlDiagnostics
from components.config import GoogleApiSettings
from components.providers.gke_managed_diagnostics import ManagedMlDiagnostics
from components.targets.gke import GkeClusterTarget, NodePool

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
AUTH_PLUGIN = "gke-gcloud-auth-plugin"
_ZONE = re.compile(r"[a-z]+-[a-z]+\d+-[a-z]")
AUTH_PLUGIN_HINT = (
    "Install gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin); see "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin"
)


def exec_env(google_api: GoogleApiSettings) -> list[dict[str, str]]:
    """Environment of the auth plugin's exec credential: the plugin gets its token from gcloud, which reads
    its properties from CLOUDSDK_* variables (auth/impersonate_service_account, billing/quota_project)."""
    env = []
    if google_api.impersonate_service_account:
        env.append(
            {
                "name": "CLOUDSDK_AUTH_IMPERSONATE_SERVICE_ACCOUNT",
                "value": google_api.impersonate_service_account,
            }
        )
    if google_api.quota_project:
        env.append({"name": "CLOUDSDK_BILLING_QUOTA_PROJECT", "value": google_api.quota_project})
    return env


def gcp_provider_args(project: str, location: str, google_api: GoogleApiSettings) -> dict[str, Any]:
    """The gcp provider inputs binding a target's resources to its project (and identity, quota project)."""
    args: dict[str, Any] = {"project": project}
    if _ZONE.fullmatch(location):
        args["zone"] = location
        args["region"] = location.rsplit("-", 1)[0]
    else:
        args["region"] = location
    if google_api.impersonate_service_account:
        args["impersonate_service_account"] = google_api.impersonate_service_account
    if google_api.quota_project:
        # Without user_project_override the provider ignores billing_project for most APIs.
        args["billing_project"] = google_api.quota_project
        args["user_project_override"] = True
    return args


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


SWITCH_PENDING = (
    "{name}: manual -> managed, step 1 of 2: this update deletes the manual releases and leaves the managed "
    "flag off; run `pulumi up` again to turn the flag on (the two webhooks never run side by side)"
)


def managed_flag(mode: str, previous_export: pulumi.Output[Any] | None) -> pulumi.Output[bool] | bool:
    """The managed flag's value for this update. On the first update after the last deployment exported
    mode manual, the flag stays off: the manual releases this update no longer declares are deleted only
    at its end, and the flag must not go on while they run."""
    if mode != "managed":
        return False
    if previous_export is None:
        return True
    return previous_export.apply(lambda prev: not (isinstance(prev, dict) and prev.get("mode") == "manual"))


def _node_config(pool: NodePool, workload_identity: bool) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "machine_type": pool.machine_type,
        "oauth_scopes": [CLOUD_PLATFORM_SCOPE],
        "labels": dict(pool.labels),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints],
        "spot": pool.spot,
    }
    if workload_identity:
        cfg["workload_metadata_config"] = {"mode": "GKE_METADATA"}
    if pool.disk_size_gb is not None:
        cfg["disk_size_gb"] = pool.disk_size_gb
    if pool.disk_type is not None:
        cfg["disk_type"] = pool.disk_type
    if pool.service_account is not None:
        cfg["service_account"] = pool.service_account
    if (acc := pool.guest_accelerator) is not None:
        cfg["guest_accelerators"] = [
            {
                "type": acc.type,
                "count": acc.count,
                "gpu_driver_installation_config": {"gpu_driver_version": acc.gpu_driver_version},
            }
        ]
    return cfg


class GkeCluster(pulumi.ComponentResource):
    """Outputs: clusterName, endpoint, mode (resolved), managedDiagnostics (the flag as this update sets
    it), workloadMonitoring."""

    cluster: container.Cluster | None = None
    node_pools: list[container.NodePool]
    managed_flag: ManagedMlDiagnostics | None = None

    def __init__(
        self,
        name: str,
        target: GkeClusterTarget,
        google_api: GoogleApiSettings | None = None,
        opts: pulumi.ResourceOptions | None = None,
        *,
        deletion_policy: lifecycle.DeletionPolicy = "DELETE",
        previous_export: pulumi.Output[Any] | None = None,
    ):
        """`deletion_policy`: what removing a created cluster does (components.lifecycle).
        `previous_export`: what the last deployment exported for this target (`managed_flag`)."""
        super().__init__("mldiag:index:GkeCluster", name, None, opts)
        google_api = google_api or GoogleApiSettings()
        t = target
        self.mode = t.resolved_mode
        managed = self.mode == "managed"
        self.managed_flag_on = managed_flag(self.mode, previous_export)
        self.pending_step: pulumi.Output[str | None] = pulumi.Output.from_input(self.managed_flag_on).apply(
            lambda on: SWITCH_PENDING.format(name=name) if managed and not on else None
        )
        self.pending_step.apply(lambda step: pulumi.log.warn(step, resource=self) if step else None)
        self.node_pools = []
        # The account scope of this target: project/region, and the identity and quota project when set.
        self.gcp_provider = GcpProvider(
            f"{name}-gcp",
            **gcp_provider_args(t.project, t.location, google_api),
            opts=pulumi.ResourceOptions(parent=self),
        )
        child = pulumi.ResourceOptions(parent=self, provider=self.gcp_provider)

        if t.create:
            self.cluster = container.Cluster(
                f"{name}-cluster",
                name=t.gke_name,
                project=t.project,
                location=t.location,
                min_master_version=t.min_master_version,
                release_channel={"channel": t.release_channel} if t.release_channel else None,
                network=t.network,
                subnetwork=t.subnetwork,
                remove_default_node_pool=True,
                initial_node_count=1,
                deletion_protection=t.deletion_protection,
                workload_identity_config=(
                    {"workload_pool": f"{t.project}.svc.id.goog"} if t.workload_identity else None
                ),
                managed_machine_learning_diagnostics_config={"enabled": self.managed_flag_on},
                opts=pulumi.ResourceOptions.merge(child, lifecycle.deletion_options(deletion_policy)),
            )
            for pool in t.node_pools:
                self.node_pools.append(
                    container.NodePool(
                        f"{name}-pool-{pool.name}",
                        name=pool.name,
                        cluster=self.cluster.name,
                        project=t.project,
                        location=t.location,
                        node_count=None
                        if pool.autoscaling
                        else (pool.node_count if pool.node_count is not None else 1),
                        autoscaling=(
                            {
                                "min_node_count": pool.autoscaling.min_node_count,
                                "max_node_count": pool.autoscaling.max_node_count,
                            }
                            if pool.autoscaling
                            else None
                        ),
                        node_locations=pool.node_locations or None,
                        management={"auto_repair": True, "auto_upgrade": True},
                        placement_policy=(
                            {"type": "COMPACT", "tpu_topology": pool.tpu_topology}
                            if pool.tpu_topology
                            else None
                        ),
                        node_config=_node_config(pool, t.workload_identity),
                        opts=child,
                    )
                )
            endpoint = self.cluster.endpoint
            ca = self.cluster.master_auth.apply(lambda a: a.cluster_ca_certificate if a else None)
            cluster_name: pulumi.Output[str] = self.cluster.name
            # The API server is up once the cluster exists: the provider needs only that (its kubeconfig
            # comes from the cluster's outputs). Helm releases await pod readiness, so they wait for nodes.
            provider_waits: list[pulumi.Resource] = []
            release_waits: list[pulumi.Resource] = list(self.node_pools)
        else:
            found = container.get_cluster_output(
                name=t.gke_name,
                location=t.location,
                project=t.project,
                opts=pulumi.InvokeOutputOptions(parent=self, provider=self.gcp_provider),
            )
            endpoint = found.endpoint
            ca = found.master_auths.apply(lambda auths: auths[0].cluster_ca_certificate if auths else None)
            cluster_name = found.name.apply(lambda n: n or t.gke_name)
            self.managed_flag = ManagedMlDiagnostics(
                f"{name}-managed-mldiagnostics",
                project=t.project,
                location=t.location,
                cluster=t.gke_name,
                enabled=self.managed_flag_on,
                cluster_version=t.current_version or "",
                google_api=google_api.for_target(t.google_api).rest_inputs("container"),
                # A dynamic resource: its REST client takes the account settings as inputs, not a gcp provider.
                opts=pulumi.ResourceOptions(parent=self),
            )
            # The in-cluster resources wait for the flag: turning managed off happens before manual releases
            # are installed, so the two webhooks never run side by side on the way to manual.
            provider_waits, release_waits = [self.managed_flag], []

        self.endpoint = endpoint
        self.kubeconfig = pulumi.Output.all(endpoint, ca).apply(
            lambda ec: gke_kubeconfig(t.project, t.location, t.gke_name, ec[0], ec[1], exec_env(google_api))
        )
        # Every in-cluster resource uses this provider, so they all wait for what it depends on (adopted: the
        # managed flag). depends_on on a component would not reach its children, hence `releases_after`.
        self.provider = KubernetesProvider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            opts=pulumi.ResourceOptions(parent=self, depends_on=provider_waits),
        )
        self.diagnostics = ClusterMlDiagnostics(
            f"{name}-mldiag",
            t,
            self.mode,
            self.provider,
            opts=pulumi.ResourceOptions(parent=self),
            gke_version=t.version,
            releases_after=release_waits,
        )
        self.workload_monitoring = t.workload_monitoring
        self.register_outputs(
            {
                "clusterName": cluster_name,
                "endpoint": endpoint,
                "mode": self.mode,
                "managedDiagnostics": self.managed_flag_on,
                "workloadMonitoring": self.workload_monitoring,
            }
        )
