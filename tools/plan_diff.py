"""Offline diff: the offline plan of a stack at a git ref against the working tree.

    python -m tools.plan STACK --diff-base GITREF [--format table|json|markdown]
    python -m tools.diff [STACK ...] --base GITREF [--format ...]      (several stacks, one report)

`run_diff` checks GITREF out into a clean temporary `git worktree`, runs
`python -m tools.plan STACK --format json` there and in the working tree, and compares the two plans
with `diff_plans`: resources matched by URN are added, deleted, replaced or updated (changed input paths
with old and new values, secrets masked), plus the policy findings that are new in the working tree.

"replace" is reported only where the provider's own rules make it certain (Kubernetes force-new fields,
Helm release name/namespace, ARM path parameters, a change of type or explicit provider, the force-new
fields our dynamic providers declare); any other change is an "update". The offline plan cannot see the
live state, so the real `pulumi preview` may still find more.

Exit codes: 1 if the working tree's plan has a mandatory policy violation, else 0; 2 on error.
"""

from __future__ import annotations

import contextlib
import copy
import html
import importlib
import io
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SECRET = "[secret]"
EXIT_OK, EXIT_MANDATORY, EXIT_ERROR = 0, 1, 2
GITHUB_COMMENT_LIMIT = 65_536
DEFAULT_MARKDOWN_BUDGET = 60_000  # leaves room for a header the caller may add
PLAN_TIMEOUT_SECONDS = 900
ACTIONS = ("replace", "delete", "update", "add")  # most consequential first
SYMBOL = {"add": "+", "update": "~", "replace": "+-", "delete": "-"}
MISSING: Any = object()

# Inputs never compared: the pickled dynamic provider (the engine asks the provider's diff instead).
IGNORED_INPUTS = {"__provider"}

# --- what forces a replacement ------------------------------------------------------------------------
# Paths use `.` for keys and `[*]` for any list index. A rule fires when the value at the path differs.

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

# Other providers, by exact type token. Helm v3 Release: helm_release.go forceNewFields. Azure native:
# the ARM path parameters (the resource id) and location cannot change in place. GCP: the resource's
# identity in the API path (Terraform ForceNew).
FORCE_NEW_BY_TYPE: dict[str, tuple[str, ...]] = {
    "kubernetes:helm.sh/v3:Release": ("name", "namespace"),
    "azure-native:kubernetesconfiguration:Extension": (
        "resourceGroupName",
        "clusterRp",
        "clusterResourceName",
        "clusterName",
        "extensionName",
    ),
    "azure-native:relay:Namespace": ("resourceGroupName", "namespaceName", "location"),
    "azure-native:relay:HybridConnection": ("resourceGroupName", "namespaceName", "hybridConnectionName"),
    "azure-native:relay:HybridConnectionAuthorizationRule": (
        "resourceGroupName",
        "namespaceName",
        "hybridConnectionName",
        "authorizationRuleName",
    ),
    "azure-native:relay:NamespaceAuthorizationRule": (
        "resourceGroupName",
        "namespaceName",
        "authorizationRuleName",
    ),
    "azure-native:containerservice:ManagedCluster": ("resourceGroupName", "resourceName", "location"),
    "azure-native:resources:ResourceGroup": ("resourceGroupName", "location"),
    "gcp:container/cluster:Cluster": ("name", "project", "location"),
    "gcp:container/nodePool:NodePool": ("name", "project", "location", "cluster"),
}

# Module-level names a dynamic provider module may use to declare its force-new input paths.
DYNAMIC_RULE_NAMES = (
    "REPLACE_ON_CHANGES",
    "FORCE_NEW_FIELDS",
    "IMMUTABLE_FIELDS",
    "IMMUTABLE_PATHS",
    "IDENTITY_KEYS",
)


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


def discover_dynamic_rules(package: str = "components.providers") -> dict[str, Rule]:
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
        for res in resources if rule is not None else ():
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
    rule = rules.get(type_token, ())
    return rule.declared if isinstance(rule, ProviderDiffRule) else rule


# --- comparing inputs ---------------------------------------------------------------------------------


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(old: Any, new: Any, path: str, out: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new), key=str):
            if not path and k in IGNORED_INPUTS:
                continue
            _walk(old.get(k, MISSING), new.get(k, MISSING), _join(path, str(k)), out)
        return
    if isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            _walk(
                old[i] if i < len(old) else MISSING, new[i] if i < len(new) else MISSING, f"{path}[{i}]", out
            )
        return
    if old is MISSING and new is MISSING:
        return
    # One side absent: list the other side's leaves (an empty map or list stays one entry).
    present = new if old is MISSING else old if new is MISSING else None
    if isinstance(present, dict | list) and present:
        if isinstance(present, dict):
            items = [(_join(path, str(k)), v) for k, v in sorted(present.items(), key=lambda kv: str(kv[0]))]
            items = [(p, v) for p, v in items if path or p not in IGNORED_INPUTS]
        else:
            items = [(f"{path}[{i}]", v) for i, v in enumerate(present)]
        for sub, v in items:
            if old is MISSING:
                _walk(MISSING, v, sub, out)
            else:
                _walk(v, MISSING, sub, out)
        return
    if old is not MISSING and new is not MISSING and type(old) is type(new) and old == new:
        return
    change: dict[str, Any] = {"path": path or "$"}
    if old is not MISSING:
        change["old"] = old
    if new is not MISSING:
        change["new"] = new
    out.append(change)


def diff_inputs(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Changed leaves between two input maps: [{"path", "old"?, "new"?}] (a missing side is absent)."""
    out: list[dict[str, Any]] = []
    _walk(old, new, "", out)
    return out


def _flatten(value: Any, path: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Leaf values by path, in the offline plan's path syntax (`a.b[0].c`; a secret is a leaf)."""
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, _join(path, str(k)), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _flatten(v, f"{path}[{i}]", out)
    else:
        out[path or "$"] = value
    return out


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
            go(value[part], i + 1, _join(path, part))

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


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")


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
    rule = rules.get(type_token)
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
            hit = sorted({p for p in set(olds) | set(news) for c in changed if _under(c, p)})
        reasons.extend(h for h in hit if h not in reasons)
    return reasons


def _has_secret(value: Any) -> bool:
    if value == SECRET:
        return True
    if isinstance(value, dict):
        return any(_has_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_secret(v) for v in value)
    return False


# --- the plan diff ------------------------------------------------------------------------------------


def _qualified(urn: str) -> tuple[str, str, str]:
    """(stack::project prefix, parent type chain, name) of a URN, with the resource's own type dropped."""
    try:
        prefix, rest = urn.split("::", 1)[0], urn.split("::", 1)[1]
        project, qtype, name = rest.split("::", 2)
    except (IndexError, ValueError):
        return urn, "", ""
    return f"{prefix}::{project}", qtype.rsplit("$", 1)[0] if "$" in qtype else "", name


def _is_default_provider(urn: str | None) -> bool:
    return bool(urn) and "::pulumi:providers:" in urn and urn.rsplit("::", 1)[-1].startswith("default")


def compare_violations(
    base: list[dict[str, Any]], head: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(new, resolved) findings. Matched by policy, resource and level; a reworded message is not new."""
    groups: dict[tuple[str, str, str], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for side, items in ((0, base), (1, head)):
        for v in items:
            key = (v.get("policy", ""), v.get("urn") or "", v.get("enforcementLevel", ""))
            groups.setdefault(key, ([], []))[side].append(v)
    new: list[dict[str, Any]] = []
    resolved: list[dict[str, Any]] = []
    for olds, news in groups.values():
        old_msgs = [v.get("message") for v in olds]
        unmatched_new = []
        for v in news:
            if v.get("message") in old_msgs:
                old_msgs.remove(v.get("message"))
            else:
                unmatched_new.append(v)
        # Leftovers on both sides pair up as the same finding with a reworded message.
        paired = min(len(unmatched_new), len(old_msgs))
        new.extend(unmatched_new[paired:])
        leftover = old_msgs[paired:]
        for v in olds:
            if v.get("message") in leftover:
                leftover.remove(v.get("message"))
                resolved.append(v)
    return new, resolved


def diff_plans(
    base: dict[str, Any] | None,
    head: dict[str, Any],
    rules: dict[str, Rule] | None = None,
) -> dict[str, Any]:
    """Compares two offline plan reports (the JSON of `python -m tools.plan STACK --format json`).

    `base` None (the stack does not exist at the base ref) makes everything an add. Returns
    {"project", "stack", "summary", "resources": [...changed...], "newPolicyViolations",
    "resolvedPolicyViolations", "headMandatoryViolations", "criticalPath", "notes"}.
    """
    rules = default_rules() if rules is None else rules
    base = base or {"resources": [], "policyViolations": [], "criticalPath": {"depth": 0, "urns": []}}
    old_by = {r["urn"]: r for r in base.get("resources", [])}
    new_by = {r["urn"]: r for r in head.get("resources", [])}
    notes: list[str] = []
    changed: list[dict[str, Any]] = []
    unchanged = 0
    digests_missing = False
    default_moves: Counter[tuple[str, str]] = Counter()

    removed = [u for u in old_by if u not in new_by]
    added = [u for u in new_by if u not in old_by]
    # Same parent chain and name but another type: Pulumi deletes the old and creates the new one.
    old_keys: dict[tuple[str, str, str], list[str]] = {}
    for u in removed:
        old_keys.setdefault(_qualified(u), []).append(u)
    retyped: dict[str, str] = {}
    for u in added:
        cands = old_keys.get(_qualified(u))
        if cands and len(cands) == 1 and new_by[u]["type"] != old_by[cands[0]]["type"]:
            retyped[u] = cands.pop()

    def entry(r: dict[str, Any], action: str, **extra: Any) -> dict[str, Any]:
        e = {"urn": r["urn"], "type": r["type"], "name": r["name"], "custom": r.get("custom", True)}
        e["action"] = action
        e.update(extra)
        return e

    for urn, new in new_by.items():
        if urn in retyped:
            old = old_by[retyped[urn]]
            changes = diff_inputs(old.get("inputs") or {}, new.get("inputs") or {})
            reason = f"type changed from {old['type']} to {new['type']} (no alias)"
            changed.append(entry(new, "replace", oldUrn=old["urn"], replaceReasons=[reason], changes=changes))
            continue
        if urn not in old_by:
            changes = diff_inputs({}, new.get("inputs") or {})
            changed.append(entry(new, "add", changes=changes))
            continue
        old = old_by[urn]
        old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
        changes = diff_inputs(old_in, new_in)
        od, nd = old.get("secretDigests"), new.get("secretDigests")
        res_notes: list[str] = []
        if od is None or nd is None:
            if _has_secret(old_in) or _has_secret(new_in):
                digests_missing = True
                res_notes.append("secret values not compared (no secretDigests in the plan)")
        else:
            by_path = {c["path"]: c for c in changes}
            flat_old, flat_new = _flatten(old_in), _flatten(new_in)
            for p in sorted(set(od) | set(nd)):
                if od.get(p) == nd.get(p):
                    continue
                c = by_path.get(p)
                if c is None:
                    c = {"path": p}
                    if p in flat_old:
                        c["old"] = flat_old[p]
                    if p in flat_new:
                        c["new"] = flat_new[p]
                    changes.append(c)
                c["secret"] = True
            changes.sort(key=lambda c: c["path"])
        reasons: list[str] = []
        if (old.get("provider") or None) != (new.get("provider") or None):
            op, np_ = old.get("provider"), new.get("provider")
            if _is_default_provider(op) and _is_default_provider(np_):
                default_moves[(op, np_)] += 1
            else:
                reasons.append(f"provider changed from {op} to {np_}")
        forced = replace_reasons(new["type"], old_in, new_in, [c["path"] for c in changes], rules, res_notes)
        for c in changes:
            if any(_under(c["path"], f) or _under(f, c["path"]) for f in forced):
                c["forcesReplace"] = True
        if isinstance(rules.get(new["type"]), ProviderDiffRule):
            reasons += [f"{f} cannot change in place (the provider's own diff)" for f in forced]
        else:
            reasons += [f"{f} changed" for f in forced]
        # A refusal fails the real preview: repeat it where the summary shows it.
        notes.extend(f"{new['name']}: {n}" for n in res_notes if n.startswith(REFUSED))
        if reasons:
            changed.append(entry(new, "replace", replaceReasons=reasons, changes=changes, notes=res_notes))
        elif changes:
            changed.append(entry(new, "update", changes=changes, notes=res_notes))
        else:
            unchanged += 1
    retyped_old = set(retyped.values())
    for urn in removed:
        if urn not in retyped_old:
            changed.append(
                entry(old_by[urn], "delete", changes=diff_inputs(old_by[urn].get("inputs") or {}, {}))
            )

    order = {a: i for i, a in enumerate(ACTIONS)}
    changed.sort(key=lambda e: (order[e["action"]], e["type"], e["urn"]))
    for (op, np_), n in sorted(default_moves.items()):
        notes.append(
            f"{n} resource(s) move from default provider {op} to {np_}: not a replacement by itself "
            "(the engine compares default providers by their configuration)"
        )
    if digests_missing:
        notes.append(
            "the plans carry no secretDigests: secret values could not be compared and are treated as unchanged"
        )

    new_v, resolved_v = compare_violations(base.get("policyViolations", []), head.get("policyViolations", []))
    mandatory = [v for v in head.get("policyViolations", []) if v.get("enforcementLevel") == "mandatory"]
    counts = Counter(e["action"] for e in changed)
    return {
        "project": head.get("project"),
        "stack": head.get("stack"),
        "summary": {
            "add": counts["add"],
            "update": counts["update"],
            "replace": counts["replace"],
            "delete": counts["delete"],
            "unchanged": unchanged,
            "newPolicyViolations": len(new_v),
            "resolvedPolicyViolations": len(resolved_v),
            "mandatoryViolations": len(mandatory),
        },
        "resources": changed,
        "newPolicyViolations": new_v,
        "resolvedPolicyViolations": resolved_v,
        "headMandatoryViolations": mandatory,
        "criticalPath": {
            "base": (base.get("criticalPath") or {}).get("depth", 0),
            "head": (head.get("criticalPath") or {}).get("depth", 0),
        },
        "notes": notes,
    }


def exit_code(diff: dict[str, Any]) -> int:
    if "error" in diff:
        return EXIT_ERROR
    return EXIT_MANDATORY if diff["summary"]["mandatoryViolations"] else EXIT_OK


# --- rendering ----------------------------------------------------------------------------------------


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) and value == SECRET else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _change_text(c: dict[str, Any], limit: int = 120) -> str:
    old = _short(c["old"], limit) if "old" in c else "(none)"
    new = _short(c["new"], limit) if "new" in c else "(none)"
    flags = []
    if c.get("secret"):
        flags.append("secret changed")
    if c.get("forcesReplace"):
        flags.append("forces replacement")
    return f"{c['path']}: {old} => {new}" + (f"  [{', '.join(flags)}]" if flags else "")


def _base_label(diff: dict[str, Any]) -> str:
    ref = diff.get("baseRef")
    if diff.get("baseMissing"):
        return f"{ref or 'base'} (stack absent there)"
    return ref or "base"


def render_table(diff: dict[str, Any]) -> str:
    if "error" in diff:
        return f"Offline diff of stack {diff.get('stack')}: failed\nerror: {diff['error']}\n"
    s = diff["summary"]
    lines = [
        f"Offline diff of stack {diff.get('stack')}: {_base_label(diff)} -> working tree",
        f"  + add {s['add']}   ~ update {s['update']}   +- replace {s['replace']}   - delete {s['delete']}"
        f"   unchanged {s['unchanged']}",
        f"  critical path depth {diff['criticalPath']['base']} -> {diff['criticalPath']['head']}",
        "",
    ]
    for e in diff["resources"]:
        lines.append(f"{SYMBOL[e['action']]:>2} {e['action']:<8} {e['type']}  {e['name']}")
        for r in e.get("replaceReasons", []):
            lines.append(f"      replace: {r}")
        if e["action"] in ("update", "replace"):
            lines += [f"      {_change_text(c)}" for c in e["changes"]]
        lines += [f"      note: {n}" for n in e.get("notes", [])]
    if diff["newPolicyViolations"]:
        lines += ["", "New policy findings:"]
        for v in diff["newPolicyViolations"]:
            lines.append(f"  [{v.get('enforcementLevel')}] {v.get('policy')}  {v.get('urn') or '(stack)'}")
            lines.append(f"      {v.get('message', '').strip().splitlines()[0] if v.get('message') else ''}")
    if diff["resolvedPolicyViolations"]:
        lines += ["", f"Resolved policy findings: {len(diff['resolvedPolicyViolations'])}"]
    lines += [""] + [f"note: {n}" for n in diff["notes"]]
    m = s["mandatoryViolations"]
    lines.append(
        f"{m} mandatory policy violation(s) in the working tree's plan"
        if m
        else "no mandatory policy violation"
    )
    return "\n".join(lines) + "\n"


def render_json(diff: dict[str, Any]) -> str:
    return json.dumps(diff, indent=2, sort_keys=False) + "\n"


def _md(text: Any) -> str:
    """Text for a markdown table cell / HTML context: escaped, pipes and newlines neutralised."""
    return html.escape(str(text), quote=False).replace("|", "&#124;").replace("\n", " ")


def _code(value: Any, limit: int = 120) -> str:
    return f"<code>{_md(_short(value, limit))}</code>"


def _resource_details(e: dict[str, Any], max_rows: int = 40) -> str:
    n = len(e["changes"])
    what = {"add": "input", "delete": "input"}.get(e["action"], "change")
    summary = (
        f"{SYMBOL[e['action']]} <b>{e['action']}</b> <code>{_md(e['type'])}</code> <b>{_md(e['name'])}</b>"
        + (f" ({n} {what}{'s' if n != 1 else ''})" if n else "")
    )
    if not e["changes"] and not e.get("replaceReasons") and not e.get("notes"):
        return f"<p>{summary}</p>\n"
    out = [f"<details><summary>{summary}</summary>", ""]
    for r in e.get("replaceReasons", []):
        out.append(f"- replaces because {_md(r)}")
    for note in e.get("notes", []):
        out.append(f"- note: {_md(note)}")
    out.append(f"- urn: <code>{_md(e['urn'])}</code>")
    out.append("")
    if e["changes"]:
        if e["action"] in ("add", "delete"):
            out += ["| path | value |", "| --- | --- |"]
            for c in e["changes"][:max_rows]:
                out.append(f"| <code>{_md(c['path'])}</code> | {_code(c.get('new', c.get('old')))} |")
        else:
            out += ["| path | before | after | |", "| --- | --- | --- | --- |"]
            for c in e["changes"][:max_rows]:
                flags = " ".join(
                    f
                    for f, on in (
                        ("secret changed", c.get("secret")),
                        ("forces replace", c.get("forcesReplace")),
                    )
                    if on
                )
                before = _code(c["old"]) if "old" in c else "—"
                after = _code(c["new"]) if "new" in c else "—"
                out.append(f"| <code>{_md(c['path'])}</code> | {before} | {after} | {flags} |")
        if n > max_rows:
            out.append(f"\n… {n - max_rows} more")
    out += ["", "</details>", ""]
    return "\n".join(out)


def render_markdown(
    diff: dict[str, Any], max_chars: int = DEFAULT_MARKDOWN_BUDGET, heading: str = "###"
) -> str:
    """A PR comment section: summary table first, then one collapsed <details> per changed resource.

    Stays under max_chars: details are dropped (with a note) before the summary is touched.
    """
    if "error" in diff:
        # The message comes from the plan (e.g. config errors with key paths): shown verbatim, escaped.
        msg = (
            diff["error"] if len(diff["error"]) <= max_chars // 2 else diff["error"][: max_chars // 2] + "\n…"
        )
        return (
            f"{heading} Offline plan diff: stack `{diff.get('stack')}`\n\n❌ The offline plan failed "
            f"(base `{_md(_base_label(diff))}`):\n\n<pre>{html.escape(msg, quote=False)}</pre>\n"
        )
    s = diff["summary"]
    m = s["mandatoryViolations"]
    status = f"❌ {m} mandatory policy violation(s)" if m else "✅ no mandatory policy violation"
    head = [
        f"{heading} Offline plan diff: stack `{diff.get('stack')}`",
        "",
        f"Base `{_md(_base_label(diff))}` → this change. {status}. "
        f"Critical path depth {diff['criticalPath']['base']} → {diff['criticalPath']['head']}.",
        "",
        "| | + add | ~ update | +- replace | - delete | unchanged | new policy findings | resolved findings |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| resources | {s['add']} | {s['update']} | {s['replace']} | {s['delete']} | {s['unchanged']}"
        f" | {s['newPolicyViolations']} | {s['resolvedPolicyViolations']} |",
        "",
    ]
    by_type: dict[str, Counter] = {}
    for e in diff["resources"]:
        by_type.setdefault(e["type"], Counter())[e["action"]] += 1
    if by_type:
        head += ["| type | + | ~ | +- | - |", "| --- | ---: | ---: | ---: | ---: |"]
        rows = sorted(by_type.items())
        for t, c in rows[:40]:
            head.append(
                f"| <code>{_md(t)}</code> | {c['add']} | {c['update']} | {c['replace']} | {c['delete']} |"
            )
        if len(rows) > 40:
            head.append(f"| … {len(rows) - 40} more types | | | | |")
        head.append("")
    if diff["newPolicyViolations"]:
        head += [
            "**New policy findings**",
            "",
            "| level | policy | resource | message |",
            "| --- | --- | --- | --- |",
        ]
        for v in diff["newPolicyViolations"][:30]:
            urn = v.get("urn") or "(stack)"
            msg = (v.get("message") or "").strip()
            msg = msg if len(msg) <= 300 else msg[:299] + "…"
            head.append(
                f"| {_md(v.get('enforcementLevel'))} | {_md(v.get('policy'))} | <code>{_md(urn.rsplit('::', 1)[-1])}</code>"
                f" | {_md(msg)} |"
            )
        if len(diff["newPolicyViolations"]) > 30:
            head.append(f"| | | | … {len(diff['newPolicyViolations']) - 30} more (see the JSON output) |")
        head.append("")
    for n in diff["notes"][:10]:
        head.append(f"> note: {_md(n)}")
    if diff["notes"]:
        head.append("")
    text = "\n".join(head)
    if diff["resources"]:
        text += "\n**Changed resources**\n\n"
    reserve = 400  # room for the truncation note
    shown = 0
    for e in diff["resources"]:
        block = _resource_details(e)
        if len(text) + len(block) > max_chars - reserve:
            break
        text += block
        shown += 1
    if shown < len(diff["resources"]):
        text += (
            f"\n> ⚠️ Details truncated: {len(diff['resources']) - shown} of {len(diff['resources'])} changed "
            f"resources not shown (GitHub comments are limited to {GITHUB_COMMENT_LIMIT:,} characters). "
            f"Run `python -m tools.plan {diff.get('stack')} --diff-base <ref> --format json` for all of them.\n"
        )
    if len(text) > max_chars:  # only if the summary alone is larger than the budget
        text = text[: max_chars - 80] + "\n\n> ⚠️ Summary truncated to fit the comment size limit.\n"
    return text


def render(diff: dict[str, Any], fmt: str, max_chars: int = DEFAULT_MARKDOWN_BUDGET) -> str:
    if fmt == "json":
        return render_json(diff)
    if fmt == "markdown":
        return render_markdown(diff, max_chars)
    if fmt == "table":
        return render_table(diff)
    raise ValueError(f"unknown format {fmt!r}: use table, json or markdown")


# --- running the two plans ----------------------------------------------------------------------------


class DiffError(Exception):
    """Something outside the diff itself failed: git, the base or head plan."""


@dataclass
class _Git:
    cwd: Path

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["git", *args], cwd=self.cwd, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise DiffError(f"git {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc


def _plan_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run_plan(cwd: Path, stack: str, extra: list[str], label: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "tools.plan", stack, "--format", "json", "--quiet", *extra]
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, env=_plan_env(), timeout=PLAN_TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        raise DiffError(
            f"the {label} plan of stack {stack} took longer than {PLAN_TIMEOUT_SECONDS}s"
        ) from None
    if proc.returncode not in (EXIT_OK, EXIT_MANDATORY):
        detail = proc.stderr.strip() or proc.stdout.strip() or f"exit code {proc.returncode}"
        raise DiffError(f"the {label} plan of stack {stack} failed:\n{detail}")
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise DiffError(f"the {label} plan of stack {stack} did not print JSON: {e}") from None
    if not isinstance(report, dict) or not isinstance(report.get("resources"), list):
        raise DiffError(f"the {label} plan of stack {stack} printed JSON of an unexpected shape")
    return report


def diff_stacks(
    stacks: Sequence[str],
    base_ref: str,
    config_file: Path | str | None = None,
    policy_config: Path | str | None = None,
    project_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Plans each stack at base_ref (one temporary worktree) and in the working tree; returns the diffs.

    config_file / policy_config apply to the working tree's plan only; the base uses its own files.
    """
    project = Path(project_dir or ROOT).resolve()
    git = _Git(project)
    top = Path(git.run("rev-parse", "--show-toplevel").stdout.strip())
    prefix = git.run("rev-parse", "--show-prefix").stdout.strip()
    commit = git.run("rev-parse", "--verify", "--quiet", f"{base_ref}^{{commit}}", check=False)
    if commit.returncode != 0:
        raise DiffError(
            f"git ref {base_ref!r} does not name a commit (fetch it first, e.g. git fetch origin main)"
        )
    sha = commit.stdout.strip()
    head_extra: list[str] = []
    if config_file:
        head_extra += ["--config-file", str(Path(config_file).resolve())]
    if policy_config:
        head_extra += ["--policy-config", str(Path(policy_config).resolve())]

    def exists_at_base(rel: str) -> bool:
        return git.run("cat-file", "-e", f"{sha}:{prefix}{rel}", check=False).returncode == 0

    base_stacks = [s for s in stacks if exists_at_base(f"stacks/Pulumi.{s}.yaml")]
    if base_stacks and not exists_at_base("tools/plan.py"):
        raise DiffError(f"{base_ref} has no offline plan (tools/plan.py): cannot plan the base")
    tmp = Path(tempfile.mkdtemp(prefix="plan-diff-"))
    tree = tmp / "base"
    added_worktree = False
    try:
        if base_stacks:
            git.cwd = top
            git.run("worktree", "add", "--detach", "--quiet", str(tree), sha)
            added_worktree = True
        jobs: list[tuple[str, str]] = [(s, "base") for s in base_stacks] + [(s, "head") for s in stacks]
        workers = max(1, min(len(jobs), os.cpu_count() or 2, 4))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {
                (s, side): pool.submit(
                    _run_plan,
                    tree / prefix if side == "base" else project,
                    s,
                    [] if side == "base" else head_extra,
                    f"{base_ref} ({sha[:12]})" if side == "base" else "working tree",
                )
                for s, side in jobs
            }
            results: dict[tuple[str, str], dict[str, Any]] = {}
            errors: dict[str, list[str]] = {}
            for (s, side), f in futures.items():
                try:
                    results[(s, side)] = f.result()
                except DiffError as e:  # one stack's failure must not hide the other stacks' diffs
                    errors.setdefault(s, []).append(str(e))
    finally:
        if added_worktree:
            removed = git.run("worktree", "remove", "--force", str(tree), check=False)
            if removed.returncode != 0:
                shutil.rmtree(tree, ignore_errors=True)
                git.run("worktree", "prune", check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    diffs = []
    for s in stacks:
        if s in errors:
            d = {"stack": s, "error": "\n".join(errors[s])}
        else:
            d = diff_plans(results.get((s, "base")), results[(s, "head")])
            d["stack"] = s
        d["baseRef"] = base_ref
        d["baseCommit"] = sha
        d["baseMissing"] = s not in base_stacks
        if d["baseMissing"] and "error" not in d:
            d["notes"].insert(0, f"stack {s} does not exist at {base_ref}: every resource is new")
        diffs.append(d)
    return diffs


def run_diff(
    stack: str,
    base_ref: str,
    fmt: str,
    config_file: Path | str | None = None,
    policy_config: Path | str | None = None,
    *,
    project_dir: Path | None = None,
) -> tuple[str, int]:
    """Rendered diff of one stack against base_ref, and the exit code (0, 1 mandatory violation, 2 error)."""
    if fmt not in ("table", "json", "markdown"):
        return f"error: unknown format {fmt!r}: use table, json or markdown", EXIT_ERROR
    try:
        (diff,) = diff_stacks([stack], base_ref, config_file, policy_config, project_dir)
    except DiffError as e:
        return f"error: {e}", EXIT_ERROR
    if "error" in diff:
        return f"error: {diff['error']}", EXIT_ERROR
    return render(diff, fmt), exit_code(diff)


__all__ = [
    "diff_plans",
    "diff_stacks",
    "run_diff",
    "render",
    "render_json",
    "render_markdown",
    "render_table",
    "exit_code",
    "DiffError",
]
