"""The Diagon checks: the DaemonSet's pods scheduled (zero names the node selection to check), admitted by
Pod Security admission (refused pods name the label to add), all ready (each node the DaemonSet selects
without a ready pod is named with why: its Ready condition, or the scheduler's message on its pending pod),
running the configured image, and the pods' recent logs holding the daemon's three signatures (the ones the
vendor docs tell you to look for after `kubectl apply`).

The number of requests does not grow with the cluster: pods and nodes are read with paginated lists
(`PAGE` objects a page), and the logs of a fixed sample of the ready pods (`LOG_SAMPLE`) plus every pod not
ready are read, concurrently; `all_logs` reads every pod's."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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
PAGE = 5000  # objects per list request: one request up to this many nodes or pods
LOG_SAMPLE = 10  # ready pods whose log is read by default, besides every pod not ready
LOG_WORKERS = 8


def list_all(call: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
    """Every item of a paginated list (`limit`/`continue`)."""
    items: list[Any] = []
    token = None
    while True:
        page = (
            call(*args, limit=PAGE, _continue=token, **kwargs) if token else call(*args, limit=PAGE, **kwargs)
        )
        items.extend(page.items or [])
        token = page.metadata._continue if page.metadata else None
        if not token:
            return items


def sample(items: list[Any], size: int) -> list[Any]:
    """`size` items spread evenly over the list (all of them when there are no more), always the same ones."""
    if len(items) <= size:
        return list(items)
    return [items[i * len(items) // size] for i in range(size)]


def _requirement(e: client.V1NodeSelectorRequirement, value: str | None) -> bool:
    op, values = e.operator, e.values or []
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op in ("Gt", "Lt") and value is not None and value.lstrip("-").isdigit() and values:
        return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
    return False


def _tolerated(taint: client.V1Taint, tolerations: list[client.V1Toleration]) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.operator == "Exists" and (not t.key or t.key == taint.key):
            return True
        if t.key == taint.key and (t.value or "") == (taint.value or ""):
            return True
    return False


def selects(spec: client.V1PodSpec, node: client.V1Node) -> bool:
    """Whether the DaemonSet's pod spec places a pod on this node (nodeSelector, required node affinity,
    NoSchedule/NoExecute taints against its tolerations), as the DaemonSet controller decides."""
    labels = labels_of(node)
    if any(labels.get(k) != v for k, v in (spec.node_selector or {}).items()):
        return False
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required and required.node_selector_terms:
        name = name_of(node)
        if not any(
            all(_requirement(e, labels.get(e.key)) for e in term.match_expressions or [])
            and all(
                _requirement(f, name if f.key == "metadata.name" else None) for f in term.match_fields or []
            )
            for term in required.node_selector_terms
        ):
            return False
    taints = (node.spec.taints if node.spec else None) or []
    return all(
        _tolerated(taint, spec.tolerations or [])
        for taint in taints
        if taint.effect in ("NoSchedule", "NoExecute")
    )


def node_not_ready(node: client.V1Node) -> str | None:
    """The node's Ready condition in words when it is not True."""
    conditions = (node.status.conditions if node.status else None) or []
    ready = next((c for c in conditions if c.type == "Ready"), None)
    if ready is None:
        return "no Ready condition (its kubelet never reported)"
    if ready.status == "True":
        return None
    why = f"Ready={ready.status}" + (f" {ready.reason}" if ready.reason else "")
    return why + (f": {ready.message}" if ready.message else "")


def _pod_node(pod: client.V1Pod) -> str | None:
    """The node a DaemonSet pod is on, or is meant for (its affinity's metadata.name while pending)."""
    if pod.spec is None:
        return None
    if pod.spec.node_name:
        return str(pod.spec.node_name)
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    for term in (required.node_selector_terms if required else None) or []:
        for f in term.match_fields or []:
            if f.key == "metadata.name" and f.values:
                return str(f.values[0])
    return None


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


def _pod_not_ready(pod: client.V1Pod, nodes: dict[str, client.V1Node] | None = None) -> str | None:
    """Why the pod is not ready, or None. A pod on a node that is not Ready counts as not ready: its last
    reported readiness is the kubelet's word from before (the controllers mark it only once the kubelet is
    silent)."""
    status = pod.status or client.V1PodStatus()
    node = _pod_node(pod)
    down = node_not_ready(nodes[node]) if nodes and node in nodes else None
    ready = next((c for c in status.conditions or [] if c.type == "Ready"), None)
    if ready is not None and ready.status == "True" and not down:
        return None
    why = status.phase or "Unknown"
    scheduled = next((c for c in status.conditions or [] if c.type == "PodScheduled"), None)
    if scheduled is not None and scheduled.status == "False":
        # the scheduler's own message (its FailedScheduling event says the same)
        why = f"{why}, not scheduled: {scheduled.message or scheduled.reason or 'no reason given'}"
    for cs in status.container_statuses or []:
        if cs.state and cs.state.waiting and cs.state.waiting.reason:
            why = cs.state.waiting.reason + (
                f" ({cs.state.waiting.message})" if cs.state.waiting.message else ""
            )
        elif cs.state and cs.state.terminated:
            why = f"terminated: {cs.state.terminated.reason} (exit {cs.state.terminated.exit_code})"
    if down:
        why = f"{why} (node {node}: {down})"
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
    all_logs: bool = False,
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

    pods = list_all(
        core.list_namespaced_pod, ns, label_selector=f"name={DAEMON_NAME}", _request_timeout=timeout
    )
    _admission(core, result, ns, len(pods) < desired, timeout)
    nodes = _nodes(core, timeout)
    not_ready = [p for pod in pods if (p := _pod_not_ready(pod, nodes))]
    if nodes:
        # a node the DaemonSet selects with no pod at all (e.g. not-ready before the pod was made)
        placed = {_pod_node(pod) for pod in pods}
        not_ready += [
            f"node {name}: no Diagon pod" + (f" ({down})" if (down := node_not_ready(node)) else "")
            for name, node in sorted(nodes.items())
            if name not in placed and selects(template, node)
        ]
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
    running: list[client.V1Pod] = []
    for pod in sorted(pods, key=name_of):
        if (pod.status.phase if pod.status else None) != "Running":
            missing.append(f"{name_of(pod)}: not running")
        else:
            running.append(pod)
    if all_logs:
        chosen = running
    else:
        unready = [pod for pod in running if _pod_not_ready(pod)]
        chosen = sorted(
            unready + sample([pod for pod in running if not _pod_not_ready(pod)], LOG_SAMPLE), key=name_of
        )

    def absent_in(pod: client.V1Pod) -> list[str]:
        log = core.read_namespaced_pod_log(
            name_of(pod), ns, container=DAEMON_NAME, tail_lines=log_lines, _request_timeout=timeout
        )
        return [s for s in LOG_SIGNATURES if s not in (log or "")]

    with ThreadPoolExecutor(max_workers=max(1, min(LOG_WORKERS, len(chosen)))) as pool:
        for pod, absent in zip(chosen, pool.map(absent_in, chosen), strict=True):
            if absent:
                missing.append(f"{name_of(pod)} lacks {', '.join(repr(s) for s in absent)}")
    read = f"read {len(chosen)} of {len(pods)} pod logs"
    if len(chosen) < len(running):
        read += f" (a sample of {LOG_SAMPLE} and every pod not ready; --all-logs reads every one)"
    if missing:
        result.add(
            "diagon.logs",
            False,
            f"{'; '.join(missing)} ({read})",
            f"`kubectl -n {ns} logs -l name={DAEMON_NAME} --tail=50`: no 'Stream established.' means the daemon "
            "cannot reach the ML Diagnostics control plane (egress, Workload Identity / diagon.gcpServiceAccount "
            "permissions); no heartbeat after registration means the stream dropped. Right after a deploy, "
            "rerun with --wait SECONDS",
        )
    else:
        result.add("diagon.logs", True, f"{read}: all show the {len(LOG_SIGNATURES)} log signatures")


def _nodes(core: client.CoreV1Api, timeout: tuple[float, float]) -> dict[str, client.V1Node] | None:
    """Every node by name; None when verify may not list nodes (a role without it: the pods alone speak)."""
    try:
        return {name_of(n): n for n in list_all(core.list_node, _request_timeout=timeout)}
    except ApiException as e:
        if e.status in (403, 404):
            return None
        raise
