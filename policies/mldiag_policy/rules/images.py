"""Container image rules for Kubernetes workloads (Deployments, DaemonSets, Pods, ...).

Source: ML Diagnostics docs ships the Diagon image as `:latest` with `imagePullPolicy: Always` and updates it with
`kubectl set image`; an unpinned image means every node may run a different build and no rollback exists.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import ResourceValidationArgs, Severity

from .. import compat
from ..common import IN_CLUSTER, Report, Unknowns, resource_rule
from ..forms import is_patch
from ..levels import ADVISORY, FOLLOWS_BASE, MANDATORY, with_options
from ..values import name_of
from .kubernetes import WORKLOAD_TYPES, containers


def image_registry_path(image: str) -> str:
    """The full `registry/path` of an image name; Docker Hub short names become docker.io/library/..."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return image
    return f"docker.io/{image}" if rest else f"docker.io/library/{image}"


def _where(args: ResourceValidationArgs, props: dict, container: dict) -> str:
    kind = args.resource_type.rsplit(":", 1)[-1]
    return f"{kind} '{name_of(props, args.name)}' container '{container.get('name')}'"


# --- k8s-images-pinned ---------------------------------------------------------------------------

PINNED_DEFAULTS = {
    "requireDigest": (
        {"type": "boolean", "description": "Require an @sha256 digest (a tag alone can be moved)."},
        False,
    ),
}


def _check_pinned(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    for path, c in containers(args.resource_type, props, unknowns):
        image = c.get("image")
        if unknowns.hit(image, f"{path}.image") or (image is None and is_patch(args.resource_type)):
            continue  # a patch that leaves the image out leaves it unchanged
        where = _where(args, props, c)
        try:
            _, tag, digest = compat.parse_image(image if isinstance(image, str) else "")
        except ValueError:
            report(
                f"{where} image {image!r} is not a valid image reference. Remediation: set "
                "REGISTRY/PATH:TAG or REGISTRY/PATH@sha256:<digest> in the stack config (e.g. diagon.image)."
            )
            continue
        if digest:
            continue
        if tag is None or tag == "latest":
            report(
                f"{where} uses image '{image}', which is not pinned ({'no tag' if tag is None else ':latest'}): "
                "every node may pull a different build and a rollback is impossible. Remediation: pin a "
                "version tag or a digest in the stack config (e.g. diagon.image) and run `pulumi up`; "
                "never `kubectl set image`, which drifts from the stack."
            )
        elif cfg["requireDigest"]:
            report(
                f"{where} uses image '{image}' pinned by tag only; this environment requires a digest "
                "because a tag can be re-pointed. Remediation: use REGISTRY/PATH:TAG@sha256:<digest> "
                "(e.g. from `gcloud artifacts docker images describe IMAGE:TAG`)."
            )


images_pinned = resource_rule(
    "k8s-images-pinned",
    (
        "Container images are pinned to a tag other than 'latest' or to a digest (a digest when "
        "requireDigest is set), so every node runs the same build and rollbacks are possible (ML Diagnostics docs)."
    ),
    _check_pinned,
    applies=WORKLOAD_TYPES,
    about=IN_CLUSTER.concern("supply-chain"),
    severity=Severity.MEDIUM,
    remediation="Pin a version tag or digest in the stack config and run `pulumi up`.",
    defaults=PINNED_DEFAULTS,
    levels={
        "dev": ADVISORY,
        "staging": with_options(MANDATORY, requireDigest=False),
        "prod": with_options(MANDATORY, requireDigest=False),
    },
)

# --- k8s-images-allowed-registries ---------------------------------------------------------------

REGISTRY_DEFAULTS = {
    "allowedRegistries": (
        {
            "type": "array",
            "items": {"type": "string"},
            "description": "Registry/path prefixes images may come from (matched at a '/' boundary).",
        },
        [
            # The Diagon daemon's two published paths (ML Diagnostics docs: deployment manifest and update command).
            "us-central1-docker.pkg.dev/hypercomputediagon-release",
            "us-docker.pkg.dev/hypercomputediagon-release",
        ],
    ),
}


def allowed(location: str, prefixes: list[str]) -> bool:
    return any(location == p.rstrip("/") or location.startswith(p.rstrip("/") + "/") for p in prefixes)


def _check_registries(args: Any, props: dict, cfg: dict, unknowns: Unknowns, report: Report) -> None:
    for path, c in containers(args.resource_type, props, unknowns):
        image = c.get("image")
        if unknowns.hit(image, f"{path}.image") or not isinstance(image, str) or not image:
            continue
        try:
            name, _, _ = compat.parse_image(image)
        except ValueError:
            name = image.split("@", 1)[0]
        location = image_registry_path(name)
        if not allowed(location, cfg["allowedRegistries"]):
            report(
                f"{_where(args, props, c)} image '{image}' does not come from an allowed registry "
                f"(allowed: {', '.join(cfg['allowedRegistries']) or 'none configured'}). Remediation: mirror "
                "the image into an allowed registry and reference it there, or add its registry path to "
                "this policy's allowedRegistries in policies/config/<stack>.json after review."
            )


images_allowed_registries = resource_rule(
    "k8s-images-allowed-registries",
    (
        "Container images come from allowed registries only; the defaults are the Artifact Registry paths "
        "the Diagon daemon is published under (ML Diagnostics docs)."
    ),
    _check_registries,
    applies=WORKLOAD_TYPES,
    about=IN_CLUSTER.concern("supply-chain"),
    severity=Severity.HIGH,
    remediation="Reference images from an allowed registry or extend allowedRegistries after review.",
    defaults=REGISTRY_DEFAULTS,
    levels=FOLLOWS_BASE,
)
