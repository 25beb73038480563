"""Reconciling a stack whose update was interrupted (a killed process): its pending operations against its
cluster, so the next update neither fails nor creates anything twice.

A killed `pulumi up` leaves, in the stack's state, the operations it had started (`pending_operations`), and
in the cluster whatever those operations got to. For each interrupted *create* of a Kubernetes resource the
cluster is asked what is there:

- a Helm release (`kubernetes:helm.sh/v3:Release`): its release records (`sh.helm.release.v1.<name>.v<N>`).
  A `deployed` revision is the release the interrupted install made: it is imported, never uninstalled. Only
  `pending-install` or `failed` revisions (the install never completed, nothing was deployed) are records of
  nothing: they are removed, and the update installs the release again (Helm adopts the objects the
  interrupted install left, which carry the release's annotations). No record: nothing was made.
- any other Kubernetes object: found by its name, and imported when it was created by this update (at or
  after the update started); absent, nothing was made. A patch (`...Patch`) is re-applied by the update.
- an object that existed before the update started is someone else's: nothing is done and the stack is left
  for a person (RecoveryRefused names it), as is an interrupted create of a non-Kubernetes resource (a cloud
  resource: only its provider's console can tell whether it exists).

An interrupted *upgrade* of a Helm release leaves its new revision `pending-upgrade` (Helm then refuses any
other operation): that record is removed and the previous, still deployed, revision stays. Other interrupted
operations are left to the update, which redoes them from the recorded state. Then the pending operations are
cleared from the state (a refresh of the stack resource alone, `--clear-pending-creates`).

What is decided is pure (`plan`); the cluster is read and written through `Cluster`, which
recovery_cluster.py declares with the official client's `KubeCluster` (both named here too).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mldiag.common import short_urn
from mldiag.fleet.progress import SKEW
from mldiag.fleet.recovery_cluster import (
    Cluster,
    ClusterUnreachable,
    Found,
    KubeCluster,
    Record,
    RecoveryRefused,
)

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NEVER_COMPLETED = ("pending-install", "failed")
PENDING_CHANGE = ("pending-upgrade", "pending-rollback")

__all__ = [
    "HELM_RELEASE",
    "SECRET_SIG",
    "Cluster",
    "ClusterUnreachable",
    "Found",
    "KubeCluster",
    "Pending",
    "Record",
    "RecoveryRefused",
    "Step",
    "as_if_created",
    "imports",
    "pending_operations",
    "plan",
    "provider_access",
]


@dataclass(frozen=True)
class Pending:
    """One operation an interrupted update had started (an entry of the state's `pending_operations`)."""

    op: str
    """creating | updating | deleting | reading | importing"""
    urn: str
    type: str
    inputs: dict[str, Any]
    parent: str = ""
    provider: str = ""
    """The provider reference, `<provider urn>::<provider id>`."""

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]

    @property
    def short(self) -> str:
        return short_urn(self.urn)


def pending_operations(deployment: dict[str, Any]) -> list[Pending]:
    """The pending operations of an exported deployment (`pulumi stack export`'s `deployment`)."""
    out = []
    for entry in deployment.get("pending_operations") or []:
        res = entry.get("resource") or {}
        out.append(
            Pending(
                str(entry.get("type", "")),
                str(res.get("urn", "")),
                str(res.get("type", "")),
                dict(res.get("inputs") or {}),
                str(res.get("parent") or ""),
                str(res.get("provider") or ""),
            )
        )
    return out


@dataclass
class Step:
    """What is done about one pending operation."""

    pending: Pending
    action: str
    """import | remove-records | drop (nothing in the cluster to keep) | redo (the update redoes it)"""
    why: str
    id: str = ""
    records: list[str] = field(default_factory=list)
    namespace: str = ""

    def say(self) -> str:
        return f"{self.pending.short}: interrupted while {self.pending.op}; {self.why}"


def _created_by_update(created: float | None, since: float | None) -> bool:
    return since is None or created is None or created >= since - SKEW


def _api_version_kind(type_token: str) -> tuple[str, str]:
    """`kubernetes:apps/v1:DaemonSet` -> (apps/v1, DaemonSet); the core group is `v1`."""
    _, group_version, kind = type_token.split(":", 2)
    return (group_version.removeprefix("core/"), kind)


def _release_step(p: Pending, cluster: Cluster, since: float | None) -> Step:
    name, namespace = p.inputs.get("name"), p.inputs.get("namespace") or "default"
    if not isinstance(name, str) or not name:
        raise RecoveryRefused(
            f"{p.short}: interrupted while {p.op}, and its release name is not in the state; find the release "
            f"(`helm list -a -n {namespace}`), then `pulumi import` or remove it"
        )
    records = sorted(cluster.release_records(namespace, name), key=lambda r: r.revision)
    rid = f"{namespace}/{name}"
    deployed = [r for r in records if r.status in ("deployed", "superseded")]
    if p.op == "creating":
        if not records:
            return Step(p, "drop", f"no Helm release {rid} in the cluster: the update installs it")
        older = [r for r in records if not _created_by_update(r.created, since)]
        if older:
            raise RecoveryRefused(
                f"{p.short}: interrupted while creating, and the cluster has a Helm release {rid} older than "
                f"the update (revision {older[0].revision}, {older[0].status}): it is not this update's. Adopt it "
                "(`adopt: true`) or remove it, then rerun"
            )
        latest = records[-1]
        if latest.status == "deployed":
            return Step(
                p,
                "import",
                f"the Helm release {rid} it installed is deployed (revision {latest.revision}): imported",
                id=rid,
            )
        if all(r.status in NEVER_COMPLETED for r in records):
            listed = ", ".join(f"{r.secret} ({r.status})" for r in records)
            return Step(
                p,
                "remove-records",
                f"its Helm release {rid} never completed and holds nothing deployed: removed its record(s) "
                f"{listed}; the update installs it",
                records=[r.secret for r in records],
                namespace=namespace,
            )
        raise RecoveryRefused(
            f"{p.short}: interrupted while creating; the Helm release {rid} is {latest.status} at revision "
            f"{latest.revision}: check it (`helm history {name} -n {namespace}`) and rerun"
        )
    if p.op == "updating" and records and records[-1].status in PENDING_CHANGE and deployed:
        stuck = [r for r in records if r.revision > deployed[-1].revision]
        return Step(
            p,
            "remove-records",
            f"its Helm release {rid} was left {records[-1].status}: removed the record(s) of the interrupted "
            f"change ({', '.join(r.secret for r in stuck)}); revision {deployed[-1].revision} stays deployed "
            "and the update upgrades it again",
            records=[r.secret for r in stuck],
            namespace=namespace,
        )
    return Step(p, "redo", "the update redoes it from the recorded state")


def _object_step(p: Pending, cluster: Cluster, since: float | None) -> Step:
    api_version, kind = _api_version_kind(p.type)
    if kind.endswith("Patch"):
        return Step(p, "drop", "a patch: the update applies it again")
    meta = p.inputs.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, namespace = meta.get("name"), str(meta.get("namespace") or "")
    if not isinstance(name, str) or not name:
        raise RecoveryRefused(
            f"{p.short}: interrupted while creating, and its name is not in the state (auto-named): find the "
            f"{kind} it may have created, then `pulumi import` or delete it, and rerun"
        )
    found = cluster.find(api_version, kind, namespace, name)
    rid = f"{namespace}/{name}" if namespace else name
    if found is None:
        return Step(p, "drop", f"no {kind} {rid} in the cluster: the update creates it")
    if not _created_by_update(found.created, since):
        raise RecoveryRefused(
            f"{p.short}: interrupted while creating, and the cluster has a {kind} {rid} older than the update: "
            "it is not this update's; import it (`pulumi import`) or remove it, then rerun"
        )
    return Step(p, "import", f"the {kind} {rid} it created exists: imported", id=rid)


def plan(
    pending: list[Pending],
    cluster_of: Callable[[Pending], Cluster],
    since: float | None,
    known: set[str] | frozenset[str] = frozenset(),
) -> list[Step]:
    """What to do about each pending operation (`since`: when the interrupted update started, if known;
    `known`: the URNs the state has); RecoveryRefused when one needs a person, ClusterUnreachable when its
    cluster cannot be asked."""
    steps = []
    for p in pending:
        if p.op == "creating" and p.urn in known:
            steps.append(Step(p, "drop", "it is in the state already (an earlier recovery imported it)"))
        elif p.type.startswith("pulumi:providers:"):
            steps.append(Step(p, "drop", "a provider: nothing outside the state"))
        elif p.op not in ("creating", "updating"):
            steps.append(Step(p, "redo", "the update redoes it from the recorded state"))
        elif p.type == HELM_RELEASE:
            steps.append(_release_step(p, cluster_of(p), since))
        elif p.type.startswith("kubernetes:") and p.op == "creating":
            steps.append(_object_step(p, cluster_of(p), since))
        elif p.op == "creating":
            raise RecoveryRefused(
                f"{p.short}: interrupted while creating a {p.type}, which mldiag cannot look up: check whether it "
                "exists (its cloud console), then `pulumi import` it into the stack, or if it does not, "
                "`pulumi refresh --clear-pending-creates`; and rerun"
            )
        else:
            steps.append(Step(p, "redo", "the update redoes it from the recorded state"))
    return steps


def imports(steps: list[Step]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The `pulumi import --file` resources and name table of the steps that import."""
    resources: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for i, s in enumerate(x for x in steps if x.action == "import"):
        entry: dict[str, Any] = {"type": s.pending.type, "name": s.pending.name, "id": s.id}
        if s.pending.parent:
            names[f"parent{i}"] = s.pending.parent
            entry["parent"] = f"parent{i}"
        if s.pending.provider:
            names[f"provider{i}"] = s.pending.provider.rsplit("::", 1)[0]
            entry["provider"] = f"provider{i}"
        resources.append(entry)
    return resources, names


def as_if_created(deployment: dict[str, Any], steps: list[Step]) -> dict[str, Any] | None:
    """The deployment (after `pulumi import`) with each imported resource recorded as its interrupted create
    would have recorded it: its inputs the program's (the pending operation's, as the engine checked them), and
    where the provider keeps its inputs among the outputs (a Helm release: every input, and under `__inputs`
    the copy it diffs against) the program's values there too. `pulumi import` records what it read from the
    cluster instead, and the next update would "change" a release to what it already is: a new Helm revision
    that runs its hooks again. None when nothing was imported."""
    wanted = {s.pending.urn for s in steps if s.action == "import"}
    if not wanted:
        return None
    pending = {
        str((e.get("resource") or {}).get("urn")): (e.get("resource") or {}).get("inputs") or {}
        for e in deployment.get("pending_operations") or []
    }
    out = json.loads(json.dumps(deployment))
    for r in out.get("resources") or []:
        urn = str(r.get("urn"))
        if urn not in wanted or urn not in pending:
            continue
        inputs = pending[urn]
        r["inputs"] = json.loads(json.dumps(inputs))
        outputs = r.setdefault("outputs", {})
        if r.get("type") == HELM_RELEASE:
            outputs.update(json.loads(json.dumps(inputs)))
        if r.get("type") == HELM_RELEASE or "__inputs" in outputs:
            # `pulumi stack import` encrypts a plaintext secret with the stack's own secrets provider
            outputs["__inputs"] = {SECRET_SIG[0]: SECRET_SIG[1], "plaintext": json.dumps(inputs)}
    return out


# -- what the state says of a cluster ---------------------------------------------------------------------------
def provider_access(deployment: dict[str, Any], provider: str) -> tuple[str | None, str | None]:
    """(kubeconfig text, context) of a Kubernetes provider of the deployment (exported with its secrets)."""
    urn, _, pid = provider.rpartition("::")
    for res in deployment.get("resources") or []:
        if res.get("urn") == urn and (not pid or res.get("id") == pid):
            inputs = res.get("inputs") or {}
            kubeconfig, context = _plain(inputs.get("kubeconfig")), _plain(inputs.get("context"))
            if isinstance(kubeconfig, dict | list):
                kubeconfig = json.dumps(kubeconfig)
            return (str(kubeconfig) if kubeconfig else None, str(context) if context else None)
    raise RecoveryRefused(f"the provider {short_urn(urn)} of an interrupted operation is not in the state")


SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")


def _plain(value: Any) -> Any:
    """A state value with a secret's wrapper (`pulumi stack export --show-secrets`) unwrapped."""
    if isinstance(value, dict) and value.get(SECRET_SIG[0]) == SECRET_SIG[1]:
        text = value.get("plaintext")
        try:
            return json.loads(text) if isinstance(text, str) else value.get("value")
        except ValueError:
            return text
    return value
