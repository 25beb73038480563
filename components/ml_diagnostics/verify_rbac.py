"""The read-only RBAC role of verify (`mldiag verify`; optional: `verify_rbac`).

`verify_rules` derives, from the in-cluster settings and the resolved mode, exactly the reads the checks
make: `get` on the workload namespaces (by name); in manual mode `list` of MutatingWebhookConfigurations
and, in the release namespaces, `list` of Deployments and of Secrets (Helm keeps its release records
there: this grant reads chart values too, like `helm status` does); for Diagon `get` of its DaemonSet,
`list` of pods, `get` of their logs, `list` of events (pods refused by admission) and `get` of the Diagon
namespace (its Pod Security level). `azure_verify_rules` does the same for the Azure ML extension's checks.
Cluster-wide rules go to one ClusterRole, the rest to one Role per namespace, each with its binding to the
configured subjects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
from pulumi_kubernetes.meta.v1 import ObjectMetaArgs
from pulumi_kubernetes.rbac import v1 as rbac

from ml_diagnostics import compat
from ml_diagnostics.diagon import DAEMON_NAME
from ml_diagnostics.in_cluster import InClusterArgs, MlDiagnosticsMode, VerifyRbacArgs
from ml_diagnostics.parts import Part
from ml_diagnostics.rules.verify_rbac import VerifyRbacSpec

DEFAULT_NAME = "ml-diagnostics-verify"

RBAC_GROUP = "rbac.authorization.k8s.io"
LABELS = {"app.kubernetes.io/part-of": "ml-diagnostics", "app.kubernetes.io/component": "verify"}

Rule = dict[str, list[str]]


def verify_rules(
    args: InClusterArgs, mode: MlDiagnosticsMode | str
) -> tuple[list[Rule], dict[str, list[Rule]]]:
    """(ClusterRole rules, namespace -> Role rules) for the checks verify runs on this cluster."""
    cluster: list[Rule] = []
    namespaced: dict[str, list[Rule]] = {}
    diagon = args.get("diagon")
    diagon_ns = diagon.get("namespace", compat.DIAGON_DEFAULT_NAMESPACE) if diagon is not None else None
    # the workload namespaces' opt-in labels, and the Diagon namespace's Pod Security level
    names = sorted(
        {ns["name"] for ns in args.get("workload_namespaces") or []} | ({diagon_ns} if diagon_ns else set())
    )
    if names:
        cluster.append(
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"], "resourceNames": names}
        )
    if MlDiagnosticsMode(mode) is MlDiagnosticsMode.MANUAL:
        cluster.append(
            {
                "apiGroups": ["admissionregistration.k8s.io"],
                "resources": ["mutatingwebhookconfigurations"],
                "verbs": ["list"],
            }
        )
        deployments = {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]}
        releases = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}
        cert_manager = (
            [deployments, releases]
            if (args.get("cert_manager") or {}).get("enabled", True)
            else [deployments]
        )
        namespaced[compat.CERT_MANAGER_NAMESPACE] = cert_manager
        namespaced[compat.MLDIAGNOSTICS_NAMESPACE] = [deployments, releases]
    if diagon_ns is not None:
        # each node the DaemonSet selects without a ready pod is named with its Ready condition
        cluster.append({"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]})
        namespaced.setdefault(diagon_ns, []).extend(
            [
                {
                    "apiGroups": ["apps"],
                    "resources": ["daemonsets"],
                    "verbs": ["get"],
                    "resourceNames": [DAEMON_NAME],
                },
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},  # pods refused by admission
            ]
        )
    return cluster, namespaced


AZUREML_NAMESPACE = "azureml"
AZUREML_HEALTHCHECK_CONFIGMAP = "arcml-healthcheck"
# CRDs whose Helm owner tells whether the extension installed them or another release did (a clash)
AZUREML_CLASH_CRDS = {
    "prometheus": "prometheuses.monitoring.coreos.com",
    "volcano": "jobs.batch.volcano.sh",
}


def azure_verify_rules(*, ingress_classes: bool) -> tuple[list[Rule], dict[str, list[Rule]]]:
    """(ClusterRole rules, namespace -> Role rules) for verify's in-cluster checks of an Azure ML extension:
    `get` of the azureml namespace (terminating?) and of the CRDs that reveal a clash, `list` of
    IngressClasses (AKS, where the extension brings its nginx controller), and in azureml `get` of the
    health check report (configmap arcml-healthcheck) and `list` of the extension's pods."""
    cluster: list[Rule] = [
        {
            "apiGroups": [""],
            "resources": ["namespaces"],
            "verbs": ["get"],
            "resourceNames": [AZUREML_NAMESPACE],
        },
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["get"],
            "resourceNames": sorted(AZUREML_CLASH_CRDS.values()),
        },
    ]
    if ingress_classes:
        cluster.append(
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses"], "verbs": ["list"]}
        )
    namespaced = {
        AZUREML_NAMESPACE: [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "verbs": ["get"],
                "resourceNames": [AZUREML_HEALTHCHECK_CONFIGMAP],
            },
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        ]
    }
    return cluster, namespaced


def _rules(rules: list[Rule]) -> list[rbac.PolicyRuleArgs]:
    return [
        rbac.PolicyRuleArgs(
            api_groups=r["apiGroups"],
            resources=r["resources"],
            verbs=r["verbs"],
            resource_names=r.get("resourceNames"),
        )
        for r in rules
    ]


class VerifyRbac(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        args: VerifyRbacArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        in_cluster: InClusterArgs | None = None,
        mode: MlDiagnosticsMode | str | None = None,
        rules: tuple[list[Rule], dict[str, list[Rule]]] | None = None,
        after: Sequence[pulumi.Resource] = (),
    ):
        """`in_cluster`, `mode`: what verify checks on this cluster (the rules follow them); or `rules` as
        given (`azure_verify_rules`). `after`: what creates the namespaces the Roles go to (cert-manager,
        manual install, Diagon, the Azure ML extension)."""
        super().__init__("mldiag:index:VerifyRbac", name, None, opts)
        rb_name = args.get("name", DEFAULT_NAME)
        subjects: list[Any] = [
            rbac.SubjectArgs(
                kind=s["kind"],
                name=s["name"],
                namespace=s.get("namespace"),
                api_group=None if s["kind"] == "ServiceAccount" else RBAC_GROUP,
            )
            for s in args["subjects"]
        ]
        if rules is None:
            if in_cluster is None or mode is None:
                raise ValueError("VerifyRbac needs in_cluster and mode, or rules")
            rules = verify_rules(in_cluster, mode)
        cluster_rules, namespaced = rules
        child = pulumi.ResourceOptions(parent=self)
        if cluster_rules:
            role = rbac.ClusterRole(
                f"{name}-cluster-role",
                metadata=ObjectMetaArgs(name=rb_name, labels=LABELS),
                rules=_rules(cluster_rules),
                opts=child,
            )
            rbac.ClusterRoleBinding(
                f"{name}-cluster-binding",
                metadata=ObjectMetaArgs(name=rb_name, labels=LABELS),
                role_ref=rbac.RoleRefArgs(api_group=RBAC_GROUP, kind="ClusterRole", name=role.metadata.name),
                subjects=subjects,
                opts=child,
            )
        waits = pulumi.ResourceOptions(parent=self, depends_on=list(after))
        for ns, ns_rules in sorted(namespaced.items()):
            ns_role = rbac.Role(
                f"{name}-role-{ns}",
                metadata=ObjectMetaArgs(name=rb_name, namespace=ns, labels=LABELS),
                rules=_rules(ns_rules),
                opts=waits,
            )
            rbac.RoleBinding(
                f"{name}-binding-{ns}",
                metadata=ObjectMetaArgs(name=rb_name, namespace=ns, labels=LABELS),
                role_ref=rbac.RoleRefArgs(api_group=RBAC_GROUP, kind="Role", name=ns_role.metadata.name),
                subjects=subjects,
                opts=waits,
            )
        self.register_outputs({"name": rb_name, "namespaces": sorted(namespaced)})


PART = Part(
    order=50, component="VerifyRbac", spec=VerifyRbacSpec, exports=("VerifyRbacArgs", "RbacSubjectArgs")
)
