"""The Diagon profiling daemon (preview): Namespace, ServiceAccount and the vendor's DaemonSet.

The DaemonSet is the seed's `diagon-daemonset.yaml` field for field, plus: image from config (pull policy
`Always` only for `:latest`), node placement (GKE: accelerator-node affinity by default; self-managed: none
by default, as the manifest), a RollingUpdate strategy. The image is
config: changing it is a config change and `pulumi up` (the docs' `kubectl set image` would drift).
`adopt: true` imports what `kubectl apply -f diagon-daemonset.yaml` made (`<namespace>/diagon-daemon`, the
ServiceAccount and, with createNamespace, the namespace), declared as that manifest has them.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_kubernetes.apps import v1 as apps
from pulumi_kubernetes.core import v1 as core
from pulumi_kubernetes.meta.v1 import LabelSelectorArgs, ObjectMetaArgs

from components import compat, lifecycle
from components.targets.kubernetes import DiagonSettings

DAEMON_NAME = "diagon-daemon"
DAEMON_COMMAND = [
    "/mldiagnostics_extension_files/bin/mldiagnostics_extension",
    "-standalone=true",
    "-channel=hypercomputecluster.googleapis.com/diagnostics",
    "-alsologtostderr=true",
]
WORKLOAD_IDENTITY_ANNOTATION = "iam.gke.io/gcp-service-account"


def node_placement(settings: DiagonSettings, self_managed: bool) -> dict[str, Any]:
    """Pod spec fields that choose the nodes: an explicit nodeSelector, else node-label affinity.

    GKE defaults to its accelerator labels (GKE sets them on every GPU/TPU node). Self-managed clusters
    default to no node selection, as the vendor manifest: their GPU nodes often carry none of those labels,
    and an affinity nothing matches would run the daemon nowhere."""
    if settings.node_selector is not None:
        return {"node_selector": dict(settings.node_selector)}
    labels = settings.node_labels(self_managed)
    if not labels:
        return {}
    terms = [
        core.NodeSelectorTermArgs(
            match_expressions=[core.NodeSelectorRequirementArgs(key=k, operator="Exists")]
        )
        for k in labels
    ]
    return {
        "affinity": core.AffinityArgs(
            node_affinity=core.NodeAffinityArgs(
                required_during_scheduling_ignored_during_execution=core.NodeSelectorArgs(
                    node_selector_terms=terms
                )
            )
        )
    }


class Diagon(pulumi.ComponentResource):
    namespace: core.Namespace | None
    service_account: core.ServiceAccount
    daemon_set: apps.DaemonSet

    def __init__(
        self,
        name: str,
        settings: DiagonSettings,
        opts: pulumi.ResourceOptions | None = None,
        *,
        self_managed: bool = False,
    ):
        super().__init__("mldiag:index:Diagon", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        adopt = settings.adopt
        # Adopted: the namespace and ServiceAccount made by kubectl carry no labels of ours.
        part_of = None if adopt else {"app.kubernetes.io/part-of": "diagon"}
        self.namespace = None
        namespace: pulumi.Input[str] = settings.namespace
        if settings.create_namespace:
            self.namespace = core.Namespace(
                f"{name}-namespace",
                metadata=ObjectMetaArgs(name=settings.namespace, labels=part_of),
                opts=pulumi.ResourceOptions.merge(
                    child, lifecycle.adopt_options(settings.namespace if adopt else None)
                ),
            )
            namespace = self.namespace.metadata.name
        annotations = (
            {WORKLOAD_IDENTITY_ANNOTATION: settings.gcp_service_account}
            if settings.gcp_service_account
            else None
        )
        self.service_account = core.ServiceAccount(
            f"{name}-service-account",
            metadata=ObjectMetaArgs(
                name=settings.service_account,
                namespace=namespace,
                annotations=annotations,
                labels=part_of,
            ),
            opts=pulumi.ResourceOptions.merge(
                child,
                lifecycle.adopt_options(
                    lifecycle.k8s_id(settings.namespace, settings.service_account) if adopt else None
                ),
            ),
        )
        pod_labels = {"name": DAEMON_NAME}
        self.daemon_set = apps.DaemonSet(
            f"{name}-daemonset",
            metadata=ObjectMetaArgs(
                name=DAEMON_NAME,
                namespace=namespace,
                labels={"app.kubernetes.io/name": DAEMON_NAME, "app.kubernetes.io/part-of": "diagon"},
            ),
            spec=apps.DaemonSetSpecArgs(
                selector=LabelSelectorArgs(match_labels=pod_labels),
                update_strategy=apps.DaemonSetUpdateStrategyArgs(
                    type="RollingUpdate",
                    rolling_update=apps.RollingUpdateDaemonSetArgs(max_unavailable=settings.max_unavailable),
                ),
                template=core.PodTemplateSpecArgs(
                    metadata=ObjectMetaArgs(labels=pod_labels),
                    spec=core.PodSpecArgs(
                        host_network=True,
                        dns_policy="ClusterFirstWithHostNet",
                        # The plain name, not the ServiceAccount's output: the DaemonSet controller retries
                        # pod creation until the account exists, so the two deploy in parallel (one step less).
                        service_account_name=settings.service_account,
                        termination_grace_period_seconds=30,
                        tolerations=[
                            core.TolerationArgs(operator="Exists", effect="NoSchedule"),
                            core.TolerationArgs(operator="Exists", effect="NoExecute"),
                        ],
                        containers=[
                            core.ContainerArgs(
                                name=DAEMON_NAME,
                                image=settings.image,
                                image_pull_policy=compat.image_pull_policy(settings.image),
                                command=DAEMON_COMMAND,
                                security_context=core.SecurityContextArgs(privileged=True),
                                resources=core.ResourceRequirementsArgs(
                                    requests={"cpu": "10m", "memory": "32Mi"},
                                    limits={"memory": "256Mi"},  # no CPU limit
                                ),
                            )
                        ],
                        **node_placement(settings, self_managed),
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions.merge(
                child,
                lifecycle.adopt_options(lifecycle.k8s_id(settings.namespace, DAEMON_NAME) if adopt else None),
            ),
        )
        self.register_outputs(
            {"namespace": settings.namespace, "image": settings.image, "daemonSet": DAEMON_NAME}
        )
