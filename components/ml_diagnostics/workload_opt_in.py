"""Workload opt-in: label namespaces `managed-mldiagnostics-gke=true` so the injection-webhook serves them.

A namespace the component creates is a `Namespace`; an existing one gets a `NamespacePatch` (server-side
apply owning only the opt-in label, so every other label on it stays as it is).
"""

# No `from __future__ import annotations`: the component plugin infers its schema from these annotations.
from typing import Any

import pulumi
from pulumi_kubernetes.core import v1 as core

from ml_diagnostics import compat, docs, verify_record
from ml_diagnostics.args import WorkloadNamespaceArgs, WorkloadOptInArgs
from ml_diagnostics.component import Component
from ml_diagnostics.parts import Part
from ml_diagnostics.rules.in_cluster import WorkloadNamespaceSpec, WorkloadOptInSpec

OPT_IN = {compat.OPT_IN_LABEL: "true"}


class WorkloadOptIn(Component[WorkloadOptInSpec]):
    """Labels namespaces `managed-mldiagnostics-gke=true`, the injection-webhook's opt-in."""

    namespaces: pulumi.Output[list[str]]
    """The names of the labelled namespaces."""
    verify_record: pulumi.Output[dict[str, Any]]
    """What `mldiag verify` checks, for a check from the stack's state (ml_diagnostics.verify_record)."""

    _TYPE = "mldiag:index:WorkloadOptIn"
    _SPEC = WorkloadOptInSpec

    def __init__(self, name: str, args: WorkloadOptInArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, args, opts)

    def _build(self, name: str, spec: WorkloadOptInSpec, **_: Any) -> None:
        self._resources: list[pulumi.CustomResource] = [self._opt_in(name, ns) for ns in spec.namespaces]
        names = [ns.name for ns in spec.namespaces]
        record = verify_record.record(inCluster={"workloadNamespaces": names})
        self._known(namespaces=names, verify_record=record)
        self.register_outputs({verify_record.OUTPUT: record, "namespaces": names})

    def _opt_in(self, name: str, ns: WorkloadNamespaceSpec) -> pulumi.CustomResource:
        """A namespace created here with the label, or the label alone patched onto an existing one."""
        if ns.create:
            return core.Namespace(
                f"{name}-{ns.name}",
                metadata={"name": ns.name, "labels": {**ns.labels, **OPT_IN}},
                # Adopted: what `kubectl create namespace` + `kubectl label namespace` made.
                opts=pulumi.ResourceOptions(parent=self, import_=ns.name if ns.adopt else None),
            )
        return core.NamespacePatch(
            f"{name}-{ns.name}",
            metadata={
                "name": ns.name,
                "labels": OPT_IN,
                # The component owns this one label: take it over from kubectl label / other managers.
                "annotations": {"pulumi.com/patchForce": "true"},
            },
            opts=pulumi.ResourceOptions(parent=self),
        )


docs.document(WorkloadOptIn, WorkloadOptInArgs)

PART = Part(
    order=10,
    component="WorkloadOptIn",
    spec=WorkloadOptInSpec,
    exports=("WorkloadOptIn", "WorkloadOptInArgs", "WorkloadNamespaceArgs"),
)


__all__ = ["WorkloadNamespaceArgs", "WorkloadOptIn", "WorkloadOptInArgs"]
