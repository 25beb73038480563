"""Azure ML extension checks inside the cluster (through an `azureMl` target's verifyAccess), read-only and
exactly the reads `ml_diagnostics.verify_rbac.azure_verify_rules` grants:

- `azureml.namespace`: the release namespace exists and is not terminating (troubleshooting guide: "unable to
  create new content in namespace azureml because it's being terminated").
- `azureml.healthcheck.<code>`: the extension's own report, configmap `arcml-healthcheck` (sections pre-install,
  pre-upgrade, pre-rollback, pre-delete), code by code with the guide's fix (Error Code of HealthCheck); a code
  this table does not know is shown as it is. The codes fail the check while the extension is not Succeeded.
- `azureml.pods`: the components the Azure ML extension docs list for the chosen workloads and install flags (relayserver on
  Arc only), Running and ready, or why not (waiting reason, scheduling message).
- `azureml.clash.*`: what the guide names as clashes, against the chosen settings: a Prometheus operator or
  Volcano another release installed (their CRDs' Helm owner) with installPromOp/installVolcano not false, an
  IngressClass of the nginx controller class the extension would install (AKS) owned by another release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ml_diagnostics.verify_rbac import AZUREML_CLASH_CRDS, AZUREML_HEALTHCHECK_CONFIGMAP, AZUREML_NAMESPACE
from ml_diagnostics.verify_record import AzureMlRecord
from program.kinds.azure_ml.model import NGINX_DEFAULT_CONTROLLER
from program.verify.result import TargetResult

GUIDE = "how-to-troubleshoot-kubernetes-extension.md"
SECTIONS = ("pre-install", "pre-upgrade", "pre-rollback", "pre-delete")
_LEGACY_FE_FIX = (
    "delete the legacy azureml-fe components of AKS v1 inference (kubectl delete sa azureml-fe; clusterrole "
    "azureml-fe-role; clusterrolebinding azureml-fe-binding; svc azureml-fe azureml-fe-int-http; deploy "
    "azureml-fe; secret azuremlfessl; cm azuremlfeconfig), then `pulumi up`"
)
# code -> (name, what it means, the fix) from the guide's "Error Code of HealthCheck" table
HEALTHCHECK_CODES: dict[str, tuple[str, str, str]] = {
    "E40001": (
        "LOAD_BALANCER_NOT_SUPPORT",
        "the cluster provisions no load balancer for inferenceRouterServiceType LoadBalancer",
        "configure a load balancer in the cluster, or set inference.routerServiceType: NodePort or ClusterIP",
    ),
    "E40002": (
        "INSUFFICIENT_NODE",
        "inferenceRouterHA needs at least three nodes",
        "set inference.routerHA: false (and cluster.nodeCount to the real count), or add nodes",
    ),
    "E40003": (
        "INTERNAL_LOAD_BALANCER_NOT_SUPPORT",
        "only AKS supports the internal load balancer, and only type azure",
        "remove inference.internalLoadBalancerProvider unless the cluster is AKS",
    ),
    "E40007": (
        "INVALID_SSL_SETTING",
        "the SSL key or certificate is not valid, or the CNAME does not fit the certificate",
        "give inference.sslCertPem and sslKeyPem (or sslSecret) whose certificate covers inference.sslCname",
    ),
    "E45002": (
        "PROMETHEUS_CONFLICT",
        "the extension's Prometheus operator conflicts with the one the cluster already runs",
        "set installPromOp: false and let the existing operator watch the azureml namespace (guide: Prometheus "
        "operator)",
    ),
    "E45003": (
        "BAD_NETWORK_CONNECTIVITY",
        "the cluster cannot reach the endpoints the extension needs",
        "meet the network requirements for Kubernetes compute (how-to-access-azureml-behind-firewall.md)",
    ),
    "E45004": ("AZUREML_FE_ROLE_CONFLICT", "legacy azureml-fe roles are in the cluster", _LEGACY_FE_FIX),
    "E45005": (
        "AZUREML_FE_DEPLOYMENT_CONFLICT",
        "a legacy azureml-fe deployment is in the cluster",
        _LEGACY_FE_FIX,
    ),
}
_CODE = re.compile(r"\bE[0-9]{5}\b", re.ASCII)


@dataclass(frozen=True)
class Component:
    name: str  # pod name prefix; {ext} is the extension name
    training: bool
    inference: bool
    when: str = ""  # install flag or cluster kind it depends on


# The Azure ML extension docs' component table ("Azure Machine Learning 확장 구성 요소 검토"); fluent-bit is left out: the
# extension's release notes (1.1.17) moved it from a DaemonSet into sidecars.
COMPONENTS = (
    Component("relayserver", True, True, "arc"),
    Component("gateway", True, True),
    Component("aml-operator", True, False),
    Component("metrics-controller-manager", True, True),
    Component("{ext}-kube-state-metrics", True, True),
    Component("{ext}-prometheus-operator", True, True, "install_prom_op"),
    Component("amlarc-identity-controller", False, True),
    Component("amlarc-identity-proxy", False, True),
    Component("azureml-fe-v2", False, True),
    Component("inference-operator-controller-manager", False, True),
    Component("volcano-admission", True, False, "install_volcano"),
    Component("volcano-controllers", True, False, "install_volcano"),
    Component("volcano-scheduler", True, False, "install_volcano"),
    Component("{ext}-dcgm-exporter", True, True, "install_dcgm_exporter"),
    Component("nvidia-device-plugin-daemonset", True, True, "install_nvidia_device_plugin"),
    Component("prometheus-prom-prometheus", True, True),
)
# install flags the extension defaults to true (installPromOp, installVolcano); the others default to false
_DEFAULT_ON = {"install_prom_op", "install_volcano"}


def expected_components(t: AzureMlRecord) -> list[str]:
    out = []
    for c in COMPONENTS:
        if not ((c.training and t.training) or (c.inference and t.inference)):
            continue
        if c.when == "arc":
            if t.cluster.kind != "arc":
                continue
        elif c.when:
            flag = getattr(t, c.when)
            if not (flag if flag is not None else c.when in _DEFAULT_ON):
                continue
        out.append(c.name.format(ext=t.extension_name))
    return out


def check_in_cluster(t: AzureMlRecord, api: Any, result: TargetResult, extension_state: str) -> None:
    from kubernetes import client

    from program.clouds.kubernetes_client import guarded

    core = client.CoreV1Api(api)
    present: list[bool] = []
    guarded(result, "azureml.namespace", lambda: present.append(_namespace(core, result)))
    if not present or not present[0]:
        return
    guarded(result, "azureml.healthcheck", lambda: _healthcheck(core, result, extension_state))
    guarded(result, "azureml.pods", lambda: _pods(core, t, result))
    guarded(
        result,
        "azureml.clash",
        lambda: _clashes(t, client.ApiextensionsV1Api(api), client.NetworkingV1Api(api), result),
    )


def _not_found(e: Exception) -> bool:
    return getattr(e, "status", None) == 404


def _namespace(core: Any, result: TargetResult) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        ns = core.read_namespace(AZUREML_NAMESPACE)
    except ApiException as e:
        if not _not_found(e):
            raise
        result.add(
            "azureml.namespace",
            False,
            f"namespace {AZUREML_NAMESPACE} not found: the extension has not installed into this cluster",
            "run `pulumi up`; if the extension shows Succeeded, check that verifyAccess reaches the same cluster",
        )
        return False
    if (ns.status and ns.status.phase == "Terminating") or ns.metadata.deletion_timestamp:
        result.add(
            "azureml.namespace",
            False,
            f"namespace {AZUREML_NAMESPACE} is terminating: an uninstall has not finished",
            f"wait until `az k8s-extension show` no longer finds the extension, then `pulumi up` ({GUIDE}: being "
            "terminated)",
        )
        return False
    result.add("azureml.namespace", True, f"namespace {AZUREML_NAMESPACE} is Active")
    return True


def healthcheck_findings(data: dict[str, str]) -> list[tuple[str, str, str]]:
    """(section, code, the report's line) for every code in the report, in section order."""
    found: dict[tuple[str, str], str] = {}
    for key in sorted(data, key=lambda k: next((i for i, s in enumerate(SECTIONS) if s in k), len(SECTIONS))):
        section = next((s for s in SECTIONS if s in key), key)
        for line in str(data[key]).splitlines():
            for code in _CODE.findall(line):
                found.setdefault((section, code), line.strip()[:200])
    return [(s, c, line) for (s, c), line in found.items()]


def _healthcheck(core: Any, result: TargetResult, extension_state: str) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        cm = core.read_namespaced_config_map(AZUREML_HEALTHCHECK_CONFIGMAP, AZUREML_NAMESPACE)
    except ApiException as e:
        if not _not_found(e):
            raise
        result.add(
            "azureml.healthcheck", True, f"no {AZUREML_HEALTHCHECK_CONFIGMAP} report (none written yet)"
        )
        return
    findings = healthcheck_findings(cm.data or {})
    if not findings:
        result.add("azureml.healthcheck", True, f"{AZUREML_HEALTHCHECK_CONFIGMAP}: no error codes")
        return
    failing = extension_state != "Succeeded"
    for section, code, line in findings:
        known = HEALTHCHECK_CODES.get(code)
        if known:
            name, meaning, fix = known
            detail = f"{section}: {code} {name}: {meaning}"
        else:
            detail, fix = (
                f"{section}: {code} (not in the guide's table): {line}",
                (
                    f"see `kubectl describe configmap -n {AZUREML_NAMESPACE} {AZUREML_HEALTHCHECK_CONFIGMAP}` and "
                    f"`kubectl logs healthcheck -n {AZUREML_NAMESPACE}`"
                ),
            )
        if not failing:
            detail += " (the extension is Succeeded: an earlier run's report)"
        result.add(
            f"azureml.healthcheck.{code}", not failing, detail, f"{fix} ({GUIDE}: Error Code of HealthCheck)"
        )


def _pod_problem(pod: Any) -> str | None:
    status = pod.status
    for cs in (status.container_statuses or []) if status else []:
        if cs.ready:
            continue
        state = cs.state
        if state and state.waiting:
            return f"{cs.name} {state.waiting.reason}"
        if state and state.terminated:
            return f"{cs.name} terminated ({state.terminated.reason})"
        return f"{cs.name} not ready"
    if status is None or status.phase != "Running":
        why = (
            next(
                (
                    c.message
                    for c in (status.conditions or [])
                    if c.type == "PodScheduled" and c.status == "False"
                ),
                None,
            )
            if status
            else None
        )
        return f"{status.phase if status else 'no status'}{f': {why}' if why else ''}"
    if not status.container_statuses:
        return "no container status"
    return None


def _pods(core: Any, t: AzureMlRecord, result: TargetResult) -> None:
    pods = core.list_namespaced_pod(AZUREML_NAMESPACE).items
    missing, broken = [], []
    for component in expected_components(t):
        mine = [p for p in pods if p.metadata.name.startswith(component + "-")]
        if not mine:
            missing.append(component)
            continue
        problems = [f"{p.metadata.name}: {why}" for p in mine if (why := _pod_problem(p))]
        if len(problems) == len(mine):
            broken.extend(problems)
    if not missing and not broken:
        result.add("azureml.pods", True, f"{len(expected_components(t))} components Running and ready")
        return
    parts = ([f"missing: {', '.join(missing)}"] if missing else []) + (
        [f"not ready: {'; '.join(broken)}"] if broken else []
    )
    result.add(
        "azureml.pods",
        False,
        "; ".join(parts),
        f"`kubectl get pods -n {AZUREML_NAMESPACE}` and `kubectl get events -n {AZUREML_NAMESPACE} "
        "--sort-by=.lastTimestamp` show why; Pending pods on small nodes need larger ones (cluster.vmSize)",
    )


def _helm_owner(meta: Any) -> str | None:
    annotations = (meta.annotations or {}) if meta else {}
    name, ns = annotations.get("meta.helm.sh/release-name"), annotations.get("meta.helm.sh/release-namespace")
    return f"{ns}/{name}" if name else None


def _clashes(t: AzureMlRecord, ext_api: Any, net_api: Any, result: TargetResult) -> None:
    from kubernetes.client.exceptions import ApiException

    ours = f"{AZUREML_NAMESPACE}/{t.extension_name}"
    for what, setting, flag in (
        ("prometheus", "installPromOp", t.install_prom_op),
        ("volcano", "installVolcano", t.install_volcano),
    ):
        crd_name = AZUREML_CLASH_CRDS[what]
        try:
            crd = ext_api.read_custom_resource_definition(crd_name)
        except ApiException as e:
            if not _not_found(e):
                raise
            result.add(f"azureml.clash.{what}", True, f"{crd_name} absent: no other {what} installed")
            continue
        owner = _helm_owner(crd.metadata) or "no Helm release"
        if owner == ours:
            result.add(f"azureml.clash.{what}", True, f"{crd_name} belongs to the extension")
        elif flag is False:
            result.add(
                f"azureml.clash.{what}", True, f"{crd_name} belongs to {owner}; {setting}: false reuses it"
            )
        else:
            result.add(
                f"azureml.clash.{what}",
                False,
                f"{crd_name} belongs to {owner}, not to the extension: the cluster runs another {what} and the "
                "extension would install its own",
                f"set {setting}: false (the troubleshooting guide's "
                f"{'Prometheus operator' if what == 'prometheus' else 'Volcano Scheduler'})",
            )
    if t.cluster.kind != "aks":
        return  # the extension installs its nginx ingress on AKS only
    controller = t.nginx_ingress_controller or NGINX_DEFAULT_CONTROLLER
    others = [
        ic.metadata.name
        for ic in net_api.list_ingress_class().items
        if ic.spec and ic.spec.controller == controller and _helm_owner(ic.metadata) != ours
    ]
    if others:
        result.add(
            "azureml.clash.ingress-class",
            False,
            f"IngressClass {', '.join(others)} of controller {controller} belongs to another nginx ingress controller",
            "set nginxIngressController to another class, e.g. k8s.io/amlarc-ingress-nginx (the troubleshooting "
            "guide's Ingress Nginx controller), or change the existing controller's class",
        )
    else:
        result.add("azureml.clash.ingress-class", True, f"no other IngressClass of controller {controller}")
