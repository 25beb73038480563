"""Version rules from the ML Diagnostics docs, as data plus small functions.

This module exists twice, byte for byte: components/ml_diagnostics/compat.py (the library's, the source)
and policies/mldiag_policy/compat.py (the policy pack's copy: the pack must run from a copy of policies/
alone). `python -m dev.gen.pack_compat` writes the copy; tests/test_compat.py fails when they differ. No
pulumi or cloud SDK imports here. One file (over 450 lines) for that reason: the pack takes it whole.

- Chart versions are semantic versions compared by the `semver` package (SemVer 2.0.0 precedence, so a
  pre-release sorts before its release: `0.24.0-rc.1` is not "exactly 0.24.0" and `0.24.0-alpha` is not
  "at least 0.24.0"); build metadata (`+...`) is ignored, as the spec says. Every version check of the
  program (config validators, components, the pack) goes through `parse_semver`.

- GKE versions like `1.35.0-gke.3065000` order by (major, minor, patch, gke build).
- Managed ML diagnostics (`--enable-managed-mldiagnostics`) from 1.35.0-gke.3065000 on (inclusive);
  manual install (cert-manager, injection-webhook, connection-operator) before it and on self-managed clusters.
- Automatic workload monitoring (JobSet, Job) from 1.36.4-gke.1247000 on; never on self-managed clusters.
- JAX version -> connection-operator chart version and controller args (CONNECTION_OPERATOR_BY_JAX).
- cert-manager chart: `installCRDs: true` before v1.15.0, `crds.enabled/keep: true` from v1.15.0.
- Azure location names: ARM takes them in any case, with or without spaces; `arm_location` gives the form
  `az k8s-extension create` sends (lowercase, no spaces), for the program, the library and the pack alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import semver

Mode = Literal["managed", "manual", "auto"]
ResolvedMode = Literal["managed", "manual"]

QUOTE_LIMIT = 120


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """repr() of a user value, at most about `limit` characters (plus its length when cut): a huge value
    never floods an error, however many characters its repr escapes."""
    cut = isinstance(value, str) and len(value) > limit
    text = repr(value[:limit] if cut else value)  # type: ignore[index]
    if len(text) > limit + 2:
        text, cut = text[:limit] + "...", True
    elif cut:
        text = f"{text[:-1]}...{text[-1]}"
    return f"{text} ({len(value)} characters)" if isinstance(value, str) and cut else text


# --- GKE versions ----------------------------------------------------------------------------------

_GKE_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)-gke\.(\d+)", re.ASCII)


@dataclass(frozen=True, order=True)
class GkeVersion:
    major: int
    minor: int
    patch: int
    build: int

    @classmethod
    def parse(cls, text: str) -> GkeVersion:
        m = _GKE_VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
        if not m:
            raise ValueError(
                f"{quote(text)} is not a GKE version; expected MAJOR.MINOR.PATCH-gke.BUILD, e.g. 1.35.0-gke.3065000"
            )
        return cls(*(int(g) for g in m.groups()))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}-gke.{self.build}"


MANAGED_MIN_VERSION = GkeVersion.parse("1.35.0-gke.3065000")
WORKLOAD_MONITORING_MIN_VERSION = GkeVersion.parse("1.36.4-gke.1247000")


def _gke(v: GkeVersion | str) -> GkeVersion:
    return v if isinstance(v, GkeVersion) else GkeVersion.parse(v)


_GKE_PREFIX = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?", re.ASCII)


def gke_version_floor(text: str) -> GkeVersion | None:
    """The lowest GKE version a declared version can resolve to: itself when full; for a prefix (`1.35.1`,
    `1.36`, as GKE accepts them) its first build. None when it floats (`latest`, empty) or is not a version."""
    try:
        return GkeVersion.parse(text)
    except ValueError:
        m = _GKE_PREFIX.fullmatch(str(text).strip()) if text else None
        if not m:
            return None
        return GkeVersion(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), 0)


def supports_managed(version: GkeVersion | str) -> bool:
    """True from 1.35.0-gke.3065000 on (that version included)."""
    return _gke(version) >= MANAGED_MIN_VERSION


def supports_workload_monitoring(version: GkeVersion | str | None, self_managed: bool = False) -> bool:
    """Automatic workload monitoring (JobSet, Job): GKE from 1.36.4-gke.1247000 on; never self-managed."""
    if self_managed or version is None:
        return False
    return _gke(version) >= WORKLOAD_MONITORING_MIN_VERSION


def resolve_mode(mode: Mode, version: GkeVersion | str | None, self_managed: bool) -> ResolvedMode:
    """Chooses managed or manual. Raises ValueError (message names what is allowed) when the mode cannot apply.

    - self-managed Kubernetes: always manual; `managed` is refused.
    - GKE `manual`: manual on any version. `managed`: needs >= MANAGED_MIN_VERSION (an unknown version is
      accepted: the GKE API refuses it at apply time). `auto`: by version; needs a known version.
    """
    if self_managed:
        if mode == "managed":
            raise ValueError(
                "managed ML diagnostics exists only on GKE; self-managed clusters allow: manual, auto (= manual)"
            )
        if mode not in ("manual", "auto"):
            raise ValueError(
                f"unknown mode {quote(mode)}; self-managed clusters allow: manual, auto (= manual)"
            )
        return "manual"
    if mode not in ("managed", "manual", "auto"):
        raise ValueError(f"unknown mode {quote(mode)}; allowed: managed, manual, auto")
    if mode == "manual":
        return "manual"
    if version is None:
        if mode == "managed":
            return "managed"
        raise ValueError(
            "mode auto needs the cluster's GKE version to choose; set the version, or mode managed "
            f"(GKE >= {MANAGED_MIN_VERSION}) or manual"
        )
    v = _gke(version)
    if mode == "managed" and v < MANAGED_MIN_VERSION:
        raise ValueError(
            f"managed ML diagnostics needs GKE >= {MANAGED_MIN_VERSION}, the cluster runs {v}; "
            "use mode manual or auto, or upgrade the cluster"
        )
    return "managed" if v >= MANAGED_MIN_VERSION else "manual"


# --- Charts ----------------------------------------------------------------------------------------

CERT_MANAGER_REPOSITORY = "https://charts.jetstack.io"
CERT_MANAGER_CHART = "cert-manager"
CERT_MANAGER_DEFAULT_VERSION = "v1.13.0"
CERT_MANAGER_NAMESPACE = "cert-manager"
CERT_MANAGER_RELEASE = "cert-manager"
CERT_MANAGER_TIMEOUT_SECONDS = 600  # --timeout 10m

MLDIAGNOSTICS_REPOSITORY = "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics-webhook-and-operator-helm"
MLDIAGNOSTICS_NAMESPACE = "gke-mldiagnostics"
INJECTION_WEBHOOK_CHART = "mldiagnostics-injection-webhook"
INJECTION_WEBHOOK_RELEASE = "mldiagnostics-injection-webhook"
INJECTION_WEBHOOK_DEFAULT_VERSION = "0.25.0"
CONNECTION_OPERATOR_CHART = "mldiagnostics-connection-operator"
CONNECTION_OPERATOR_RELEASE = "mldiagnostics-connection-operator"

# The values path the args override lands on; setting it replaces the chart's default args.
CONNECTION_OPERATOR_ARGS_PATH = ("mldiagnosticsConnectionOperator", "controller", "args")
JAX_08_CONTROLLER_ARGS = (
    "--metrics-bind-address=:8443",
    "--health-probe-bind-address=:8081",
    "--sidecar-timeout=65m",
    "--disable-hostname-override",
)


@dataclass(frozen=True)
class ConnectionOperatorRule:
    jax: str  # how the docs name the JAX range
    jax_min: tuple[int, int]
    jax_max: tuple[int, int] | None  # inclusive (major, minor); None = and later
    chart_version: str  # default chart version
    chart_exact: bool  # True: only chart_version; False: chart_version or later
    args: tuple[str, ...] | None  # controller args override; None = chart defaults


CONNECTION_OPERATOR_BY_JAX: tuple[ConnectionOperatorRule, ...] = (
    ConnectionOperatorRule("0.8.x", (0, 8), (0, 8), "0.24.0", True, JAX_08_CONTROLLER_ARGS),
    ConnectionOperatorRule("0.9.x and later", (0, 9), None, "0.24.0", False, None),
)
SUPPORTED_JAX = ", ".join(r.jax for r in CONNECTION_OPERATOR_BY_JAX)

_JAX = re.compile(r"(\d+)\.(\d+)(?:\.(?:\d+|x))?(?:[.\-+]?[A-Za-z0-9.]*)?", re.ASCII)


def _jax_rule(jax_version: str) -> ConnectionOperatorRule:
    m = _JAX.fullmatch(str(jax_version).strip())
    if m:
        mm = (int(m.group(1)), int(m.group(2)))
        for rule in CONNECTION_OPERATOR_BY_JAX:
            if mm >= rule.jax_min and (rule.jax_max is None or mm <= rule.jax_max):
                return rule
    raise ValueError(
        f"unsupported JAX version {quote(jax_version)}; supported: {SUPPORTED_JAX} (e.g. 0.8.1, 0.9)"
    )


def connection_operator_defaults(jax_version: str) -> tuple[str, list[str] | None]:
    """(chart version, controller args or None for the chart's defaults) for a JAX version like 0.8.1 or 0.9.x."""
    rule = _jax_rule(jax_version)
    return rule.chart_version, (list(rule.args) if rule.args is not None else None)


def parse_semver(text: str) -> semver.Version:
    """A chart version (a leading `v` allowed, as Helm does); ValueError naming the expected form."""
    raw = str(text).strip()
    try:
        if not raw.isascii():  # semver's own pattern takes any script's digits
            raise ValueError(raw)
        return semver.Version.parse(raw[1:] if raw[:1] in ("v", "V") else raw)
    except (ValueError, TypeError):
        raise ValueError(
            f"{quote(text)} is not a chart version; expected MAJOR.MINOR.PATCH with an optional -PRERELEASE, "
            "e.g. 0.24.0 or 0.25.0-rc.1"
        ) from None


def same_version(a: semver.Version | str, b: semver.Version | str) -> bool:
    """Equal by SemVer precedence: pre-release counts, build metadata does not (ValueError if not versions)."""
    a = a if isinstance(a, semver.Version) else parse_semver(a)
    b = b if isinstance(b, semver.Version) else parse_semver(b)
    return a.compare(b) == 0


def connection_operator_chart_problem(jax_version: str, chart_version: str) -> str | None:
    """A message when the chart version does not fit the JAX version per the docs' table, else None."""
    rule = _jax_rule(jax_version)
    want = parse_semver(rule.chart_version)
    got = parse_semver(chart_version)
    if rule.chart_exact and not same_version(got, want):
        return f"JAX {rule.jax} needs connection-operator chart {rule.chart_version}, not {chart_version}"
    if not rule.chart_exact and got < want:
        return f"JAX {rule.jax} needs connection-operator chart {rule.chart_version} or later, not {chart_version}"
    return None


CERT_MANAGER_CRDS_VALUES_FROM = semver.Version(1, 15, 0)


def _truthy(v: Any) -> bool:
    # Helm templates test values the Go template way: false, 0, "", nil and empty collections are false.
    return bool(v)


def cert_manager_crd_values(version: str, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The CRD values the program adds for a chart version: one style only. From v1.15.0 the deprecated
    `installCRDs` a user still sets is honoured by the chart, so then nothing is added (adding
    `crds.enabled` would make the chart refuse the release)."""
    if parse_semver(version) < CERT_MANAGER_CRDS_VALUES_FROM:
        return {"installCRDs": True}
    if values is not None and _truthy(values.get("installCRDs")):
        return {}
    return {"crds": {"enabled": True, "keep": True}}


# The chart's own defaults for the CRD values (values.yaml of each chart version).
CERT_MANAGER_CRD_DEFAULTS_BEFORE_1_15 = {"installCRDs": False}
CERT_MANAGER_CRD_DEFAULTS_FROM_1_15 = {"installCRDs": False, "crds": {"enabled": False, "keep": True}}


def cert_manager_effective_crd_values(version: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The chart's CRD values after the user's values are merged over the chart's defaults."""
    from_1_15 = parse_semver(version) >= CERT_MANAGER_CRDS_VALUES_FROM
    defaults = CERT_MANAGER_CRD_DEFAULTS_FROM_1_15 if from_1_15 else CERT_MANAGER_CRD_DEFAULTS_BEFORE_1_15
    merged = deep_merge(defaults, {k: v for k, v in values.items() if k in ("installCRDs", "crds")})
    return {k: merged[k] for k in defaults}


def cert_manager_values_problem(version: str, values: Mapping[str, Any]) -> str | None:
    """A message for CRD values the chart version refuses, else None. From v1.15.0 the chart's own check
    (templates/_helpers.tpl `cert-manager.crd-check`) fails a release whose installCRDs is true together
    with crds.enabled true, or with crds.keep false; installCRDs alone is deprecated but honoured."""
    if parse_semver(version) < CERT_MANAGER_CRDS_VALUES_FROM:
        if "crds" in values:
            return f"cert-manager {version} (before v1.15.0) takes installCRDs, not crds.*"
        return None
    effective = cert_manager_effective_crd_values(version, values)
    if _truthy(effective["installCRDs"]):
        crds = effective["crds"] if isinstance(effective["crds"], Mapping) else {}
        if _truthy(crds.get("enabled")):
            return (
                f"cert-manager {version} refuses installCRDs together with its replacement crds.enabled; "
                "keep only crds.enabled (and crds.keep)"
            )
        if not _truthy(crds.get("keep")):
            return f"cert-manager {version} refuses installCRDs with crds.keep false; use crds.enabled and crds.keep"
    return None


def cert_manager_installcrds_deprecated(version: str, values: Mapping[str, Any]) -> bool:
    """True when a chart from v1.15.0 gets the deprecated installCRDs (honoured; crds.enabled replaces it)."""
    return parse_semver(version) >= CERT_MANAGER_CRDS_VALUES_FROM and _truthy(values.get("installCRDs"))


# --- Images ----------------------------------------------------------------------------------------

_IMAGE = re.compile(
    r"(?P<name>(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?",
    re.ASCII,  # OCI references: ASCII letters and digits only (\w and \d would take any script's)
)


def parse_image(ref: str) -> tuple[str, str | None, str | None]:
    """(name, tag, digest) of a container image reference; ValueError if it is not one."""
    m = _IMAGE.fullmatch(ref or "")
    if not m:
        raise ValueError(
            f"{quote(ref)} is not a container image reference; expected REGISTRY/PATH:TAG or REGISTRY/PATH@sha256:<64 hex>"
        )
    return m.group("name"), m.group("tag"), m.group("digest")


def image_pull_policy(ref: str) -> Literal["Always", "IfNotPresent"]:
    """Always only for `:latest` (or no tag, which means latest); IfNotPresent for a pinned tag or a digest."""
    _, tag, digest = parse_image(ref)
    if digest is None and tag in (None, "latest"):
        return "Always"
    return "IfNotPresent"


DIAGON_DEFAULT_IMAGE = (
    "us-central1-docker.pkg.dev/hypercomputediagon-release/daemon-docker/mldiagnostics-daemon:latest"
)
# The newest release the vendor docs name (their update command; the manifest itself says :latest). The default
# stays the manifest's image, since deployed stacks are users' data; examples and prod pin this one.
DIAGON_RELEASED_IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
DIAGON_DEFAULT_NAMESPACE = "diagon"
# Node labels that mark accelerator nodes: GKE GPU, GKE TPU, NVIDIA GPU feature discovery (self-managed).
ACCELERATOR_NODE_LABELS = (
    "cloud.google.com/gke-accelerator",
    "cloud.google.com/gke-tpu-accelerator",
    "nvidia.com/gpu.present",
)

OPT_IN_LABEL = "managed-mldiagnostics-gke"
CERT_MANAGER_ANNOTATION = "ml-diagnostics.dev/cert-manager"  # on the gke-mldiagnostics Namespace


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Helm-style values merge: maps merge key by key, anything else (lists included) is replaced."""
    out = dict(base)
    for k, v in override.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


# --- Azure location names ----------------------------------------------------------------------------------


def arm_location(name: str) -> str:
    """An Azure location name in the form `az k8s-extension create` sends it: lowercase, without spaces.

    ARM reads location names without regard to case or spaces (`East US`, `EastUS` and `eastus` are one
    region, `eastus`) and returns a cluster's location without spaces, in either case (`EastUS` in some
    responses); the CLI lowercases what ARM returns and sends that as `location` and `jobSchedulerLocation`,
    in `domain` (`eastus.cloudapp.azure.com`) and as the Arc relay namespace's location. Whether the result
    names a region is not checked here."""
    return name.lower().replace(" ", "")


# --- Azure VM sizes and the Azure ML extension's sizing ------------------------------------------------

# (vCPUs, GiB of memory, GPUs) of the Azure VM sizes whose name does not give them by a series rule: the
# Dv2/DSv2 numbering (DS3_v2 is 4 vCPUs), the Av2 and B series, and the GPU families (NC, ND, NV). Azure's size
# pages.
AZURE_VM_SIZES: dict[str, tuple[float, float, float]] = {
    **{
        f"Standard_{series}{n}_v2": spec
        for series in ("D", "DS")
        for n, spec in {
            1: (1, 3.5, 0),
            2: (2, 7, 0),
            3: (4, 14, 0),
            4: (8, 28, 0),
            5: (16, 56, 0),
            11: (2, 14, 0),
            12: (4, 28, 0),
            13: (8, 56, 0),
            14: (16, 112, 0),
            15: (20, 140, 0),
        }.items()
    },
    "Standard_A1_v2": (1, 2, 0),
    "Standard_A2_v2": (2, 4, 0),
    "Standard_A4_v2": (4, 8, 0),
    "Standard_A8_v2": (8, 16, 0),
    "Standard_A2m_v2": (2, 16, 0),
    "Standard_A4m_v2": (4, 32, 0),
    "Standard_A8m_v2": (8, 64, 0),
    "Standard_B1s": (1, 1, 0),
    "Standard_B1ms": (1, 2, 0),
    "Standard_B2s": (2, 4, 0),
    "Standard_B2ms": (2, 8, 0),
    "Standard_B4ms": (4, 16, 0),
    "Standard_B8ms": (8, 32, 0),
    "Standard_B12ms": (12, 48, 0),
    "Standard_B16ms": (16, 64, 0),
    "Standard_B20ms": (20, 80, 0),
    # NCv3 (V100)
    "Standard_NC6s_v3": (6, 112, 1),
    "Standard_NC12s_v3": (12, 224, 2),
    "Standard_NC24s_v3": (24, 448, 4),
    "Standard_NC24rs_v3": (24, 448, 4),
    # NCasT4_v3 (T4)
    "Standard_NC4as_T4_v3": (4, 28, 1),
    "Standard_NC8as_T4_v3": (8, 56, 1),
    "Standard_NC16as_T4_v3": (16, 110, 1),
    "Standard_NC64as_T4_v3": (64, 440, 4),
    # NC A100 v4
    "Standard_NC24ads_A100_v4": (24, 220, 1),
    "Standard_NC48ads_A100_v4": (48, 440, 2),
    "Standard_NC96ads_A100_v4": (96, 880, 4),
    # NCads H100 v5
    "Standard_NC40ads_H100_v5": (40, 320, 1),
    "Standard_NC80adis_H100_v5": (80, 640, 2),
    # ND (V100, A100, H100, MI300X)
    "Standard_ND40rs_v2": (40, 672, 8),
    "Standard_ND96asr_v4": (96, 900, 8),
    "Standard_ND96amsr_A100_v4": (96, 1900, 8),
    "Standard_ND96isr_H100_v5": (96, 1900, 8),
    "Standard_ND96isr_MI300X_v5": (96, 1850, 8),
    # NVv3 (M60), NVadsA10 v5 (A10, fractional GPUs on the small sizes)
    "Standard_NV12s_v3": (12, 112, 1),
    "Standard_NV24s_v3": (24, 224, 2),
    "Standard_NV48s_v3": (48, 448, 4),
    "Standard_NV6ads_A10_v5": (6, 55, 1 / 6),
    "Standard_NV12ads_A10_v5": (12, 110, 1 / 3),
    "Standard_NV18ads_A10_v5": (18, 220, 1 / 2),
    "Standard_NV36ads_A10_v5": (36, 440, 1),
    "Standard_NV36adms_A10_v5": (36, 880, 1),
    "Standard_NV72ads_A10_v5": (72, 880, 2),
}
_AZURE_SIZE_KEYS = {k.lower(): k for k in AZURE_VM_SIZES}
# Standard_<D|E|F><vCPUs><features>_v<generation>: the number is the vCPU count from Dv3/Ev3/Fsv2 on.
_AZURE_SERIES = re.compile(
    r"Standard_(?P<series>[DEF])(?P<vcpu>[0-9]+)(?P<features>[a-z]*)_v(?P<gen>[0-9]+)", re.ASCII
)
_GIB_PER_VCPU = {"D": 4.0, "E": 8.0, "F": 2.0}


def azure_vm_size(name: str, extra: Mapping[str, Any] | None = None) -> tuple[float, float, float] | None:
    """(vCPUs, GiB, GPUs) of an Azure VM size (any case), `extra` first, then the table, then the series
    rule (D: 4 GiB per vCPU, 2 with `l` (low memory) in its features; E: 8; F: 2); None when unknown."""
    if extra and name in extra:
        spec = extra[name]
        return float(spec[0]), float(spec[1]), float(spec[2]) if len(spec) > 2 else 0.0
    key = _AZURE_SIZE_KEYS.get(name.lower())
    if key is not None:
        return tuple(float(x) for x in AZURE_VM_SIZES[key])  # type: ignore[return-value]
    m = _AZURE_SERIES.fullmatch(name)
    if m is None or int(m.group("gen")) < (2 if m.group("series") == "F" else 3):
        return None
    vcpu = int(m.group("vcpu"))
    per = _GIB_PER_VCPU[m.group("series")]
    if m.group("series") == "D" and "l" in m.group("features"):
        per = 2.0
    return float(vcpu), vcpu * per, 0.0


@dataclass(frozen=True)
class AzureMlSizing:
    """One row of the extension's "total minimum system resources" table (reference-kubernetes.md,
    Recommended resource planning): nodes, and the VM size each node needs at least."""

    purpose: Literal["test", "production"]
    training: bool
    inference: bool
    nodes: int
    vcpus: float
    memory_gib: float
    example: str  # the table's AKS VM SKU

    @property
    def workload(self) -> str:
        return " and ".join(w for w, on in (("training", self.training), ("inference", self.inference)) if on)


AZUREML_SIZING: tuple[AzureMlSizing, ...] = (
    AzureMlSizing("test", False, True, 1, 2, 7, "DS2_v2"),
    AzureMlSizing("test", True, False, 1, 2, 7, "DS2_v2"),
    AzureMlSizing("test", True, True, 1, 4, 14, "DS3_v2"),
    AzureMlSizing("production", False, True, 3, 4, 14, "DS3_v2"),
    AzureMlSizing("production", True, False, 1, 8, 28, "DS4_v2"),
    # the table names DS4_v2 here but sizes it 4 vCPU / 14 GiB: the lower reading is the rule
    AzureMlSizing("production", True, True, 3, 4, 14, "DS3_v2"),
)
# how-to-deploy-kubernetes-extension.md, Prerequisites: "For production purposes, the Kubernetes cluster must
# have a minimum of 4 vCPU cores and 14-GB memory."
AZUREML_PRODUCTION_MIN_VCPUS = 4
AZUREML_PRODUCTION_MIN_MEMORY_GIB = 14


def azureml_sizing(purpose: str, training: bool, inference: bool) -> AzureMlSizing | None:
    return next(
        (s for s in AZUREML_SIZING if (s.purpose, s.training, s.inference) == (purpose, training, inference)),
        None,
    )
