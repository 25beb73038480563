"""The Diagon checks: the DaemonSet's pods scheduled (zero names the node selection to check), admitted by
Pod Security admission (refused pods name the label to add), all ready,
running the configured image, and every pod's recent log holding the daemon's three signatures (the ones
the vendor docs tell you to look for after `kubectl apply`)."""

from __future__ import annotations

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ml_diagnostics.verify_record import DiagonRecord
from program.clouds.kubernetes_client import labels_of, name_of
from program.verify.result import TargetResult

DAEMON_NAME = "diagon-daemon"  # ml_diagnostics/diagon.py: DaemonSet, container and pod label `name`
LOG_SIGNATURES = (
    "Stream established.",
    "Received successful DaemonRegistrationResponse from backend",
    "Sending DaemonHeartbeatRequest",
)


def node_selection(spec: client.V1PodSpec) -> str:
    """How the DaemonSet's pods choose nodes, in words, from the live spec."""
    if spec.node_selector:
        return "nodeSelector " + ", ".join(f"{k}={v}" for k, v in sorted(spec.node_selector.items()))
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required and required.node_selector_terms:
        keys = [
            f"{e.key}" if e.operator == "Exists" else f"{e.key} {e.operator} {','.join(e.values or [])}"
            for t in required.node_selector_terms
            for e in t.match_expressions or []
        ]
        return "node affinity: any node with " + " or ".join(keys)
    return "no node selection (every node)"


def _pod_not_ready(pod: client.V1Pod) -> str | None:
    status = pod.status or client.V1PodStatus()
    ready = next((c for c in status.conditions or [] if c.type == "Ready"), None)
    if ready is not None and ready.status == "True":
        return None
    why = status.phase or "Unknown"
    for cs in status.container_statuses or []:
        if cs.state and cs.state.waiting and cs.state.waiting.reason:
            why = cs.state.waiting.reason + (
                f" ({cs.state.waiting.message})" if cs.state.waiting.message else ""
            )
        elif cs.state and cs.state.terminated:
            why = f"terminated: {cs.state.terminated.reason} (exit {cs.state.terminated.exit_code})"
    node = pod.spec.node_name if pod.spec else None
    return f"{name_of(pod)}{f' on {node}' if node else ''}: {why}"


POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce"
REFUSING_LEVELS = ("baseline", "restricted")


def _admission(
    core: client.CoreV1Api, result: TargetResult, ns: str, pods_missing: bool, timeout: tuple[float, float]
) -> None:
    """diagon.admission: the daemon is a privileged hostNetwork pod, which Pod Security admission refuses at
    the baseline and restricted levels (the namespace's label, or the cluster's default)."""
    fix = (
        f"`kubectl label namespace {ns} {POD_SECURITY_ENFORCE}=privileged --overwrite` (a namespace the program "
        "creates, diagon.createNamespace: true, carries it)"
    )
    labels = labels_of(core.read_namespace(ns, _request_timeout=timeout))
    level = labels.get(POD_SECURITY_ENFORCE)
    if level in REFUSING_LEVELS:
        result.add(
            "diagon.admission",
            False,
            f"namespace {ns} enforces Pod Security {level!r}, which refuses the privileged hostNetwork daemon",
            fix,
        )
        return
    if pods_missing:
        events = core.list_namespaced_event(
            ns,
            field_selector=f"involvedObject.name={DAEMON_NAME},reason=FailedCreate",
            _request_timeout=timeout,
        ).items
        refused = [e.message for e in events if e.message and "violates PodSecurity" in e.message]
        if refused:
            result.add(
                "diagon.admission",
                False,
                f"pods refused by admission: {refused[-1][:300]}",
                fix + "; the cluster's default Pod Security level applies to a namespace without the label",
            )
            return
    result.add(
        "diagon.admission",
        True,
        f"admitted (namespace {ns} Pod Security level: {level or 'the cluster default'})",
    )


def check(
    core: client.CoreV1Api,
    apps: client.AppsV1Api,
    result: TargetResult,
    d: DiagonRecord,
    *,
    log_lines: int,
    timeout: tuple[float, float],
) -> None:
    """diagon.scheduled, diagon.ready, diagon.image, diagon.logs (the first alone when no pod is desired)."""
    ns = d.namespace
    try:
        ds = apps.read_namespaced_daemon_set(DAEMON_NAME, ns, _request_timeout=timeout)
    except ApiException as e:
        if e.status != 404:
            raise
        result.add(
            "diagon.scheduled",
            False,
            f"DaemonSet {ns}/{DAEMON_NAME} not found",
            "run `pulumi up` (diagon.enabled is true)",
        )
        return
    desired = (ds.status.desired_number_scheduled if ds.status else 0) or 0
    template = ds.spec.template.spec or client.V1PodSpec(containers=[])  # absent: no selection, no container
    selection = node_selection(template)
    if desired == 0:
        result.add(
            "diagon.scheduled",
            False,
            f"0 pods scheduled: no node matches the DaemonSet's {selection}",
            "label the GPU/TPU nodes (`kubectl get nodes --show-labels`; e.g. `kubectl label node NODE "
            "nvidia.com/gpu.present=true`) or set diagon.nodeSelector / diagon.acceleratorNodeLabels to labels "
            "they carry, then `pulumi up`",
        )
        return
    result.add("diagon.scheduled", True, f"{desired} pod(s) desired ({selection})")

    pods = core.list_namespaced_pod(ns, label_selector=f"name={DAEMON_NAME}", _request_timeout=timeout).items
    _admission(core, result, ns, len(pods) < desired, timeout)
    not_ready = [p for pod in pods if (p := _pod_not_ready(pod))]
    ready_count = (ds.status.number_ready if ds.status else 0) or 0
    if not_ready or ready_count < desired or len(pods) < desired:
        detail = f"{ready_count}/{desired} ready" + (f"; {'; '.join(not_ready)}" if not_ready else "")
        result.add(
            "diagon.ready",
            False,
            detail,
            f"`kubectl -n {ns} describe pod -l name={DAEMON_NAME}`: ImagePullBackOff means the image or its "
            "registry access is wrong; CrashLoopBackOff shows its cause in `kubectl logs --previous`",
        )
    else:
        result.add("diagon.ready", True, f"{ready_count}/{desired} ready")

    want = d.image
    template_images = [c.image or "(no image)" for c in template.containers if c.name == DAEMON_NAME]
    stale = sorted(
        name_of(pod)
        for pod in pods
        for c in (pod.spec.containers if pod.spec else [])
        if c.name == DAEMON_NAME and c.image != want
    )
    if template_images != [want]:
        result.add(
            "diagon.image",
            False,
            f"DaemonSet runs {', '.join(template_images) or 'no diagon-daemon container'}, config says {want}",
            "the DaemonSet was changed outside Pulumi (e.g. `kubectl set image`): run `pulumi up` to restore the "
            "configured image, or change diagon.image in the stack config",
        )
    elif stale:
        result.add(
            "diagon.image",
            False,
            f"pods still on an older image: {', '.join(stale)}",
            f"the rollout is in progress: `kubectl -n {ns} rollout status daemonset/{DAEMON_NAME}` (or --wait)",
        )
    else:
        result.add("diagon.image", True, want)

    missing: list[str] = []
    for pod in sorted(pods, key=name_of):
        name = name_of(pod)
        if (pod.status.phase if pod.status else None) != "Running":
            missing.append(f"{name}: not running")
            continue
        log = core.read_namespaced_pod_log(
            name, ns, container=DAEMON_NAME, tail_lines=log_lines, _request_timeout=timeout
        )
        absent = [s for s in LOG_SIGNATURES if s not in (log or "")]
        if absent:
            missing.append(f"{name} lacks {', '.join(repr(s) for s in absent)}")
    if missing:
        result.add(
            "diagon.logs",
            False,
            "; ".join(missing),
            f"`kubectl -n {ns} logs -l name={DAEMON_NAME} --tail=50`: no 'Stream established.' means the daemon "
            "cannot reach the ML Diagnostics control plane (egress, Workload Identity / diagon.gcpServiceAccount "
            "permissions); no heartbeat after registration means the stream dropped. Right after a deploy, "
            "rerun with --wait SECONDS",
        )
    else:
        result.add("diagon.logs", True, f"{len(pods)} pod(s) show all {len(LOG_SIGNATURES)} log signatures")
