"""Workload opt-in: label namespaces `managed-mldiagnostics-gke=true` so the injection-webhook serves them.

A namespace the component creates is a `Namespace`; an existing one gets a `NamespacePatch` (server-side
apply owning only the opt-in label, so every other label on it stays as it is).
"""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from typing import Any

import pulumi
from pulumi_kubernetes.core import v1 as core
from pulumi_kubernetes.meta.v1 import ObjectMetaArgs, ObjectMetaPatchArgs

from ml_diagnostics import compat, docs, lifecycle, rules, verify_record
from ml_diagnostics.args import WorkloadNamespaceArgs, WorkloadOptInArgs
from ml_diagnostics.rules.in_cluster import WorkloadOptInSpec

OPT_IN = {compat.OPT_IN_LABEL: "true"}


class WorkloadOptIn(pulumi.ComponentResource):
    """Labels namespaces `managed-mldiagnostics-gke=true`, the injection-webhook's opt-in."""

    namespaces: pulumi.Output[list[str]]
    """The names of the labelled namespaces."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    def __init__(self, name: str, args: WorkloadOptInArgs, opts: pulumi.ResourceOptions | None = None):
        checked = rules.checked_args(
            WorkloadOptInSpec, args, component="WorkloadOptIn", name=name, owner="WorkloadOptInArgs"
        )
        super().__init__("mldiag:index:WorkloadOptIn", name, None, opts)
        namespaces = list(checked.get("namespaces") or [])
        self._resources: list[pulumi.CustomResource] = []
        for ns in namespaces:
            child = pulumi.ResourceOptions(parent=self)
            ns_name = ns["name"]
            if ns.get("create", False):
                res: pulumi.CustomResource = core.Namespace(
                    f"{name}-{ns_name}",
                    metadata=ObjectMetaArgs(name=ns_name, labels={**(ns.get("labels") or {}), **OPT_IN}),
                    # Adopted: what `kubectl create namespace` + `kubectl label namespace` made.
                    opts=pulumi.ResourceOptions.merge(
                        child, lifecycle.adopt_options(ns_name if ns.get("adopt", False) else None)
                    ),
                )
            else:
                res = core.NamespacePatch(
                    f"{name}-{ns_name}",
                    metadata=ObjectMetaPatchArgs(
                        name=ns_name,
                        labels=OPT_IN,
                        # The component owns this one label: take it over from kubectl label / other managers.
                        annotations={"pulumi.com/patchForce": "true"},
                    ),
                    opts=child,
                )
            self._resources.append(res)
        names = [ns["name"] for ns in namespaces]
        self.namespaces = pulumi.Output.from_input(names)
        self.verify_record = pulumi.Output.from_input(
            verify_record.record(inCluster={"workloadNamespaces": names})
        )
        self.register_outputs({verify_record.OUTPUT: self.verify_record, "namespaces": names})


docs.document(WorkloadOptIn, WorkloadOptInArgs)

__all__ = ["WorkloadNamespaceArgs", "WorkloadOptIn", "WorkloadOptInArgs"]
