"""Normalisation: every type-token spelling and resource form a program may use for an object the rules
check is mapped to one checked shape, a canonical type token plus the object's wire-format properties.

- API versions in the token: `azure-native:kubernetesconfiguration/v20230501:Extension` is the Extension;
  `kubernetes:apps/v1beta2:DaemonSet` is the DaemonSet.
- Patches (`...Patch`) keep their `Patch` suffix: absent fields are unchanged, not missing (`is_patch`).
- Helm v4 `Chart` takes the same chart/version/repositoryOpts/values inputs as the v3 `Release`.
- Manifest groups (`kubernetes:yaml/v2:ConfigGroup` `objs` and `yaml`, `kubernetes:yaml/v2:ConfigFile`
  read from its `file` when it can be read) yield one object per Kubernetes document in them.

`FORMS` lists every supported spelling; tests/test_forms.py in this pack checks it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .values import is_unknown

# kind -> canonical token (Kubernetes kinds: any group version of the kind is the same object to the rules)
K8S_KINDS = {
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "ReplicaSet": "kubernetes:apps/v1:ReplicaSet",
    "Job": "kubernetes:batch/v1:Job",
    "CronJob": "kubernetes:batch/v1:CronJob",
    "Pod": "kubernetes:core/v1:Pod",
    "Namespace": "kubernetes:core/v1:Namespace",
    # the workloads the ML Diagnostics webhook serves (opt-in label)
    "JobSet": "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
    "LeaderWorkerSet": "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
    "RayJob": "kubernetes:ray.io/v1:RayJob",
}
RELEASE = "kubernetes:helm.sh/v3:Release"
EXTENSION = "azure-native:kubernetesconfiguration:Extension"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"

_K8S = re.compile(
    r"kubernetes:(?P<group>[a-z0-9.-]+)/(?P<version>v\d+(?:(?:alpha|beta)\d+)?):(?P<kind>[A-Za-z]+)"
)
_AZURE = re.compile(r"azure-native:(?P<module>[a-zA-Z]+)(?:/v\d{8}(?:preview)?)?:(?P<kind>[A-Za-z]+)")
_AZURE_KINDS = {
    ("kubernetesconfiguration", "Extension"): EXTENSION,
    ("containerservice", "ManagedCluster"): MANAGED_CLUSTER,
    ("containerservice", "AgentPool"): AGENT_POOL,
}
MANIFEST_GROUPS = ("kubernetes:yaml/v2:ConfigGroup", "kubernetes:yaml/v2:ConfigFile")

# Supported spellings, as (example token, canonical token, what is checked); tests walk this list.
FORMS: tuple[tuple[str, str, str], ...] = (
    *((tok, tok, "whole object") for tok in K8S_KINDS.values()),
    *((tok + "Patch", tok + "Patch", "patch: absent fields unchanged") for tok in K8S_KINDS.values()),
    ("kubernetes:apps/v1beta2:DaemonSet", K8S_KINDS["DaemonSet"], "whole object, older API version"),
    ("kubernetes:extensions/v1beta1:DaemonSet", K8S_KINDS["DaemonSet"], "whole object, older API version"),
    ("kubernetes:yaml/v2:ConfigGroup", "<each document's kind>", "objs and yaml documents"),
    ("kubernetes:yaml/v2:ConfigFile", "<each document's kind>", "the file's documents"),
    (RELEASE, RELEASE, "Helm release"),
    ("kubernetes:helm.sh/v4:Chart", RELEASE, "Helm v4 chart, same inputs"),
    (EXTENSION, EXTENSION, "cluster extension"),
    ("azure-native:kubernetesconfiguration/v20230501:Extension", EXTENSION, "API-versioned token"),
    ("azure-native:kubernetesconfiguration/v20220402preview:Extension", EXTENSION, "API-versioned token"),
    (MANAGED_CLUSTER, MANAGED_CLUSTER, "AKS cluster"),
    ("azure-native:containerservice/v20240801:ManagedCluster", MANAGED_CLUSTER, "API-versioned token"),
    (AGENT_POOL, AGENT_POOL, "AKS node pool"),
    ("azure-native:containerservice/v20240801:AgentPool", AGENT_POOL, "API-versioned token"),
)


@dataclass(frozen=True)
class Form:
    type: str  # canonical token
    props: Any
    where: str  # "" for the resource itself, else where in a manifest group the object sits


@lru_cache(maxsize=4096)
def canonical(token: str) -> str:
    """The canonical token of a single-object spelling (unchanged when the pack has no rule for it)."""
    m = _K8S.fullmatch(token)
    if m:
        kind, group = m.group("kind"), m.group("group")
        if group == "helm.sh" and kind in ("Release", "Chart"):
            return RELEASE
        patch = kind.endswith("Patch") and kind.removesuffix("Patch") in K8S_KINDS
        base = kind.removesuffix("Patch") if patch else kind
        if base in K8S_KINDS:
            return K8S_KINDS[base] + ("Patch" if patch else "")
        return token
    m = _AZURE.fullmatch(token)
    if m:
        return _AZURE_KINDS.get((m.group("module"), m.group("kind")), token)
    return token


def may_hold(token: str, types: Collection[str]) -> bool:
    """Whether a resource declared as `token` can hold an object of one of the canonical `types`."""
    return token in MANIFEST_GROUPS or canonical(token) in types


def is_patch(token: str) -> bool:
    return token.startswith("kubernetes:") and token.endswith("Patch")


def _documents(props: dict) -> tuple[list[tuple[str, Any]], list[str]]:
    """(where, object) for every document of a manifest group; and the input paths that could not be read."""
    docs: list[tuple[str, Any]] = []
    unread: list[str] = []
    objs = props.get("objs")
    if is_unknown(objs):
        unread.append("objs")
    elif isinstance(objs, list):
        docs += [(f"objs[{i}]", o) for i, o in enumerate(objs)]
    texts = props.get("yaml")
    if is_unknown(texts):
        unread.append("yaml")
    else:
        for i, text in enumerate(texts if isinstance(texts, list) else [texts] if texts else []):
            if not isinstance(text, str):
                unread.append(f"yaml[{i}] (not a string)")
                continue
            try:
                docs += [(f"yaml[{i}] document {j}", d) for j, d in enumerate(yaml.safe_load_all(text)) if d]
            except (yaml.YAMLError, TypeError):
                unread.append(f"yaml[{i}] (not YAML)")
    files = props.get("files") or ([props["file"]] if props.get("file") else [])
    for i, f in enumerate(files if isinstance(files, list) else [files]):
        try:
            text = Path(f).read_text()
            docs += [(f"{f} document {j}", d) for j, d in enumerate(yaml.safe_load_all(text)) if d]
        except (OSError, TypeError, ValueError, AttributeError, yaml.YAMLError):
            unread.append(f"files[{i}] ({f})")
    return docs, unread


def expand(token: str, props: Any) -> tuple[list[Form], list[str]]:
    """Every object the rules can check in one resource, in its canonical shape; plus what could not be read."""
    if token in MANIFEST_GROUPS:
        docs, unread = _documents(props if isinstance(props, dict) else {})
        out = []
        for where, doc in docs:
            kind = doc.get("kind") if isinstance(doc, dict) else None
            if isinstance(kind, str) and kind in K8S_KINDS:
                out.append(Form(K8S_KINDS[kind], doc, where))
        return out, unread
    return [Form(canonical(token), props, "")], []
