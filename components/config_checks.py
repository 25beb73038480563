"""Checks across targets: one physical resource claimed twice, or two targets generating one resource name.

Each problem names both key paths (relative to the `ml-diagnostics:` namespace). Resource names follow the
components' scheme (`<kind prefix>-<target>-<part>`); only parts a user chooses (node pools, workload
namespaces) can make two different targets produce the same name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.config import StackConfig


def _claims(cfg: StackConfig) -> list[tuple[tuple[Any, ...], str, str]]:
    """(identity of the physical resource, what it is, key path) for everything a target manages."""
    out: list[tuple[tuple[Any, ...], str, str]] = []
    for i, t in enumerate(cfg.gke_clusters):
        what = f"GKE cluster {t.project}/{t.location}/{t.gke_name}"
        out.append((("gke", t.project, t.location, t.gke_name), what, f"gkeClusters[{i}]"))
    for i, t in enumerate(cfg.azure_ml):
        c = t.cluster
        ident = (
            "azureml",
            c.subscription_id.lower(),
            c.resource_group.lower(),
            c.kind,
            c.name.lower(),
            t.extension,
        )
        what = f"Azure ML extension {t.extension!r} on {c.kind} cluster {c.resource_group}/{c.name}"
        out.append((ident, what, f"azureMl[{i}]"))
    for i, t in enumerate(cfg.model_development_clusters):
        ident = ("mdc", t.project, t.region, t.model_development_cluster_id)
        what = f"Model Development Cluster {t.project}/{t.region}/{t.model_development_cluster_id}"
        out.append((ident, what, f"modelDevelopmentClusters[{i}]"))
    for i, t in enumerate(cfg.kubernetes_clusters):
        if t.context and t.kubeconfig is None:
            what = f"Kubernetes cluster of context {t.context!r}"
            out.append((("k8s-context", t.context), what, f"kubernetesClusters[{i}].context"))
    return out


def _generated_names(cfg: StackConfig) -> list[tuple[str, str]]:
    """(resource name, key path) of the resources whose names include a user-chosen part."""
    out: list[tuple[str, str]] = []
    for kind, prefix, targets in (
        ("gkeClusters", "gke", cfg.gke_clusters),
        ("kubernetesClusters", "k8s", cfg.kubernetes_clusters),
    ):
        for i, t in enumerate(targets):
            for j, ns in enumerate(t.workload_namespaces):
                name = f"{prefix}-{t.name}-mldiag-opt-in-{ns.name}"
                out.append((f"namespace:{name}", f"{kind}[{i}].workloadNamespaces[{j}].name"))
    for i, t in enumerate(cfg.gke_clusters):
        for j, pool in enumerate(t.node_pools):
            out.append((f"nodepool:gke-{t.name}-pool-{pool.name}", f"gkeClusters[{i}].nodePools[{j}].name"))
    return out


def cross_target_problems(cfg: StackConfig) -> list[str]:
    problems: list[str] = []
    owner: dict[tuple[Any, ...], str] = {}
    for ident, what, path in _claims(cfg):
        if ident in owner:
            problems.append(f"{path}: {what} is already managed by {owner[ident]}; one target per resource")
        else:
            owner[ident] = path
    names: dict[str, str] = {}
    for name, path in _generated_names(cfg):
        first = names.setdefault(name, path)
        if first != path and first.split("]")[0] != path.split("]")[0]:
            problems.append(
                f"{path}: generates the resource name {name.split(':', 1)[1]!r} that {first} generates too; "
                "rename one of the targets"
            )
    return problems
