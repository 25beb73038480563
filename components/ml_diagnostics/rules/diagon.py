"""Rules of the Diagon profiling DaemonSet (`Diagon`, and `diagon` of a cluster target): its namespace and
ServiceAccount, image, Workload Identity account, placement (accelerator node labels or a node selector) and
rolling update (maxUnavailable, an IntOrString as Kubernetes takes it)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, field_validator, model_validator

from ml_diagnostics import compat
from ml_diagnostics.rules import names
from ml_diagnostics.rules.base import Input, Path, Spec, check, is_output, key, raise_issues

# Namespaces every cluster has: Diagon may run in one, but does not create it.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PERCENT = re.compile(r"([1-9]\d?|100)%", re.ASCII)


def max_unavailable_problem(v: object) -> str | None:
    """RollingUpdate maxUnavailable: a positive count (1 or "1") or a percentage ("10%")."""
    if isinstance(v, bool):
        return "must be a positive integer or a percentage like 10%"
    if isinstance(v, int) and v >= 1:
        return None
    if isinstance(v, str) and (_PERCENT.fullmatch(v) or (v.isascii() and v.isdigit() and int(v) >= 1)):
        return None
    return "must be a positive integer or a percentage like 10%"


def _int_or_string(v: Any) -> Any:
    """An IntOrString as it arrives: another language's whole number comes as a float (protobuf), and any
    other type is one problem, not one per member of the union."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if is_output(v) or (isinstance(v, int | str) and not isinstance(v, bool)):
        return v
    raise ValueError("must be a positive integer or a percentage like 10%")


IntOrString = Annotated[int | str, BeforeValidator(_int_or_string)]


class DiagonSpec(Spec):
    """The Diagon profiling DaemonSet (preview)."""

    enabled: bool = True
    """False: no Diagon (its other keys are kept, unused)."""
    namespace: str = compat.DIAGON_DEFAULT_NAMESPACE
    """Namespace of the daemon."""
    create_namespace: bool = True
    """False: the namespace exists already (e.g. kube-system) and is not created or owned here."""
    image: Input[str] = compat.DIAGON_DEFAULT_IMAGE
    """Daemon image; pull policy Always only for :latest. Pin a tag or digest outside dev."""
    service_account: str = "diagon-daemon"
    """Kubernetes ServiceAccount the daemon runs as (created)."""
    gcp_service_account: Input[str] | None = None
    """GKE Workload Identity: the Google service account the daemon's Kubernetes SA acts as."""
    accelerator_node_labels: list[str] | None = None
    """Runs on nodes carrying any of these labels (node affinity `Exists`); empty list: every node. Unset:
    GKE the GKE accelerator labels (and nvidia.com/gpu.present); self-managed every node (the vendor manifest)."""
    node_selector: dict[str, str] | None = None
    """Overrides the accelerator affinity: run only on nodes with exactly these labels."""
    max_unavailable: IntOrString = 1
    """RollingUpdate maxUnavailable, an IntOrString as Kubernetes takes it: a count (1) or a percentage ("10%")."""
    adopt: bool = False
    """Take over what `kubectl apply -f diagon-daemonset.yaml` made (the DaemonSet, its ServiceAccount and the
    namespace, when it is created here); placement then defaults to the manifest's (none)."""
    self_managed: bool = False
    """Not GKE: the default placement is every node, as the vendor manifest (the cluster components set it)."""

    ARGS_ONLY = frozenset({"self_managed"})

    @field_validator("namespace", "service_account")
    @classmethod
    def _names(cls, v: str) -> str:
        return check(names.dns_label_problem, v)

    @field_validator("image")
    @classmethod
    def _image(cls, v: Any) -> Any:
        if not is_output(v):
            compat.parse_image(v)
        return v

    @field_validator("gcp_service_account")
    @classmethod
    def _gsa(cls, v: Any) -> Any:
        if isinstance(v, str):
            check(names.gcp_service_account_problem, v)
        return v

    @field_validator("max_unavailable")
    @classmethod
    def _max_unavailable(cls, v: Any) -> Any:
        if not is_output(v) and (p := max_unavailable_problem(v)):
            raise ValueError(p)
        return v

    def node_labels(self, self_managed: bool) -> list[str]:
        """The labels of the nodes Diagon runs on (any of them); empty: every node, like the vendor manifest."""
        if self.accelerator_node_labels is not None:
            return list(self.accelerator_node_labels)
        return [] if self_managed or self.adopt else list(compat.ACCELERATOR_NODE_LABELS)

    @model_validator(mode="after")
    def _check(self) -> DiagonSpec:
        problems: list[tuple[Path, str]] = []
        if self.create_namespace and self.namespace in SYSTEM_NAMESPACES:
            problems.append(
                (
                    ("namespace",),
                    f"{self.namespace!r} always exists; set {key('create_namespace')}: false to deploy into it",
                )
            )
        for i, k in enumerate(self.accelerator_node_labels or ()):
            if p := names.label_key_problem(k):
                problems.append((("accelerator_node_labels", i), p))
        problems += names.k8s_labels_problems(self.node_selector or {}, ("node_selector",))
        if self.node_selector is not None and not self.node_selector:
            problems.append(
                (("node_selector",), "must name at least one label; omit it for accelerator nodes")
            )
        raise_issues(problems)
        return self
