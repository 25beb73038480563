"""In-cluster checks through the official Kubernetes Python client; every call is a read (get/list/log).

- manual mode: the Helm releases (cert-manager when the program installs it, injection-webhook,
  connection-operator) deployed per Helm's own release Secrets at the chart versions the config names;
  their Deployments available; the injection-webhook's MutatingWebhookConfiguration present with its CA
  injected by cert-manager.
- every mode: each workload namespace carries `managed-mldiagnostics-gke=true`.
- Diagon (when enabled): see diagon.py.

The checks take the record the components write (ml_diagnostics.verify_record.InClusterRecord): from a
stack's state as recorded, or built from a stack file's settings the same way (`record_of`).
"""

from __future__ import annotations

from functools import partial

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ml_diagnostics import compat, verify_record
from ml_diagnostics.rules.in_cluster import InClusterSpec
from ml_diagnostics.verify_record import InClusterRecord
from program.clouds.kubernetes_client import TIMEOUT, annotations_of, guarded, labels_of, name_of, probe
from program.in_cluster import diagon, helm
from program.verify.result import TargetResult

RELEASE_ANNOTATION = "meta.helm.sh/release-name"
CERT_MANAGER_COMPONENTS = "app.kubernetes.io/component in (controller,webhook,cainjector)"


def check_cluster(
    api: client.ApiClient,
    result: TargetResult,
    rec: InClusterRecord,
    *,
    log_lines: int = 500,
    all_logs: bool = False,
) -> None:
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    for r in rec.releases:
        guarded(
            result,
            f"helm.{r.release}",
            partial(_release, core, result, r.release, r.namespace, r.chart_version),
        )
        guarded(
            result,
            f"workloads.{r.release}",
            partial(_release_workloads, apps, result, r.release, r.namespace),
        )
    if rec.preinstalled_cert_manager:
        guarded(result, "workloads.cert-manager", partial(_preinstalled_cert_manager, apps, result))
    if rec.webhook:
        guarded(result, "webhook.ca-injected", partial(_webhook_ca, api, result))
    for ns in rec.workload_namespaces:
        guarded(result, f"namespace.{ns}", partial(_opt_in_label, core, result, ns))
    if rec.diagon is not None:
        check_diagon = partial(
            diagon.check,
            core,
            apps,
            result,
            rec.diagon,
            log_lines=log_lines,
            timeout=TIMEOUT,
            all_logs=all_logs,
        )
        guarded(result, "diagon", check_diagon)


def record_of(settings: InClusterSpec, mode: str) -> InClusterRecord:
    """What a cluster's components record for these settings in this mode (ml_diagnostics.verify_record):
    the config route checks this, the state route what the components recorded."""
    return InClusterRecord.model_validate(verify_record.in_cluster(settings, mode))


def _same_version(a: str, b: str) -> bool:
    try:
        return compat.same_version(a, b)  # the program's one semver rule (pre-release counts)
    except ValueError:
        return a.lstrip("v") == b.lstrip("v")


def _release(
    core: client.CoreV1Api, result: TargetResult, release: str, namespace: str, version: str
) -> None:
    name = f"helm.{release}"
    secrets = core.list_namespaced_secret(
        namespace,
        label_selector=f"owner=helm,name={release}",
        field_selector=f"type={helm.RELEASE_SECRET_TYPE}",
        _request_timeout=TIMEOUT,
    ).items
    if not secrets:
        result.add(
            name,
            False,
            f"no Helm release {release} in namespace {namespace}",
            "run `pulumi up` for this stack; if the release was removed by hand, `pulumi refresh` first",
        )
        return
    latest = max(
        (helm.from_secret_data((s.data or {}).get("release", "")) for s in secrets), key=lambda r: r.revision
    )
    where = f"{namespace}/{release} revision {latest.revision} ({latest.chart} {latest.chart_version})"
    if latest.status != "deployed":
        why = f": {latest.description}" if latest.description else ""
        result.add(
            name,
            False,
            f"{where} is {latest.status}{why}",
            f"see `helm history {release} -n {namespace}` and the pods' events; fix the cause and run `pulumi up`",
        )
    elif version and not _same_version(latest.chart_version, version):
        result.add(
            name,
            False,
            f"{where} is deployed but the config names chart {version}",
            "run `pulumi up` to roll the release to the configured chart version",
        )
    else:
        result.add(name, True, f"{where} deployed")


def _deployment_problem(d: client.V1Deployment) -> str | None:
    want = d.spec.replicas if d.spec.replicas is not None else 1
    status = d.status or client.V1DeploymentStatus()
    available = status.available_replicas or 0
    if available < want:
        cond = next((c for c in status.conditions or [] if c.type == "Available"), None)
        why = f" ({cond.reason}: {cond.message})" if cond is not None and cond.status != "True" else ""
        return f"{name_of(d)} {available}/{want} available{why}"
    return None


def _report_deployments(
    result: TargetResult, name: str, what: str, deployments: list[client.V1Deployment], namespace: str
) -> None:
    if not deployments:
        result.add(name, False, f"no Deployment of {what} in namespace {namespace}", "run `pulumi up`")
        return
    problems = [p for d in deployments if (p := _deployment_problem(d))]
    names = ", ".join(sorted(name_of(d) for d in deployments))
    if problems:
        result.add(
            name,
            False,
            "; ".join(problems),
            f"`kubectl -n {namespace} describe deployment` and `kubectl -n {namespace} get events`: pending pods "
            "usually mean missing capacity or an image that cannot be pulled",
        )
    else:
        result.add(name, True, f"available: {names}")


def _release_workloads(apps: client.AppsV1Api, result: TargetResult, release: str, namespace: str) -> None:
    items = apps.list_namespaced_deployment(namespace, _request_timeout=TIMEOUT).items
    mine = [d for d in items if annotations_of(d).get(RELEASE_ANNOTATION) == release]
    _report_deployments(result, f"workloads.{release}", f"release {release}", mine, namespace)


def _preinstalled_cert_manager(apps: client.AppsV1Api, result: TargetResult) -> None:
    ns = compat.CERT_MANAGER_NAMESPACE
    items = apps.list_namespaced_deployment(
        ns, label_selector=CERT_MANAGER_COMPONENTS, _request_timeout=TIMEOUT
    ).items
    _report_deployments(result, "workloads.cert-manager", "the pre-installed cert-manager", items, ns)


def _webhook_ca(api: client.ApiClient, result: TargetResult) -> None:
    name, release = "webhook.ca-injected", compat.INJECTION_WEBHOOK_RELEASE
    items = (
        client.AdmissionregistrationV1Api(api)
        .list_mutating_webhook_configuration(_request_timeout=TIMEOUT)
        .items
    )
    mine = [w for w in items if annotations_of(w).get(RELEASE_ANNOTATION) == release]
    if not mine:
        result.add(
            name,
            False,
            f"no MutatingWebhookConfiguration of release {release}",
            "the injection-webhook release did not install its webhook: check `helm status` and run `pulumi up`",
        )
        return
    missing = [
        f"{name_of(cfg)}/{hook.name}"
        for cfg in mine
        for hook in cfg.webhooks or []
        if not (hook.client_config and hook.client_config.ca_bundle)
    ]
    names = ", ".join(sorted(name_of(w) for w in mine))
    if missing:
        result.add(
            name,
            False,
            f"caBundle empty on {', '.join(missing)}",
            "cert-manager's cainjector has not injected the CA: check the cert-manager-cainjector pod's log and "
            f"the Certificate in namespace {compat.MLDIAGNOSTICS_NAMESPACE} (`kubectl get certificate -A`)",
        )
    else:
        result.add(name, True, f"{names}: CA injected")


def _opt_in_label(core: client.CoreV1Api, result: TargetResult, namespace: str) -> None:
    name, label = f"namespace.{namespace}", compat.OPT_IN_LABEL
    try:
        ns = core.read_namespace(namespace, _request_timeout=TIMEOUT)
    except ApiException as e:
        if e.status != 404:
            raise
        result.add(
            name,
            False,
            f"namespace {namespace} does not exist",
            "create it (workloadNamespaces create: true) and run `pulumi up`",
        )
        return
    value = labels_of(ns).get(label)
    if value == "true":
        result.add(name, True, f"{label}=true")
    else:
        found = f"{label}={value}" if value is not None else f"no {label} label"
        result.add(
            name,
            False,
            found,
            f"run `pulumi up` (it labels the namespace {label}=true); a label removed by hand drifts",
        )


def check_in_cluster(
    api: client.ApiClient, result: TargetResult, rec: InClusterRecord, log_lines: int, all_logs: bool = False
) -> None:
    """Every in-cluster check through one client, closed afterwards."""
    try:
        probe(api)
        check_cluster(api, result, rec, log_lines=log_lines, all_logs=all_logs)
    finally:
        api.close()
