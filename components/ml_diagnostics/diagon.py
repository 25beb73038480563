"""The Diagon profiling daemon (preview): Namespace, ServiceAccount and the vendor's DaemonSet.

The DaemonSet is the vendor docs' `diagon-daemonset.yaml` field for field, plus: the image as an input (pull
policy `Always` only for `:latest`), node placement (GKE: accelerator-node affinity by default;
self-managed: none by default, as the manifest), a RollingUpdate strategy. The image is an input: changing
it is `pulumi up`, never a drifting `kubectl set image`. `adopt: True` imports what
`kubectl apply -f diagon-daemonset.yaml` made (`<namespace>/diagon-daemon`, the ServiceAccount and, with
create_namespace, the namespace), declared as that manifest has them.
"""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from typing import Any

import pulumi
from pulumi_kubernetes.apps import v1 as apps
from pulumi_kubernetes.core import v1 as core
from pulumi_kubernetes.meta.v1 import ObjectMetaArgsDict

from ml_diagnostics import compat, docs, lifecycle, verify_record
from ml_diagnostics.args import DiagonArgs
from ml_diagnostics.component import Component
from ml_diagnostics.parts import Part
from ml_diagnostics.rules.diagon import DiagonSpec

DAEMON_NAME = "diagon-daemon"
DAEMON_COMMAND = [
    "/mldiagnostics_extension_files/bin/mldiagnostics_extension",
    "-standalone=true",
    "-channel=hypercomputecluster.googleapis.com/diagnostics",
    "-alsologtostderr=true",
]
WORKLOAD_IDENTITY_ANNOTATION = "iam.gke.io/gcp-service-account"
DEFAULT_SERVICE_ACCOUNT = "diagon-daemon"
# Pod Security admission: a cluster whose default (or a namespace whose) level is baseline or restricted
# refuses a privileged hostNetwork pod. The namespace made here admits the daemon at every mode.
POD_SECURITY_LABELS = {
    f"pod-security.kubernetes.io/{mode}": "privileged" for mode in ("enforce", "audit", "warn")
}


def node_labels(args: DiagonArgs) -> list[str]:
    """The labels of the nodes Diagon runs on (any of them); empty: every node, like the vendor manifest."""
    labels = args.get("accelerator_node_labels")
    if labels is not None:
        return list(labels)
    if args.get("self_managed", False) or args.get("adopt", False):
        return []
    return list(compat.ACCELERATOR_NODE_LABELS)


def node_placement(args: DiagonArgs) -> dict[str, Any]:
    """Pod spec fields that choose the nodes: an explicit nodeSelector, else node-label affinity.

    GKE defaults to its accelerator labels (GKE sets them on every GPU/TPU node). Self-managed clusters
    default to no node selection, as the vendor manifest: their GPU nodes often carry none of those labels,
    and an affinity nothing matches would run the daemon nowhere."""
    selector = args.get("node_selector")
    if selector is not None:
        return {"node_selector": dict(selector)}
    labels = node_labels(args)
    if not labels:
        return {}
    terms: list[core.NodeSelectorTermArgsDict] = [
        {"match_expressions": [{"key": k, "operator": "Exists"}]} for k in labels
    ]
    affinity: core.AffinityArgsDict = {
        "node_affinity": {
            "required_during_scheduling_ignored_during_execution": {"node_selector_terms": terms}
        }
    }
    return {"affinity": affinity}


def _max_unavailable(value: Any) -> int | str:
    # A count goes to the API as a number, a percentage as a string (IntOrString).
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return value


def _pull_policy(image: pulumi.Input[str]) -> pulumi.Input[str]:
    if isinstance(image, str):
        return compat.image_pull_policy(image)
    return pulumi.Output.from_input(image).apply(compat.image_pull_policy)  # type: ignore[arg-type]


class Diagon(Component[DiagonSpec]):
    """The Diagon profiling daemon (preview): its Namespace, ServiceAccount and DaemonSet."""

    namespace: pulumi.Output[str]
    """The daemon's namespace."""
    image: pulumi.Output[str]
    """The daemon image."""
    daemon_set: pulumi.Output[str]
    """The DaemonSet's name (diagon-daemon)."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:Diagon"
    _SPEC = DiagonSpec

    def __init__(self, name: str, args: DiagonArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, args, opts)

    def _build(self, name: str, spec: DiagonSpec, **_: Any) -> None:
        diagon = {"diagon": verify_record.diagon_record(spec.namespace, spec.image)} if spec.enabled else {}
        record = verify_record.record(inCluster=diagon)
        self._known(namespace=spec.namespace, image=spec.image, daemon_set=DAEMON_NAME, verify_record=record)
        if not spec.enabled:
            self.register_outputs({verify_record.OUTPUT: record, "enabled": False})
            return
        namespace = self._make_namespace(name, spec)
        self._service_account = self._make_service_account(name, spec, namespace)
        self._daemon_set = self._make_daemon_set(name, spec, namespace)
        self.register_outputs(
            {
                verify_record.OUTPUT: record,
                "namespace": spec.namespace,
                "image": spec.image,
                "daemonSet": DAEMON_NAME,
            }
        )

    def _labels(self, spec: DiagonSpec) -> dict[str, str] | None:
        # Adopted: the namespace and ServiceAccount made by kubectl carry no labels of ours.
        return None if spec.adopt else {"app.kubernetes.io/part-of": "diagon"}

    def _adopted(self, spec: DiagonSpec, import_id: str) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, import_=import_id if spec.adopt else None)

    def _make_namespace(self, name: str, spec: DiagonSpec) -> pulumi.Input[str]:
        """The daemon's namespace (created here unless `create_namespace: false`), admitting privileged pods."""
        self._namespace: core.Namespace | None = None
        if not spec.create_namespace:
            return spec.namespace
        self._namespace = core.Namespace(
            f"{name}-namespace",
            metadata={
                "name": spec.namespace,
                "labels": {**(self._labels(spec) or {}), **POD_SECURITY_LABELS},
            },
            opts=self._adopted(spec, spec.namespace),
        )
        return self._namespace.metadata.name

    def _make_service_account(
        self, name: str, spec: DiagonSpec, namespace: pulumi.Input[str]
    ) -> core.ServiceAccount:
        """The daemon's ServiceAccount, bound to a Google service account by Workload Identity when given."""
        metadata: ObjectMetaArgsDict = {"name": spec.service_account, "namespace": namespace}
        if spec.gcp_service_account:
            metadata["annotations"] = {WORKLOAD_IDENTITY_ANNOTATION: spec.gcp_service_account}
        labels = self._labels(spec)
        if labels is not None:
            metadata["labels"] = labels
        return core.ServiceAccount(
            f"{name}-service-account",
            metadata=metadata,
            opts=self._adopted(spec, lifecycle.k8s_id(spec.namespace, spec.service_account)),
        )

    def _make_daemon_set(self, name: str, spec: DiagonSpec, namespace: pulumi.Input[str]) -> apps.DaemonSet:
        """The vendor's DaemonSet, with the image, placement and update strategy of the Spec."""
        pod_labels = {"name": DAEMON_NAME}
        pod: core.PodSpecArgsDict = {
            "host_network": True,
            "dns_policy": "ClusterFirstWithHostNet",
            # The plain name, not the ServiceAccount's output: the DaemonSet controller retries pod creation
            # until the account exists, so the two deploy in parallel (one step less).
            "service_account_name": spec.service_account,
            "termination_grace_period_seconds": 30,
            "tolerations": [
                {"operator": "Exists", "effect": "NoSchedule"},
                {"operator": "Exists", "effect": "NoExecute"},
            ],
            "containers": [
                {
                    "name": DAEMON_NAME,
                    "image": spec.image,
                    "image_pull_policy": _pull_policy(spec.image),
                    "command": DAEMON_COMMAND,
                    "security_context": {"privileged": True},
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "32Mi"},
                        "limits": {"memory": "256Mi"},  # no CPU limit
                    },
                }
            ],
        }
        placement = _placement(spec)
        if "node_selector" in placement:
            pod["node_selector"] = placement["node_selector"]
        if "affinity" in placement:
            pod["affinity"] = placement["affinity"]
        return apps.DaemonSet(
            f"{name}-daemonset",
            metadata={
                "name": DAEMON_NAME,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/name": DAEMON_NAME, "app.kubernetes.io/part-of": "diagon"},
            },
            spec={
                "selector": {"match_labels": pod_labels},
                "update_strategy": {
                    "type": "RollingUpdate",
                    "rolling_update": {"max_unavailable": _max_unavailable(spec.max_unavailable)},
                },
                "template": {"metadata": {"labels": pod_labels}, "spec": pod},
            },
            opts=self._adopted(spec, lifecycle.k8s_id(spec.namespace, DAEMON_NAME)),
        )


def _placement(spec: DiagonSpec) -> dict[str, Any]:
    placement: dict[str, Any] = {"self_managed": spec.self_managed, "adopt": spec.adopt}
    if spec.accelerator_node_labels is not None:
        placement["accelerator_node_labels"] = spec.accelerator_node_labels
    if spec.node_selector is not None:
        placement["node_selector"] = spec.node_selector
    return node_placement(placement)  # type: ignore[arg-type]


docs.document(Diagon, DiagonArgs)

PART = Part(
    order=40,
    component="Diagon",
    spec=DiagonSpec,
    exports=("Diagon", "DiagonArgs"),
    readme=("`Diagon`, `WorkloadOptIn`", "the Diagon DaemonSet alone; the namespace opt-in alone"),
)


__all__ = ["Diagon", "DiagonArgs", "node_labels", "node_placement"]
