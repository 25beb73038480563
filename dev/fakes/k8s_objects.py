"""Complete Kubernetes objects for the loopback API server (dev/fakes/k8s_api.py) to serve: namespaces, Helm
release records, Deployments, DaemonSets and their pods, events, webhooks, CRDs, IngressClasses, config maps.
Complete, because the official client verify reads them with validates required fields.
"""

from __future__ import annotations

from typing import Any

from program.in_cluster import helm


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def helm_release_secret(
    release: str, ns: str, revision: int, status: str, chart: str, version: str, description: str = ""
) -> dict[str, Any]:
    """A Helm v3 release record as `helm install` writes it (values included, as Helm keeps them)."""
    record = {
        "name": release,
        "namespace": ns,
        "version": revision,
        "info": {"status": status, "description": description or f"{status} by helm"},
        "chart": {"metadata": {"name": chart, "version": version, "apiVersion": "v2"}},
        "config": {"token": "s3cr3t-value-in-release-values"},
        "manifest": "---\n# Source: chart/templates/x.yaml\n",
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": helm.RELEASE_SECRET_TYPE,
        "metadata": {
            "name": f"sh.helm.release.v1.{release}.v{revision}",
            "namespace": ns,
            "labels": {"owner": "helm", "name": release, "version": str(revision), "status": status},
        },
        "data": {"release": helm.encode(record)},
    }


def _template(labels: dict[str, str], container: str, image: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {"containers": [{"name": container, "image": image}]}}


def deployment(
    name: str,
    ns: str,
    *,
    release: str | None = None,
    replicas: int = 1,
    available: int = 1,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    annotations = (
        {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns} if release else {}
    )
    ok = available >= replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations, "labels": labels or {}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": _template({"app": name}, name, f"example.com/{name}:1"),
        },
        "status": {
            "replicas": replicas,
            "availableReplicas": available,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True" if ok else "False",
                    "reason": "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
                    "message": "Deployment has minimum availability."
                    if ok
                    else "Deployment does not have minimum availability.",
                }
            ],
        },
    }


def mutating_webhook(name: str, release: str, ns: str, ca_bundle: str) -> dict[str, Any]:
    hook = {
        "name": "mldiagnostics.injection.webhook.example",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"service": {"name": "webhook", "namespace": ns, "path": "/mutate"}},
    }
    if ca_bundle:
        hook["clientConfig"]["caBundle"] = ca_bundle
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": name,
            "annotations": {
                "meta.helm.sh/release-name": release,
                "meta.helm.sh/release-namespace": ns,
                "cert-manager.io/inject-ca-from": f"{ns}/webhook-cert",
            },
        },
        "webhooks": [hook],
    }


def daemon_set(
    name: str,
    ns: str,
    image: str,
    *,
    desired: int,
    ready: int,
    node_selector: dict[str, str] | None = None,
    affinity_labels: list[str] | None = None,
) -> dict[str, Any]:
    template = _template({"name": name}, name, image)
    if node_selector:
        template["spec"]["nodeSelector"] = node_selector
    if affinity_labels:
        terms = [{"matchExpressions": [{"key": k, "operator": "Exists"}]} for k in affinity_labels]
        template["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"matchLabels": {"name": name}}, "template": template},
        "status": {
            "currentNumberScheduled": desired,
            "desiredNumberScheduled": desired,
            "numberMisscheduled": 0,
            "numberReady": ready,
            "numberAvailable": ready,
        },
    }


def pod(
    name: str,
    ns: str,
    container: str,
    image: str,
    *,
    node: str,
    ready: bool = True,
    waiting: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {"startedAt": "2026-11-30T10:00:00Z"}}
    if waiting:
        state = {"waiting": {"reason": waiting, "message": f"{waiting} for {image}"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {"name": container}},
        "spec": {"nodeName": node, "containers": [{"name": container, "image": image}]},
        "status": {
            "phase": "Running" if not waiting else "Pending",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {
                    "name": container,
                    "image": image,
                    "imageID": "",
                    "ready": ready,
                    "restartCount": 0,
                    "state": state,
                }
            ],
        },
    }


def event(
    namespace: str, name: str, involved: str, reason: str, message: str, kind: str = "DaemonSet"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": kind, "name": involved, "namespace": namespace},
        "reason": reason,
        "message": message,
        "type": "Warning",
    }


def helm_owned(release: str | None, ns: str = "azureml") -> dict[str, Any]:
    return {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns} if release else {}


def config_map(name: str, ns: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def terminating_namespace(name: str) -> dict[str, Any]:
    obj = namespace(name)
    obj["metadata"]["deletionTimestamp"] = "2026-11-30T10:00:00Z"
    obj["status"] = {"phase": "Terminating"}
    return obj


def crd(name: str, *, release: str | None = None, release_ns: str = "azureml") -> dict[str, Any]:
    plural, group = name.split(".", 1)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "annotations": helm_owned(release, release_ns)},
        "spec": {
            "group": group,
            "names": {"plural": plural, "kind": plural.capitalize().rstrip("s")},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }


def ingress_class(
    name: str, controller: str, *, release: str | None = None, release_ns: str = "azureml"
) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": name, "annotations": helm_owned(release, release_ns)},
        "spec": {"controller": controller},
    }


def pending_pod(name: str, ns: str, message: str) -> dict[str, Any]:
    """A pod the scheduler cannot place (e.g. `0/3 nodes are available: 3 Insufficient cpu.`)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {}},
        "spec": {"containers": [{"name": "main", "image": "example.com/x:1"}]},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
            ],
        },
    }
