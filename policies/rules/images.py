"""Container image rules for Kubernetes workloads (Deployments, DaemonSets, Pods, ...)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

WORKLOAD_TYPES = {
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:apps/v1:Deployment",
    "kubernetes:apps/v1:StatefulSet",
    "kubernetes:batch/v1:Job",
    "kubernetes:core/v1:Pod",
}


def pod_spec(resource_type: str, props: Any) -> dict | None:
    spec = props.get("spec") or {}
    if resource_type == "kubernetes:core/v1:Pod":
        return spec
    return (spec.get("template") or {}).get("spec")


def containers(resource_type: str, props: Any) -> Iterator[dict]:
    spec = pod_spec(resource_type, props) or {}
    for key in ("initContainers", "containers"):
        yield from spec.get(key) or []


def image_tag(image: str) -> tuple[str | None, str | None]:
    """Returns (tag, digest) of an image reference."""
    digest = None
    if "@" in image:
        image, digest = image.split("@", 1)
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else None
    return tag, digest


def _validate_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in WORKLOAD_TYPES:
        return
    for c in containers(args.resource_type, args.props):
        image = c.get("image") or ""
        tag, digest = image_tag(image)
        if digest:
            continue
        if tag is None or tag == "latest":
            report(
                f"container '{c.get('name')}' uses image '{image}', which is not pinned: every node may pull "
                "a different build and a rollback is impossible. Pin a version tag or a digest in the stack "
                "config (e.g. diagon.image) and run `pulumi up`."
            )


images_pinned = ResourceValidationPolicy(
    name="k8s-images-pinned",
    description="Container images are pinned to a tag other than 'latest' or to a digest.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate_pinned,
)
