"""The `inCluster` section of a record, rebuilt from a state from before `verifyRecord` (the kubernetesClusters
kind's components, and what GKE runs inside its cluster): from the resources' inputs, which say it exactly."""

from __future__ import annotations

from typing import Any

from ml_diagnostics import compat, verify_record
from program.verify.from_state import TOKEN, Resource

RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE_TYPES = ("kubernetes:core/v1:Namespace", "kubernetes:core/v1:NamespacePatch")
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"


def in_cluster_from(top: Resource, descendants: list[Resource]) -> dict[str, Any]:
    mine = [top, *descendants]
    releases = [
        {
            "release": r.inputs.get("name", ""),
            "namespace": r.inputs.get("namespace", "default"),
            "chartVersion": r.inputs.get("version") or "",
        }
        for r in mine
        if r.type == RELEASE and r.inputs.get("name")
    ]
    # In the order the components record them (the order they install in), whatever order the state keeps.
    order = [
        compat.CERT_MANAGER_RELEASE,
        compat.INJECTION_WEBHOOK_RELEASE,
        compat.CONNECTION_OPERATOR_RELEASE,
    ]
    releases.sort(
        key=lambda r: (order.index(r["release"]) if r["release"] in order else len(order), r["release"])
    )
    out: dict[str, Any] = {"releases": releases}
    manual_namespace = next(
        (
            r
            for r in mine
            if r.type == "kubernetes:core/v1:Namespace"
            and (r.inputs.get("metadata") or {}).get("name") == compat.MLDIAGNOSTICS_NAMESPACE
        ),
        None,
    )
    if any(r["release"] == compat.INJECTION_WEBHOOK_RELEASE for r in releases):
        out["webhook"] = True
        annotations = (
            ((manual_namespace.inputs.get("metadata") or {}).get("annotations") or {})
            if manual_namespace
            else {}
        )
        out["preinstalledCertManager"] = annotations.get(compat.CERT_MANAGER_ANNOTATION) == "preinstalled"
    by_urn = {r.urn: r for r in mine}
    opt_in = [
        (r.inputs.get("metadata") or {}).get("name")
        for r in mine
        if r.type in NAMESPACE_TYPES
        and r.parent in by_urn
        and by_urn[r.parent].type == f"{TOKEN}WorkloadOptIn"
    ]
    opt_in_component = next((r for r in mine if r.type == f"{TOKEN}WorkloadOptIn"), None)
    recorded = opt_in_component.outputs.get("namespaces") if opt_in_component is not None else None
    if isinstance(recorded, list) and sorted(recorded) == sorted(n for n in opt_in if n):
        opt_in = recorded  # its own outputs keep the config's order
    out["workloadNamespaces"] = [n for n in opt_in if n]
    daemon = next(
        (
            r
            for r in mine
            if r.type == DAEMON_SET and r.parent in by_urn and by_urn[r.parent].type == f"{TOKEN}Diagon"
        ),
        None,
    )
    if daemon is not None:
        containers = (((daemon.inputs.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
            "containers"
        ) or []
        namespace = (daemon.inputs.get("metadata") or {}).get("namespace")
        if containers and namespace:
            out["diagon"] = verify_record.diagon_record(namespace, containers[0].get("image", ""))
    return out
