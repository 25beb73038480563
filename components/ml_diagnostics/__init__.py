"""ml-diagnostics: Pulumi components for ML diagnostics and training infrastructure.

    from ml_diagnostics import ClusterMlDiagnostics, Diagon, WorkloadOptIn           # any Kubernetes cluster
    from ml_diagnostics import GkeCluster, KubernetesCluster                          # a whole cluster target
    from ml_diagnostics import AzureMlExtension                                       # extra: [azure]
    from ml_diagnostics import ModelDevelopmentCluster                                # extra: [gcp]

Every component takes a typed `*Args` TypedDict (pulumi.Input fields where a value may be an output;
`help(ml_diagnostics.GkeClusterArgs)` lists the keys) and exposes typed `pulumi.Output` attributes. Each
checks its whole Args before it creates anything: a bad one is an `InvalidArgsError` naming every problem.
Names resolve on first use, so `import ml_diagnostics` needs only the core dependencies; the Azure and
Google components need their extra installed. What is exported, and from where, is generated from the
modules' parts (`_exports.py`, ml_diagnostics/parts.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ml_diagnostics._exports import EXPORTS as _EXPORTS

__version__ = "0.2.0"

if TYPE_CHECKING:  # what mypy and IDEs see; at run time __getattr__ imports each on first use
    from ml_diagnostics._exports import *  # noqa: F403

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ml_diagnostics' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ml_diagnostics.{module}"), name)
    globals()[name] = value
    return value
