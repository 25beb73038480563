"""The Diagon checks: the DaemonSet's pods scheduled (zero names the node selection to check), admitted by
Pod Security admission (refused pods name the label to add), all ready (each node the DaemonSet selects
without a ready pod is named with why: its Ready condition, or the scheduler's message on its pending pod),
running the configured image, and the pods' recent logs holding the daemon's three signatures (the ones the
vendor docs tell you to look for after `kubectl apply`).

The number of requests does not grow with the cluster: pods and nodes are read with paginated lists
(`PAGE` objects a page), and the logs of a fixed sample of the ready pods (`LOG_SAMPLE`) plus every pod not
ready are read, concurrently; `all_logs` reads every pod's. Pods and nodes stay JSON (`Obj`): the client's
models cost six times the lists' own time at thousands of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ml_diagnostics.verify_record import DiagonRecord
from program.clouds.kubernetes_client import labels_of
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


Obj = dict[str, Any]  # a pod or node as the API server sends it


def list_all(call: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Obj]:
    """Every item of a paginated list (`limit`/`continue`), as JSON."""
    items: list[Obj] = []
    token = None
    while True:
        more: dict[str, str] = {"_continue": token} if token else {}
        page = json.loads(call(*args, limit=PAGE, _preload_content=False, **more, **kwargs).data)
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def _condition(obj: Obj, kind: str) -> Obj | None:
    return next((c for c in _status(obj).get("conditions") or [] if c.get("type") == kind), None)


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


def selects(spec: client.V1PodSpec, node: Obj) -> bool:
    """Whether the DaemonSet's pod spec places a pod on this node (nodeSelector, required node affinity,
    NoSchedule/NoExecute taints against its tolerations), as the DaemonSet controller decides."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.node_selector or {}).items()):
        return False
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required and required.node_selector_terms:
        name = _name(node)
        if not any(
            all(_requirement(e, labels.get(e.key)) for e in term.match_expressions or [])
            and all(
                _requirement(f, name if f.key == "metadata.name" else None) for f in term.match_fields or []
            )
            for term in required.node_selector_terms
        ):
            return False
    taints = [
        client.V1Taint(key=t.get("key"), value=t.get("value"), effect=t.get("effect"))
        for t in (node.get("spec") or {}).get("taints") or []
    ]
    return all(
        _tolerated(taint, spec.tolerations or [])
        for taint in taints
        if taint.effect in ("NoSchedule", "NoExecute")
    )


def node_not_ready(node: Obj) -> str | None:
    """The node's Ready condition in words when it is not True."""
    ready = _condition(node, "Ready")
    if ready is None:
        return "no Ready condition (its kubelet never reported)"
    if ready.get("status") == "True":
        return None
    why = f"Ready={ready.get('status')}" + (f" {ready['reason']}" if ready.get("reason") else "")
    return why + (f": {ready['message']}" if ready.get("message") else "")


def _pod_node(pod: Obj) -> str | None:
    """The node a DaemonSet pod is on, or is meant for (its affinity's metadata.name while pending)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("values"):
                return str(f["values"][0])
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


def _pod_not_ready(pod: Obj, nodes: dict[str, Obj] | None = None) -> str | None:
    """Why the pod is not ready, or None. A pod on a node that is not Ready counts as not ready: its last
    reported readiness is the kubelet's word from before (the controllers mark it only once the kubelet is
    silent)."""
    status = _status(pod)
    node = _pod_node(pod)
    down = node_not_ready(nodes[node]) if nodes and node in nodes else None
    ready = _condition(pod, "Ready")
    if ready is not None and ready.get("status") == "True" and not down:
        return None
    why = status.get("phase") or "Unknown"
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        # the scheduler's own message (its FailedScheduling event says the same)
        why = f"{why}, not scheduled: {scheduled.get('message') or scheduled.get('reason') or 'no reason given'}"
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated")
        if waiting.get("reason"):
            why = waiting["reason"] + (f" ({waiting['message']})" if waiting.get("message") else "")
        elif terminated:
            why = f"terminated: {terminated.get('reason')} (exit {terminated.get('exitCode')})"
    if down:
        why = f"{why} (node {node}: {down})"
    return f"{_name(pod)}{f' on {node}' if node else ''}: {why}"


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
        _name(pod)
        for pod in pods
        for c in (pod.get("spec") or {}).get("containers") or []
        if c.get("name") == DAEMON_NAME and c.get("image") != want
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
    running: list[Obj] = []
    for pod in sorted(pods, key=_name):
        if _status(pod).get("phase") != "Running":
            missing.append(f"{_name(pod)}: not running")
        else:
            running.append(pod)
    if all_logs:
        chosen = running
    else:
        unready = [pod for pod in running if _pod_not_ready(pod)]
        chosen = sorted(
            unready + sample([pod for pod in running if not _pod_not_ready(pod)], LOG_SAMPLE), key=_name
        )

    def absent_in(pod: Obj) -> list[str]:
        log = core.read_namespaced_pod_log(
            _name(pod), ns, container=DAEMON_NAME, tail_lines=log_lines, _request_timeout=timeout
        )
        return [s for s in LOG_SIGNATURES if s not in (log or "")]

    with ThreadPoolExecutor(max_workers=max(1, min(LOG_WORKERS, len(chosen)))) as pool:
        for pod, absent in zip(chosen, pool.map(absent_in, chosen), strict=True):
            if absent:
                missing.append(f"{_name(pod)} lacks {', '.join(repr(s) for s in absent)}")
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


def _nodes(core: client.CoreV1Api, timeout: tuple[float, float]) -> dict[str, Obj] | None:
    """Every node by name; None when verify may not list nodes (a role without it: the pods alone speak)."""
    try:
        return {_name(n): n for n in list_all(core.list_node, _request_timeout=timeout)}
    except ApiException as e:
        if e.status in (403, 404):
            return None
        raise
