"""What forces a replacement: the providers' force-new fields and our dynamic providers' own `diff`.

"replace" is reported only where the provider's rules make it certain (Kubernetes force-new fields,
Helm release name/namespace, ARM path parameters, the force-new fields our dynamic providers declare);
any other input change is an "update". Rule paths use `.` for keys and `[*]` for any list index; a rule
fires when the value at the path differs.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import pkgutil
import re
from collections.abc import Iterable, Sequence
from typing import Any

from mldiag.diff.inputs import MISSING, join, under

_K8S_METADATA = ("metadata.name", "metadata.namespace")
_LABEL_SELECTOR = ("spec.selector",)
# pulumi-kubernetes provider/pkg/provider/diff.go (forceNewProperties), keyed by "group/version:Kind".
_K8S_FORCE_NEW: dict[str, tuple[str, ...]] = {
    "apps/v1:DaemonSet": _LABEL_SELECTOR,
    "apps/v1:Deployment": _LABEL_SELECTOR,
    "apps/v1:StatefulSet": (
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.selector",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    "batch/v1:Job": ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    "core/v1:ConfigMap": ("binaryData", "data"),
    "core/v1:Secret": ("type", "stringData", "data"),
    "core/v1:Service": ("spec.clusterIP",),
    "core/v1:PersistentVolumeClaim": ("spec",),
    "core/v1:ResourceQuota": ("spec.scopes",),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),
    "rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
    "storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
}


def _force_new_by_type() -> dict[str, tuple[str, ...]]:
    """Other providers' force-new input paths by exact type token: each kind's entry declares those of the
    resources it makes (program/kinds/<kind>/__init__.py `force_new`)."""
    from program.kinds.table import KINDS

    out: dict[str, tuple[str, ...]] = {}
    for kind in KINDS:
        out.update(kind.force_new)
    return out


FORCE_NEW_BY_TYPE: dict[str, tuple[str, ...]] = _force_new_by_type()

# Module-level names a dynamic provider module may use to declare its force-new input paths.
DYNAMIC_RULE_NAMES = (
    "REPLACE_ON_CHANGES",
    "FORCE_NEW_FIELDS",
    "IMMUTABLE_FIELDS",
    "IMMUTABLE_PATHS",
    "IDENTITY_KEYS",
)


# azure-native's versioned modules: `kubernetesconfiguration/v20230501`, `.../v20240401preview`.
_API_VERSION = re.compile(r"/v\d{8}[a-z0-9]*$")


def unversioned(type_token: str) -> str:
    """The type token without an azure-native API version in its module (rules are keyed without one)."""
    parts = type_token.split(":")
    if len(parts) != 3:
        return type_token
    return f"{parts[0]}:{_API_VERSION.sub('', parts[1])}:{parts[2]}"


def k8s_force_new(type_token: str) -> tuple[str, ...] | None:
    """Force-new paths of a pulumi-kubernetes object type, or None if the token is not a k8s object."""
    if not type_token.startswith("kubernetes:") or type_token.startswith("kubernetes:helm.sh/"):
        return None
    try:
        _, gv, kind = type_token.split(":", 2)
    except ValueError:
        return None
    if kind.endswith("List"):
        return None
    kind = kind.removesuffix("Patch")  # a Patch is keyed by the object it patches
    return _K8S_METADATA + _K8S_FORCE_NEW.get(f"{gv}:{kind}", ())


REFUSED = "the provider's diff refuses this change:"


class ProviderDiffRule:
    """Asks a dynamic provider's own `diff(id, olds, news)` which inputs it replaces on.

    The offline plan has inputs only (no live state) and masked secrets, so this is the provider's view of
    the input change; warnings the provider logs while diffing become notes.
    """

    def __init__(self, provider_cls: type, declared: tuple[str, ...] = ()) -> None:
        self.provider_cls = provider_cls
        self.declared = declared

    def __call__(self, old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], list[str]]:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                result = self.provider_cls().diff("offline-plan", copy.deepcopy(old), copy.deepcopy(new))
        except Exception as e:  # the provider refuses the change: the real preview fails the same way
            return [], [f"{REFUSED} {e}"]
        notes = [line.removeprefix("warning: ") for line in err.getvalue().splitlines() if line.strip()]
        if getattr(result, "changes", None) is False:
            notes.append(
                "the provider's own diff reports no change for these inputs (it may ignore some of them)"
            )
        return [str(r) for r in (getattr(result, "replaces", None) or [])], notes


Rule = tuple[str, ...] | ProviderDiffRule


def rule_of(type_token: str, rules: dict[str, Rule]) -> Rule | None:
    """The replacement rule of a type token (an azure-native token of any API version: the rule's)."""
    return rules.get(type_token) or rules.get(unversioned(type_token))


def discover_dynamic_rules(package: str = "ml_diagnostics.providers") -> dict[str, Rule]:
    """Replacement rules of our dynamic resources, keyed by type token `pulumi-python:dynamic/<module>:<Name>`.

    A module with one ResourceProvider subclass that overrides `diff` (and needs no constructor
    arguments) is asked directly; otherwise a module-level tuple of force-new input paths is used
    (any of DYNAMIC_RULE_NAMES).
    """
    import pulumi.dynamic

    rules: dict[str, Rule] = {}
    try:
        pkg = importlib.import_module(package)
    except Exception:
        return rules
    for info in pkgutil.iter_modules(getattr(pkg, "__path__", [])):
        try:
            mod = importlib.import_module(f"{package}.{info.name}")
        except Exception:
            continue
        declared = next((getattr(mod, n) for n in DYNAMIC_RULE_NAMES if hasattr(mod, n)), ())
        declared = () if isinstance(declared, str | bytes) else tuple(str(p) for p in declared)
        own = [o for o in vars(mod).values() if isinstance(o, type) and o.__module__ == mod.__name__]
        resources = [o for o in own if issubclass(o, pulumi.dynamic.Resource)]
        providers = [
            o
            for o in own
            if issubclass(o, pulumi.dynamic.ResourceProvider)
            and o.diff is not pulumi.dynamic.ResourceProvider.diff
        ]
        rule: Rule | None = None
        if len(providers) == 1 and _constructible(providers[0]):
            rule = ProviderDiffRule(providers[0], declared)
        elif declared:
            rule = declared
        if rule is not None:
            for res in resources:
                rules[f"pulumi-python:{res._resource_type_name}"] = rule
    return rules


def _constructible(cls: type) -> bool:
    try:
        cls()
    except Exception:
        return False
    return True


def default_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = dict(FORCE_NEW_BY_TYPE)
    rules.update(discover_dynamic_rules())
    return rules


def force_new_paths(type_token: str, rules: dict[str, Rule]) -> tuple[str, ...]:
    k8s = k8s_force_new(type_token)
    if k8s is not None:
        return k8s
    rule = rule_of(type_token, rules) or ()
    return rule.declared if isinstance(rule, ProviderDiffRule) else rule


def _values_at(obj: Any, parts: Sequence[str]) -> dict[str, Any]:
    """Values at a rule path ("a.b[*].c" split into ["a", "b", "[*]", "c"]), keyed by concrete path."""
    found: dict[str, Any] = {}

    def go(value: Any, i: int, path: str) -> None:
        if i == len(parts):
            found[path] = value
            return
        part = parts[i]
        if part == "[*]":
            if isinstance(value, list):
                for j, v in enumerate(value):
                    go(v, i + 1, f"{path}[{j}]")
            return
        if isinstance(value, dict) and part in value:
            go(value[part], i + 1, join(path, part))

    go(obj, 0, "")
    return found


def _split_rule(rule: str) -> list[str]:
    parts: list[str] = []
    for seg in rule.split("."):
        while "[*]" in seg:
            head, _, seg = seg.partition("[*]")
            if head:
                parts.append(head)
            parts.append("[*]")
        if seg:
            parts.append(seg)
    return parts


def _normalize_k8s_namespace(type_token: str, inputs: dict[str, Any]) -> dict[str, Any]:
    # pulumi-kubernetes treats an unset namespace and "default" alike for namespaced objects.
    meta = inputs.get("metadata")
    if not type_token.startswith("kubernetes:") or not isinstance(meta, dict):
        return inputs
    if meta.get("namespace") == "default":
        return {**inputs, "metadata": {k: v for k, v in meta.items() if k != "namespace"}}
    return inputs


def replace_reasons(
    type_token: str,
    old_inputs: dict[str, Any],
    new_inputs: dict[str, Any],
    changed_paths: Iterable[str],
    rules: dict[str, Rule],
    notes: list[str] | None = None,
) -> list[str]:
    """Input paths whose change forces a replacement (a secret counts as changed when its digest did)."""
    changed = list(changed_paths)
    rule = rule_of(type_token, rules)
    if isinstance(rule, ProviderDiffRule) and changed:
        replaces, provider_notes = rule(old_inputs, new_inputs)
        if notes is not None:
            notes.extend(provider_notes)
        return replaces
    old_n = _normalize_k8s_namespace(type_token, old_inputs)
    new_n = _normalize_k8s_namespace(type_token, new_inputs)
    reasons: list[str] = []
    for path in force_new_paths(type_token, rules):
        parts = _split_rule(path)
        olds, news = _values_at(old_n, parts), _values_at(new_n, parts)
        hit = sorted(p for p in set(olds) | set(news) if olds.get(p, MISSING) != news.get(p, MISSING))
        if not hit:
            # Equal on the surface (e.g. "[secret]" both sides): a changed path below the rule decides.
            hit = sorted({p for p in set(olds) | set(news) for c in changed if under(c, p)})
        reasons.extend(h for h in hit if h not in reasons)
    return reasons
