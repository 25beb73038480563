"""Workload opt-in: label namespaces `managed-mldiagnostics-gke=true` so the injection-webhook serves them.

A namespace the target creates is a `Namespace`; an existing one gets a `NamespacePatch` (server-side apply
owning only the opt-in label, so every other label on it stays as it is).
"""

from __future__ import annotations

import pulumi
from pulumi_kubernetes.core import v1 as core
from pulumi_kubernetes.meta.v1 import ObjectMetaArgs, ObjectMetaPatchArgs

from components import compat, lifecycle
from components.targets.kubernetes import WorkloadNamespace

OPT_IN = {compat.OPT_IN_LABEL: "true"}


class WorkloadOptIn(pulumi.ComponentResource):
    resources: list[pulumi.CustomResource]

    def __init__(
        self, name: str, namespaces: list[WorkloadNamespace], opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("mldiag:index:WorkloadOptIn", name, None, opts)
        self.resources = []
        for ns in namespaces:
            child = pulumi.ResourceOptions(parent=self)
            if ns.create:
                res: pulumi.CustomResource = core.Namespace(
                    f"{name}-{ns.name}",
                    metadata=ObjectMetaArgs(name=ns.name, labels={**ns.labels, **OPT_IN}),
                    # Adopted: what `kubectl create namespace` + `kubectl label namespace` made.
                    opts=pulumi.ResourceOptions.merge(
                        child, lifecycle.adopt_options(ns.name if ns.adopt else None)
                    ),
                )
            else:
                res = core.NamespacePatch(
                    f"{name}-{ns.name}",
                    metadata=ObjectMetaPatchArgs(
                        name=ns.name,
                        labels=OPT_IN,
                        # The program owns this one label: take it over from kubectl label / other managers.
                        annotations={"pulumi.com/patchForce": "true"},
                    ),
                    opts=child,
                )
            self.resources.append(res)
        self.register_outputs({"namespaces": [ns.name for ns in namespaces]})
