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

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from typing import Any, NamedTuple

import pulumi
from pulumi_gcp import container
from pulumi_gcp.provider import Provider as GcpProvider
from pulumi_kubernetes.provider import Provider as KubernetesProvider

from ml_diagnostics import compat, docs, lifecycle, verify_record
from ml_diagnostics.args import (
    GkeAutoscalingArgs,
    GkeClusterArgs,
    GkeGuestAcceleratorArgs,
    GkeNodePoolArgs,
    GkeTaintArgs,
    GoogleApiArgs,
)
from ml_diagnostics.cluster_ml_diagnostics import ClusterMlDiagnostics
from ml_diagnostics.component import Component, known
from ml_diagnostics.gke_kubeconfig import gke_kubeconfig
from ml_diagnostics.gke_node_pools import node_pool_args
from ml_diagnostics.google_api import exec_env, gcp_provider_args, rest_inputs
from ml_diagnostics.parts import Part
from ml_diagnostics.providers.gke_managed_diagnostics import ManagedMlDiagnostics
from ml_diagnostics.records import GkeRecord
from ml_diagnostics.rules.gke import GkeClusterSpec
from ml_diagnostics.rules.in_cluster import ClusterMlDiagnosticsSpec, InClusterSpec, MlDiagnosticsMode

AUTOPILOT_DIAGON = (
    "GKE cluster {path} is an Autopilot cluster, and Autopilot admits no privileged pods: the Diagon daemon "
    "(privileged, hostNetwork) cannot run there. Set diagon.enabled: false for this target (managed ML "
    "Diagnostics and the workload opt-in work on Autopilot), or run Diagon on a GKE Standard cluster"
)


class AutopilotError(pulumi.RunError):
    """Diagon asked for on an Autopilot cluster (found by the cluster lookup)."""


SWITCH_PENDING = (
    "{name}: manual -> managed, step 1 of 2: this update deletes the manual releases and leaves the managed "
    "flag off; run `pulumi up` again to turn the flag on (the two webhooks never run side by side)"
)


def managed_flag(
    mode: MlDiagnosticsMode, previous_mode: pulumi.Input[str] | None
) -> pulumi.Output[bool] | bool:
    """The managed flag's value for this update. On the first update after the last deployment ran in
    manual mode, the flag stays off: the manual releases this update no longer declares are deleted only
    at its end, and the flag must not go on while they run."""
    if mode is not MlDiagnosticsMode.MANAGED:
        return False
    if previous_mode is None:
        return True
    return pulumi.Output.from_input(previous_mode).apply(lambda prev: prev != "manual")


class _ClusterAccess(NamedTuple):
    """What the in-cluster part needs of the cluster, created or adopted."""

    endpoint: pulumi.Output[str]
    ca_certificate: pulumi.Output[str | None]
    cluster_name: pulumi.Output[str]
    provider_waits: list[pulumi.Resource]
    """What the Kubernetes provider (and so every in-cluster resource) depends on."""
    release_waits: list[pulumi.Resource]
    """What the Helm releases wait for besides the provider (`releases_after`)."""
    autopilot: pulumi.Output[bool] | None
    """Adopted: whether the lookup found an Autopilot cluster; created: None (a Standard cluster)."""


class GkeCluster(Component[GkeClusterSpec]):
    """A GKE cluster, created or adopted, with its managed ML Diagnostics flag and what runs inside it."""

    cluster_name: pulumi.Output[str]
    """The GKE cluster's name."""
    endpoint: pulumi.Output[str]
    """The cluster's API endpoint."""
    mode: pulumi.Output[str]
    """managed or manual."""
    managed_flag_on: pulumi.Output[bool]
    """The managed flag as this update sets it."""
    workload_monitoring: pulumi.Output[bool]
    """Automatic workload monitoring (GKE >= 1.36.4-gke.1247000)."""
    pending_step: pulumi.Output[str | None]
    """What a later update still has to do (the second step of a switch to managed); unset when nothing."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:GkeCluster"
    _SPEC = GkeClusterSpec

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, args, opts)

    def _build(self, name: str, spec: GkeClusterSpec, **_: Any) -> None:
        t: dict[str, Any] = spec.model_dump(
            exclude_unset=True, exclude=set(InClusterSpec.model_fields), warnings=False
        )
        google_api: GoogleApiArgs = t.get("google_api") or {}  # type: ignore[assignment]
        create = t.get("create", False)
        version = t.get("min_master_version") if create else t.get("current_version")
        mode = MlDiagnosticsMode(spec.resolved_mode)
        flag = self._mode(name, mode, t.get("previous_mode"))
        self.node_pools: list[container.NodePool] = []
        self.cluster: container.Cluster | None = None
        self.managed_flag: ManagedMlDiagnostics | None = None
        # The account scope of this cluster: project/region, and the identity and quota project when set.
        self.gcp_provider = GcpProvider(
            f"{name}-gcp",
            **gcp_provider_args(t["project"], t["location"], google_api),
            opts=pulumi.ResourceOptions(parent=self),
        )
        access = (
            self._created_cluster(name, t, flag)
            if create
            else self._adopted_cluster(name, t, flag, google_api)
        )
        self._kubernetes(name, t, access, google_api)
        self.diagnostics = ClusterMlDiagnostics.from_spec(
            f"{name}-mldiag",
            _diagnostics_spec(spec, mode, version, access.autopilot),
            opts=pulumi.ResourceOptions(parent=self, providers=[self.provider]),
            releases_after=access.release_waits,
        )
        self.workload_monitoring = known(compat.supports_workload_monitoring(version))
        self._record(spec, t, mode, flag)

    def _mode(self, name: str, mode: MlDiagnosticsMode, previous_mode: Any) -> pulumi.Output[bool] | bool:
        """The mode, the managed flag's state, and the pending step of a switch to managed that takes two updates."""
        flag = managed_flag(mode, previous_mode)
        managed = mode is MlDiagnosticsMode.MANAGED
        self.mode = known(mode.value)
        self.managed_flag_on = known(flag)
        self.pending_step = self.managed_flag_on.apply(
            lambda on: SWITCH_PENDING.format(name=name) if managed and not on else None
        )
        self.pending_step.apply(lambda step: pulumi.log.warn(step, resource=self) if step else None)
        return flag

    def _kubernetes(
        self, name: str, t: dict[str, Any], access: _ClusterAccess, google_api: GoogleApiArgs
    ) -> None:
        """The cluster's endpoint and kubeconfig, and the Kubernetes provider every in-cluster resource uses."""
        project, location, gke_name = t["project"], t["location"], t["cluster_name"]
        self.endpoint = access.endpoint
        self.cluster_name = access.cluster_name
        self.kubeconfig = pulumi.Output.all(access.endpoint, access.ca_certificate).apply(
            lambda ec: gke_kubeconfig(project, location, gke_name, ec[0], ec[1], exec_env(google_api))
        )
        # Every in-cluster resource uses this provider, so they all wait for what it depends on (adopted: the
        # managed flag). depends_on on a component would not reach its children, hence `releases_after`.
        self.provider = KubernetesProvider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            opts=pulumi.ResourceOptions(parent=self, depends_on=access.provider_waits),
        )

    def _record(
        self,
        spec: GkeClusterSpec,
        t: dict[str, Any],
        mode: MlDiagnosticsMode,
        flag: pulumi.Output[bool] | bool,
    ) -> None:
        """The verify record (the cluster's and what runs in it) and the component's outputs."""
        project, location, gke_name = t["project"], t["location"], t["cluster_name"]
        self.verify_record = self.diagnostics.verify_record.apply(
            lambda inside: verify_record.record(
                gke=verify_record.gke(
                    project, location, gke_name, mode.value, spec.google_api, inside["inCluster"]
                )
            )
        )
        self.register_outputs(
            {
                verify_record.OUTPUT: self.verify_record,
                "clusterName": self.cluster_name,
                "endpoint": self.endpoint,
                "mode": mode.value,
                "managedDiagnostics": flag,
                "workloadMonitoring": self.workload_monitoring,
            }
        )

    def _created_cluster(
        self, name: str, t: dict[str, Any], flag: pulumi.Output[bool] | bool
    ) -> _ClusterAccess:
        """`create: true`: the cluster (default pool removed, the flag always sent) and one NodePool per pool."""
        project, location = t["project"], t["location"]
        child = pulumi.ResourceOptions(parent=self, provider=self.gcp_provider)
        workload_identity = t.get("workload_identity", True)
        channel = t.get("release_channel")
        cluster = self.cluster = container.Cluster(
            f"{name}-cluster",
            name=t["cluster_name"],
            project=project,
            location=location,
            min_master_version=t.get("min_master_version"),
            release_channel={"channel": channel} if channel else None,
            network=t.get("network"),
            subnetwork=t.get("subnetwork"),
            remove_default_node_pool=True,
            initial_node_count=1,
            deletion_protection=t.get("deletion_protection", True),
            workload_identity_config=(
                {"workload_pool": f"{project}.svc.id.goog"} if workload_identity else None
            ),
            managed_machine_learning_diagnostics_config={"enabled": flag},
            opts=pulumi.ResourceOptions.merge(
                child, lifecycle.deletion_options(t.get("deletion_policy") or "DELETE")
            ),
        )
        for pool in t.get("node_pools") or []:
            self.node_pools.append(
                container.NodePool(
                    f"{name}-pool-{pool['name']}",
                    name=pool["name"],
                    cluster=cluster.name,
                    project=project,
                    location=location,
                    **node_pool_args(pool, workload_identity),
                    opts=child,
                )
            )
        # The API server is up once the cluster exists: the provider needs only that (its kubeconfig comes from
        # the cluster's outputs). Helm releases await pod readiness, so they wait for nodes.
        return _ClusterAccess(
            endpoint=cluster.endpoint,
            ca_certificate=cluster.master_auth.apply(lambda a: a.cluster_ca_certificate if a else None),
            cluster_name=cluster.name,
            provider_waits=[],
            release_waits=list(self.node_pools),
            autopilot=None,
        )

    def _adopted_cluster(
        self, name: str, t: dict[str, Any], flag: pulumi.Output[bool] | bool, google_api: GoogleApiArgs
    ) -> _ClusterAccess:
        """`create: false`: the cluster looked up (endpoint, CA, Autopilot) and its flag through the GKE API."""
        project, location, gke_name = t["project"], t["location"], t["cluster_name"]
        found = container.get_cluster_output(
            name=gke_name,
            location=location,
            project=project,
            opts=pulumi.InvokeOutputOptions(parent=self, provider=self.gcp_provider),
        )
        endpoint = found.endpoint
        ca = found.master_auths.apply(lambda auths: auths[0].cluster_ca_certificate if auths else None)
        cluster_name = found.name.apply(lambda n: n or gke_name)
        self.managed_flag = ManagedMlDiagnostics(
            f"{name}-managed-mldiagnostics",
            project=project,
            location=location,
            cluster=gke_name,
            enabled=flag,
            cluster_version=t.get("current_version") or "",
            google_api=rest_inputs(google_api, "container"),
            # A dynamic resource: its REST client takes the account settings as inputs, not a gcp provider.
            opts=pulumi.ResourceOptions(parent=self),
        )
        # The in-cluster resources wait for the flag: turning managed off happens before manual releases
        # are installed, so the two webhooks never run side by side on the way to manual.
        return _ClusterAccess(
            endpoint=endpoint,
            ca_certificate=ca,
            cluster_name=cluster_name,
            provider_waits=[self.managed_flag],
            release_waits=[],
            autopilot=found.enable_autopilot,
        )


def _diagnostics_spec(
    spec: GkeClusterSpec, mode: MlDiagnosticsMode, version: str | None, autopilot: pulumi.Output[bool] | None
) -> ClusterMlDiagnosticsSpec:
    """The in-cluster part: the target's in-cluster keys, the mode and the GKE version; on an adopted
    cluster, Diagon's image waits for the lookup, which refuses an Autopilot cluster."""
    in_cluster: dict[str, Any] = {
        k: getattr(spec, k) for k in spec.model_fields_set if k in InClusterSpec.model_fields
    }
    diagon = in_cluster.get("diagon")
    if autopilot is not None and diagon is not None:
        path = f"{spec.project}/{spec.location}/{spec.cluster_name}"
        image = diagon.image

        def autopilot_guard(is_autopilot: bool | None) -> Any:
            if is_autopilot:
                raise AutopilotError(AUTOPILOT_DIAGON.format(path=path))
            return image

        in_cluster["diagon"] = diagon.model_copy(update={"image": autopilot.apply(autopilot_guard)})
    in_cluster["mode"] = mode
    if version is not None:
        in_cluster["gke_version"] = version
    return ClusterMlDiagnosticsSpec.trusted(in_cluster)


docs.document(GkeCluster, GkeClusterArgs)

PART = Part(
    order=90,
    component="GkeCluster",
    spec=GkeClusterSpec,
    exports=(
        "GkeCluster",
        "GkeClusterArgs",
        "GkeAutoscalingArgs",
        "GkeGuestAcceleratorArgs",
        "GkeNodePoolArgs",
        "GkeTaintArgs",
        "GoogleApiArgs",
        "RetryArgs",
    ),
    record=GkeRecord,
    section="gke",
    readme=(
        "`GkeCluster`",
        "a GKE Standard cluster created (node pools, GPU/TPU pools, Workload Identity) or adopted, its managed "
        "ML Diagnostics flag, and `ClusterMlDiagnostics` in it",
    ),
)


__all__ = [
    "GkeAutoscalingArgs",
    "GkeCluster",
    "GkeClusterArgs",
    "GkeGuestAcceleratorArgs",
    "GkeNodePoolArgs",
    "GkeTaintArgs",
    "gke_kubeconfig",
    "managed_flag",
]
