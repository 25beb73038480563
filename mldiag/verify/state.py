"""Verify from a stack's state: `mldiag verify --stack ORG/PROJECT/STACK` checks any stack that uses the
components, whatever program and language registered them.

The Pulumi CLI exports the stack (`pulumi stack export --show-secrets`: the stack's own secrets provider
decrypts; the values stay in memory). Every outermost `mldiag:index:*` component is one target: its
`verifyRecord` output (ml_diagnostics.verify_record) says what to check, and the kind whose section it is
runs the same checks `mldiag verify STACK` runs on the record a stack file gives. A cluster is reached the
way the stack reaches it: the kubeconfig and context of the Kubernetes provider its resources use (GKE: the
cluster's endpoint and CA from the GKE API, as the config route does).

A component deployed before it recorded `verifyRecord` is checked from what its resources' inputs and its
older outputs say exactly (the in-cluster components, GKE, Model Development Clusters); where they do not
(an Azure ML extension), the target fails with what to do, never a pass.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ml_diagnostics import compat, plugin, verify_record
from ml_diagnostics.rules.base import alias_of
from ml_diagnostics.verify_record import VerifyRecord
from program.verify.result import TargetResult, Unreachable

TOKEN = "mldiag:index:"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
K8S_PROVIDER = "pulumi:providers:kubernetes"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE_TYPES = ("kubernetes:core/v1:Namespace", "kubernetes:core/v1:NamespacePatch")
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GCP_PROVIDER = "pulumi:providers:gcp"
UPGRADE_FIX = (
    "run `pulumi up` for this stack with ml-diagnostics {version} or later (it records what verify needs in the "
    "component's verifyRecord output, changing no resource), then verify again"
)


class StateUnavailable(Exception):
    """The stack's state cannot be read (the Pulumi CLI failed, no such stack, not a state export)."""


@dataclass
class Resource:
    urn: str
    type: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    provider: str | None

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


@dataclass
class Target:
    """One outermost component: what to check and how to reach it."""

    component: Resource
    record: VerifyRecord | None
    problem: str = ""
    """Why it cannot be checked (no record and nothing exact to rebuild it from, a record of another shape)."""
    from_inputs: bool = False
    """The record was rebuilt from the resources (a state from before verifyRecord)."""
    access: Any = None
    descendants: list[Resource] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.component.type.removeprefix(TOKEN)


def export(stack: str, cwd: Path) -> dict[str, Any]:
    """The stack's deployment, secrets decrypted by the stack's own secrets provider."""
    cmd = ["pulumi", "stack", "export", "--show-secrets", "--stack", stack]
    try:
        run = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise StateUnavailable("--stack needs the Pulumi CLI on PATH (`pulumi login` done)") from None
    except subprocess.TimeoutExpired:
        raise StateUnavailable(f"`{' '.join(cmd)}` did not answer within 300 s") from None
    if run.returncode != 0:  # stderr only: stdout carries decrypted values
        raise StateUnavailable(f"`{' '.join(cmd)}` failed: {run.stderr.strip()[:500]}")
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        raise StateUnavailable(f"`{' '.join(cmd)}` did not print JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("deployment"), dict):
        raise StateUnavailable(f"`{' '.join(cmd)}` printed no deployment")
    return doc["deployment"]


def plain(value: Any) -> Any:
    """A state value with its secrets as their plaintext (an export with --show-secrets)."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270":
            if "plaintext" not in value:
                raise StateUnavailable(
                    "the export holds encrypted secrets: it must be made with --show-secrets"
                )
            return plain(json.loads(value["plaintext"]))
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def resources(deployment: dict[str, Any]) -> list[Resource]:
    out = []
    for r in deployment.get("resources") or []:
        if not isinstance(r, dict) or "urn" not in r or "type" not in r:
            continue
        provider = r.get("provider")
        out.append(
            Resource(
                urn=r["urn"],
                type=r["type"],
                parent=r.get("parent"),
                custom=bool(r.get("custom")),
                inputs=plain(r.get("inputs") or {}),
                outputs=plain(r.get("outputs") or {}),
                provider=provider.rsplit("::", 1)[0] if isinstance(provider, str) else None,
            )
        )
    return out


def targets(found: list[Resource]) -> list[Target]:
    """Every outermost ml-diagnostics component, in the state's order, with its record and access."""
    by_urn = {r.urn: r for r in found}

    def ancestors(r: Resource) -> list[Resource]:
        out, seen = [], set()
        while r.parent and r.parent in by_urn and r.parent not in seen:
            seen.add(r.parent)
            r = by_urn[r.parent]
            out.append(r)
        return out

    out: list[Target] = []
    tops = [
        r
        for r in found
        if r.type.startswith(TOKEN) and not any(a.type.startswith(TOKEN) for a in ancestors(r))
    ]
    for top in tops:
        descendants = [r for r in found if top in ancestors(r)]
        target = _with_record(top, descendants)
        target.descendants = descendants
        if target.record is not None and target.record.section == "in_cluster":
            try:
                target.access = kube_access(descendants, by_urn)
            except Unreachable as e:
                target.access = e
        out.append(target)
    return out


def _with_record(top: Resource, descendants: list[Resource]) -> Target:
    value = top.outputs.get(verify_record.OUTPUT)
    if value is not None:
        try:
            return Target(top, verify_record.read(value))
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            return Target(
                top,
                None,
                f"its {verify_record.OUTPUT} cannot be read: {where + ': ' if where else ''}{first['msg']}",
            )
    rebuilt, problem = _from_resources(top, descendants)
    if rebuilt is None:
        return Target(top, None, problem)
    return Target(top, verify_record.read(rebuilt), from_inputs=True)


IN_CLUSTER_TYPES = {
    f"{TOKEN}{name}"
    for name in (
        "ClusterMlDiagnostics",
        "KubernetesCluster",
        "Diagon",
        "WorkloadOptIn",
        "MlDiagnosticsManual",
        "CertManager",
    )
}


def _from_resources(top: Resource, descendants: list[Resource]) -> tuple[dict[str, Any] | None, str]:
    """The record of a component from before verifyRecord, from what is exact in the state; else why not."""
    if top.type in IN_CLUSTER_TYPES:
        return verify_record.record(inCluster=_in_cluster_from(top, descendants)), ""
    if top.type == f"{TOKEN}GkeCluster":
        return _gke_from(top, descendants)
    if top.type == f"{TOKEN}ModelDevelopmentCluster":
        return _mdc_from(descendants)
    return None, (
        f"deployed before ml-diagnostics recorded what verify needs ({verify_record.OUTPUT}), and its resources do "
        "not say it exactly"
    )


def _in_cluster_from(top: Resource, descendants: list[Resource]) -> dict[str, Any]:
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


def _gke_from(top: Resource, descendants: list[Resource]) -> tuple[dict[str, Any] | None, str]:
    mode = top.outputs.get("mode")
    created = next((r for r in descendants if r.type == GKE_CLUSTER), None)
    flag = next((r for r in descendants if r.type.endswith(":ManagedMlDiagnostics")), None)
    google_api: dict[str, Any] = {}
    if created is not None:
        project, location, name = (created.inputs.get(k) for k in ("project", "location", "name"))
        gcp = next((r for r in descendants if r.type == GCP_PROVIDER), None)
        if gcp is not None:
            if gcp.inputs.get("impersonateServiceAccount"):
                google_api["impersonateServiceAccount"] = gcp.inputs["impersonateServiceAccount"]
            if gcp.inputs.get("billingProject"):
                google_api["quotaProject"] = gcp.inputs["billingProject"]
    elif flag is not None:
        project, location, name = (flag.inputs.get(k) for k in ("project", "location", "cluster"))
        google_api = _google_api_from(flag.inputs, "container")
    else:
        return None, "neither the GKE cluster nor its managed-diagnostics flag resource is in the state"
    if mode not in ("managed", "manual") or not (project and location and name):
        return None, "the state does not say the cluster's project, location, name and mode"
    inner = next((r for r in descendants if r.type == f"{TOKEN}ClusterMlDiagnostics"), None)
    inside_of = [r for r in descendants if inner is not None and _under(r, inner, descendants)]
    inside = _in_cluster_from(inner, inside_of) if inner is not None else {}
    return verify_record.record(
        gke={
            "project": project,
            "location": location,
            "clusterName": name,
            "mode": mode,
            "googleApi": google_api,
            "inCluster": inside,
        }
    ), ""


def _mdc_from(descendants: list[Resource]) -> tuple[dict[str, Any] | None, str]:
    cluster = next((r for r in descendants if r.type.endswith(":ModelDevelopmentCluster") and r.custom), None)
    if cluster is None:
        return None, "its cluster resource is not in the state"
    ident = [_input(cluster.inputs, k) for k in ("project", "region", "model_development_cluster_id")]
    if not all(isinstance(v, str) and v for v in ident):
        return None, "the cluster resource's inputs do not name its project, region and id"
    project, region, cluster_id = ident
    return verify_record.record(
        modelDevelopment={
            "project": project,
            "region": region,
            "clusterId": cluster_id,
            "googleApi": _google_api_from(cluster.inputs, "aiplatform"),
        }
    ), ""


def _google_api_from(inputs: dict[str, Any], api: str) -> dict[str, Any]:
    """The googleApi a dynamic resource's client inputs were made from (ml_diagnostics.google_api.rest_inputs)."""
    out: dict[str, Any] = {}
    endpoints = {}
    if _input(inputs, "api_endpoint"):
        endpoints[api] = _input(inputs, "api_endpoint")
    if _input(inputs, "iam_endpoint"):
        endpoints["iamcredentials"] = _input(inputs, "iam_endpoint")
    if endpoints:
        out["endpoints"] = endpoints
    for key in ("quota_project", "impersonate_service_account"):
        if _input(inputs, key):
            out[alias_of(key)] = _input(inputs, key)
    if _input(inputs, "emulator"):
        out["emulator"] = True
    return out


def _input(inputs: dict[str, Any], key: str) -> Any:
    """A dynamic resource's input: the engine keeps the SDK's camelCase of the Python keys."""
    return inputs.get(alias_of(key), inputs.get(key))


def _under(r: Resource, top: Resource, everything: list[Resource]) -> bool:
    by_urn = {x.urn: x for x in everything}
    seen: set[str] = set()
    while r.parent and r.parent not in seen:
        if r.parent == top.urn:
            return True
        seen.add(r.parent)
        if r.parent not in by_urn:
            return False
        r = by_urn[r.parent]
    return False


def kube_access(descendants: list[Resource], by_urn: dict[str, Resource]) -> Any:
    """The kubeconfig and context of the Kubernetes provider the component's resources use (the stack's own
    way into the cluster); its default provider's, or the ambient kubeconfig, when it names none."""
    from program.kinds.kubernetes.verify import KubeAccess

    ref = next(
        (r.provider for r in descendants if r.custom and r.type.startswith("kubernetes:") and r.provider),
        None,
    )
    provider = by_urn.get(ref) if ref else None
    if provider is None or provider.type != K8S_PROVIDER:
        return KubeAccess()
    kubeconfig = provider.inputs.get("kubeconfig")
    context = provider.inputs.get("context")
    if (
        isinstance(kubeconfig, str)
        and kubeconfig
        and "\n" not in kubeconfig
        and not kubeconfig.lstrip().startswith("{")
    ):
        path = Path(os.path.expanduser(kubeconfig))  # the provider takes a path as well as the text
        try:
            kubeconfig = path.read_text()
        except OSError as e:
            raise Unreachable(
                f"the stack's Kubernetes provider {provider.name} reads kubeconfig {path}: {e.strerror}"
            ) from None
    return KubeAccess(
        kubeconfig if isinstance(kubeconfig, str) and kubeconfig else None,
        context if isinstance(context, str) and context else None,
    )


def run_once(found: list[Target], options: dict[str, Any]) -> list[TargetResult]:
    """Each target's checks by the kind whose section its record is; an unreachable one is reported."""
    from program.kinds.context import VerifyContext
    from program.kinds.table import KINDS

    by_section = {k.section: k for k in KINDS}
    ctx = VerifyContext(None, options=options)
    results: list[TargetResult] = []
    for target in found:
        result = TargetResult(target.kind, target.component.name)
        results.append(result)
        if target.record is None:
            result.add(
                "verify.record",
                False,
                f"not checked: {target.problem}",
                UPGRADE_FIX.format(version=plugin.VERSION),
            )
            continue
        section = target.record.section
        try:
            if isinstance(target.access, Unreachable):
                raise target.access
            by_section[section].check.load()(getattr(target.record, section), target.access, ctx, result)
        except Unreachable as e:
            result.unreachable = str(e)
    return results
