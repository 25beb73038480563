"""Sizing preflight of an `azureMl` target, by the stack's environment (prod: the production rows, dev and
staging: the test rows of the extension's "total minimum system resources" table, reference-kubernetes.md,
Recommended resource planning; compat.AZUREML_SIZING). Node counts always; node sizes when `cluster.vmSize`
or `cluster.nodeResources` says them. The VM size table is the one the policy pack's aks-node-size-minimum
reads (compat.AZURE_VM_SIZES)."""

from __future__ import annotations

from ml_diagnostics import compat
from program.kinds.azure_ml.model import AzureMlTarget

SOURCE = "reference-kubernetes.md, Recommended resource planning"


def sizing_problems(t: AzureMlTarget, environment: str) -> list[tuple[str, str]]:
    purpose = "production" if environment == "prod" else "test"
    row = compat.azureml_sizing(purpose, t.training, t.inference.enabled)
    if row is None:
        return []  # neither training nor inference: the model refuses that itself
    c = t.cluster
    need = f"{row.nodes} node(s) of at least {row.vcpus:g} vCPU / {row.memory_gib:g} GiB (e.g. {row.example})"
    why = f"{purpose} {row.workload} on the Azure ML extension needs {need}; {SOURCE}"
    problems: list[tuple[str, str]] = []
    if c.node_count < row.nodes:
        problems.append(("cluster.nodeCount", f"{c.node_count} node(s): {why}"))
    if c.node_resources is not None:
        spec, path = (c.node_resources.vcpus, c.node_resources.memory_gib), "cluster.nodeResources"
    elif c.vm_size is not None:
        found = compat.azure_vm_size(c.vm_size)
        if found is None:
            return [
                *problems,
                (
                    "cluster.vmSize",
                    f"{compat.quote(c.vm_size)} is not in the built-in VM size table; give cluster.nodeResources "
                    "{vcpus, memoryGiB} for it (or remove vmSize to skip the size check)",
                ),
            ]
        spec, path = (found[0], found[1]), "cluster.vmSize"
    else:
        return problems
    if spec[0] < row.vcpus or spec[1] < row.memory_gib:
        problems.append((path, f"{spec[0]:g} vCPU / {spec[1]:g} GiB per node: {why}"))
    return problems
