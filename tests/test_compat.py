"""Version rules from seed 000: GKE version order and thresholds, JAX -> connection-operator, cert-manager CRDs."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dev.gen import pack_compat
from ml_diagnostics import compat
from ml_diagnostics.compat import GkeVersion

JAX_08_ARGS = [
    "--metrics-bind-address=:8443",
    "--health-probe-bind-address=:8081",
    "--sidecar-timeout=65m",
    "--disable-hostname-override",
]


def refusal(parse: Callable[[str], object], text: str) -> str:
    """The message of the ValueError that parse(text) raises."""
    with pytest.raises(ValueError) as e:
        parse(text)
    return str(e.value)


def test_parse_and_str_round_trip():
    v = GkeVersion.parse("1.35.0-gke.3065000")
    assert (v.major, v.minor, v.patch, v.build) == (1, 35, 0, 3065000)
    assert str(v) == "1.35.0-gke.3065000"
    assert GkeVersion.parse("v1.36.4-gke.1247000") == compat.WORKLOAD_MONITORING_MIN_VERSION


@pytest.mark.parametrize("bad", ["1.35", "1.35.0", "1.35.0-gke", "latest", "1.35.0-gke.x", ""])
def test_parse_rejects_non_gke_versions(bad):
    assert refusal(GkeVersion.parse, bad) == (
        f"{bad!r} is not a GKE version; expected MAJOR.MINOR.PATCH-gke.BUILD, e.g. 1.35.0-gke.3065000"
    )


def test_order_is_numeric_not_lexical():
    assert GkeVersion.parse("1.35.0-gke.999") < GkeVersion.parse("1.35.0-gke.3065000")
    assert GkeVersion.parse("1.9.9-gke.9999999") < GkeVersion.parse("1.10.0-gke.1")
    assert GkeVersion.parse("1.35.1-gke.1") > GkeVersion.parse("1.35.0-gke.9999999")


_part = st.integers(min_value=0, max_value=10_000_000)


@given(a=st.tuples(_part, _part, _part, _part), b=st.tuples(_part, _part, _part, _part))
def test_order_matches_tuple_order(a, b):
    va = GkeVersion.parse("{}.{}.{}-gke.{}".format(*a))
    vb = GkeVersion.parse("{}.{}.{}-gke.{}".format(*b))
    assert (va < vb) == (a < b) and (va == vb) == (a == b)


@pytest.mark.parametrize(
    ("version", "managed"),
    [
        ("1.35.0-gke.3064999", False),
        ("1.35.0-gke.3065000", True),  # the threshold itself is included
        ("1.35.0-gke.3065001", True),
        ("1.34.9-gke.9999999", False),
        ("1.35.1-gke.1", True),
        ("1.36.0-gke.1", True),
    ],
)
def test_managed_threshold(version, managed):
    assert compat.supports_managed(version) is managed
    assert compat.resolve_mode("auto", version, self_managed=False) == ("managed" if managed else "manual")


@pytest.mark.parametrize(
    ("version", "monitoring"),
    [
        ("1.36.4-gke.1246999", False),
        ("1.36.4-gke.1247000", True),
        ("1.36.4-gke.1247001", True),
        ("1.36.3-gke.9999999", False),
        ("1.35.0-gke.3065000", False),  # managed, but no automatic workload monitoring yet
        ("1.37.0-gke.1", True),
    ],
)
def test_workload_monitoring_threshold(version, monitoring):
    assert compat.supports_workload_monitoring(version) is monitoring
    assert compat.supports_workload_monitoring(version, self_managed=True) is False


def test_workload_monitoring_unknown_version_is_false():
    assert compat.supports_workload_monitoring(None) is False


def test_resolve_mode_gke():
    assert compat.resolve_mode("manual", "1.36.0-gke.1", self_managed=False) == "manual"
    assert compat.resolve_mode("managed", "1.35.0-gke.3065000", self_managed=False) == "managed"
    assert compat.resolve_mode("managed", None, self_managed=False) == "managed"
    with pytest.raises(ValueError) as e:
        compat.resolve_mode("managed", "1.35.0-gke.3064999", self_managed=False)
    assert str(e.value) == (
        "managed ML diagnostics needs GKE >= 1.35.0-gke.3065000, the cluster runs 1.35.0-gke.3064999; "
        "use mode manual or auto, or upgrade the cluster"
    )
    with pytest.raises(ValueError) as e:
        compat.resolve_mode("auto", None, self_managed=False)
    assert str(e.value) == (
        "mode auto needs the cluster's GKE version to choose; set the version, or mode managed "
        "(GKE >= 1.35.0-gke.3065000) or manual"
    )
    with pytest.raises(ValueError) as e:
        compat.resolve_mode("sometimes", "1.36.0-gke.1", self_managed=False)  # type: ignore[arg-type]
    assert str(e.value) == "unknown mode 'sometimes'; allowed: managed, manual, auto"


def test_resolve_mode_self_managed_is_always_manual():
    assert compat.resolve_mode("manual", None, self_managed=True) == "manual"
    assert compat.resolve_mode("auto", "1.40.0-gke.1", self_managed=True) == "manual"
    with pytest.raises(ValueError) as e:
        compat.resolve_mode("managed", "1.40.0-gke.1", self_managed=True)
    assert str(e.value) == (
        "managed ML diagnostics exists only on GKE; self-managed clusters allow: manual, auto (= manual)"
    )
    with pytest.raises(ValueError) as e:
        compat.resolve_mode("x", None, self_managed=True)  # type: ignore[arg-type]
    assert str(e.value) == "unknown mode 'x'; self-managed clusters allow: manual, auto (= manual)"


@pytest.mark.parametrize("jax", ["0.8", "0.8.0", "0.8.1", "0.8.x", "0.8.2rc1", " 0.8.1 "])
def test_jax_08_pins_chart_and_args(jax):
    assert compat.connection_operator_defaults(jax) == ("0.24.0", JAX_08_ARGS)


@pytest.mark.parametrize("jax", ["0.9", "0.9.0", "0.9.x", "0.9.2", "0.10.0", "1.0.0", "1.2.x"])
def test_jax_09_and_later_keep_chart_args(jax):
    assert compat.connection_operator_defaults(jax) == ("0.24.0", None)


@pytest.mark.parametrize("jax", ["0.7.2", "0.4.30", "0", "jax", "", "0.x"])
def test_unsupported_jax_names_supported_versions(jax):
    assert refusal(compat.connection_operator_defaults, jax) == (
        f"unsupported JAX version {jax!r}; supported: 0.8.x, 0.9.x and later (e.g. 0.8.1, 0.9)"
    )


def test_defaults_return_a_fresh_args_list():
    _, args = compat.connection_operator_defaults("0.8.1")
    assert args is not None
    args.append("--mutated")
    assert compat.connection_operator_defaults("0.8.1")[1] == JAX_08_ARGS


@pytest.mark.parametrize(
    ("jax", "chart", "problem"),
    [
        ("0.8.1", "0.24.0", None),
        ("0.8.1", "0.25.0", "JAX 0.8.x needs connection-operator chart 0.24.0, not 0.25.0"),
        ("0.8.1", "0.23.9", "JAX 0.8.x needs connection-operator chart 0.24.0, not 0.23.9"),
        ("0.9.0", "0.24.0", None),
        ("0.9.0", "0.26.1", None),
        ("0.10.0", "1.0.0", None),
        (
            "0.9.0",
            "0.23.0",
            "JAX 0.9.x and later needs connection-operator chart 0.24.0 or later, not 0.23.0",
        ),
    ],
)
def test_connection_operator_chart_table(jax, chart, problem):
    assert compat.connection_operator_chart_problem(jax, chart) == problem


@pytest.mark.parametrize(
    ("version", "values"),
    [
        ("v1.13.0", {"installCRDs": True}),
        ("v1.14.5", {"installCRDs": True}),
        ("v1.15.0", {"crds": {"enabled": True, "keep": True}}),
        ("1.15.0", {"crds": {"enabled": True, "keep": True}}),
        ("v1.16.2", {"crds": {"enabled": True, "keep": True}}),
    ],
)
def test_cert_manager_crd_values_one_style(version, values):
    assert compat.cert_manager_crd_values(version) == values


def test_cert_manager_values_problem():
    assert compat.cert_manager_values_problem("v1.13.0", {"installCRDs": False}) is None
    assert compat.cert_manager_values_problem("v1.13.0", {"crds": {"enabled": True}}) == (
        "cert-manager v1.13.0 (before v1.15.0) takes installCRDs, not crds.*"
    )
    # From v1.15.0 exactly what the chart's crd-check refuses: installCRDs with crds.enabled, or with keep false.
    assert compat.cert_manager_values_problem("v1.15.0", {"installCRDs": True}) is None
    assert compat.cert_manager_installcrds_deprecated("v1.15.0", {"installCRDs": True}) is True
    assert compat.cert_manager_installcrds_deprecated("v1.13.0", {"installCRDs": True}) is False
    assert compat.cert_manager_values_problem(
        "v1.15.0", {"installCRDs": True, "crds": {"enabled": True}}
    ) == (
        "cert-manager v1.15.0 refuses installCRDs together with its replacement crds.enabled; keep only "
        "crds.enabled (and crds.keep)"
    )
    assert compat.cert_manager_values_problem("v1.16.2", {"installCRDs": True, "crds": {"keep": False}}) == (
        "cert-manager v1.16.2 refuses installCRDs with crds.keep false; use crds.enabled and crds.keep"
    )
    assert (
        compat.cert_manager_values_problem("v1.15.0", {"installCRDs": False, "crds": {"enabled": True}})
        is None
    )
    assert compat.cert_manager_values_problem("v1.15.0", {"crds": {"keep": False}}) is None


def test_an_installcrds_of_one_five_is_honoured_without_the_program_adding_crds_enabled():
    # the program's defaults must not turn a values file the chart accepts into one it refuses
    assert compat.cert_manager_crd_values("v1.15.0", {"installCRDs": True}) == {}
    assert compat.cert_manager_crd_values("v1.15.0", {}) == {"crds": {"enabled": True, "keep": True}}


@pytest.mark.parametrize("bad", ["latest", "0.24"])  # garbage, and a range: the message gives the form
def test_parse_semver_refuses_what_is_not_a_chart_version(bad):
    assert refusal(compat.parse_semver, bad) == (
        f"{bad!r} is not a chart version; expected MAJOR.MINOR.PATCH with an optional -PRERELEASE, e.g. 0.24.0 "
        "or 0.25.0-rc.1"
    )


DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("ref", "parsed", "policy"),
    [
        (
            compat.DIAGON_DEFAULT_IMAGE,
            (compat.DIAGON_DEFAULT_IMAGE[: -len(":latest")], "latest", None),
            "Always",
        ),
        (
            "us-docker.pkg.dev/p/daemon/diagon-daemon:v2.1.0",
            ("us-docker.pkg.dev/p/daemon/diagon-daemon", "v2.1.0", None),
            "IfNotPresent",
        ),
        ("registry.local:5000/diagon", ("registry.local:5000/diagon", None, None), "Always"),
        (f"r.example/diagon@{DIGEST}", ("r.example/diagon", None, DIGEST), "IfNotPresent"),
        (f"r.example/diagon:latest@{DIGEST}", ("r.example/diagon", "latest", DIGEST), "IfNotPresent"),
    ],
)
def test_image_reference_and_pull_policy(ref, parsed, policy):
    assert compat.parse_image(ref) == parsed
    assert compat.image_pull_policy(ref) == policy


@pytest.mark.parametrize(
    "bad",
    ["", "r.example/UPPER:v1", "r.example/diagon:", "r.example/diagon@sha256:abc", "a b", "r.example//x:v1"],
)
def test_bad_image_references(bad):
    assert refusal(compat.parse_image, bad) == (
        f"{bad!r} is not a container image reference; expected REGISTRY/PATH:TAG or REGISTRY/PATH@sha256:<64 hex>"
    )


def test_deep_merge_replaces_lists_and_merges_maps():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert compat.deep_merge(base, {"a": {"c": [3]}, "e": 2}) == {"a": {"b": 1, "c": [3]}, "d": 1, "e": 2}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}


ROOT = Path(__file__).resolve().parents[1]
PACK_COMPAT = ROOT / "policies" / "mldiag_policy" / "compat.py"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        (n.module if isinstance(n, ast.ImportFrom) else a.name) or ""
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in (n.names if isinstance(n, ast.Import) else [n])
    }


def _code_strings(path: Path) -> list[str]:
    """String constants in code (docstrings and comments left out: they may quote a version)."""
    tree = ast.parse(path.read_text())
    docs = {
        id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_one_source_of_truth_the_library_owns_the_rules_and_the_pack_carries_a_copy():
    # The pack must run from a copy of policies/ alone, the library from its wheel alone: the modules (and the
    # cert-manager schemas) are in both, byte for byte, written by `python -m dev.gen.pack_compat`.
    for name in pack_compat.SHARED:
        source = pack_compat.SOURCE_DIR / name
        copy = pack_compat.COPY_DIR / name
        assert copy.read_bytes() == source.read_bytes(), f"{name}: run python -m dev.gen.pack_compat"
    # neither side reaches into the other
    for path in (ROOT / "policies").rglob("*.py"):
        assert not any(
            m.split(".")[0] in ("components", "ml_diagnostics", "program") for m in _imports(path)
        ), path
    for path in (ROOT / "components" / "ml_diagnostics").rglob("*.py"):
        assert not any(m.split(".")[0] in ("policies", "program", "mldiag", "dev") for m in _imports(path)), (
            path
        )
    # the thresholds are written once, in the compat module (and its copy)
    for literal in ("1.35.0-gke.3065000", "1.36.4-gke.1247000", "--health-probe-bind-address=:8081"):
        holders = sorted(
            p.relative_to(ROOT).as_posix()
            for d in ("components", "program", "policies")
            for p in (ROOT / d).rglob("*.py")
            if any(literal in s for s in _code_strings(p))
        )
        assert holders == ["components/ml_diagnostics/compat.py", "policies/mldiag_policy/compat.py"], (
            literal,
            holders,
        )


@pytest.mark.parametrize(
    ("name", "sent"),
    [
        ("eastus", "eastus"),
        ("EastUS", "eastus"),
        ("East US", "eastus"),
        ("east us", "eastus"),
        ("East US 2", "eastus2"),
        ("Korea Central", "koreacentral"),
        ("KoreaCentral", "koreacentral"),
        ("KOREACENTRAL", "koreacentral"),
    ],
)
def test_arm_location_is_the_form_the_cli_sends(name, sent):
    assert compat.arm_location(name) == sent


def test_azure_locations_are_normalised_in_one_place():
    # The library's component, the program's validators and models use compat.arm_location; nothing else
    # lowercases and strips a location on its own.
    holders = sorted(
        p.relative_to(ROOT).as_posix()
        for d in ("components", "program", "policies")
        for p in (ROOT / d).rglob("*.py")
        if '.replace(" ", "")' in p.read_text()
    )
    assert holders == ["components/ml_diagnostics/compat.py", "policies/mldiag_policy/compat.py"]


def test_compat_imports_no_pulumi():
    tree = ast.parse(PACK_COMPAT.read_text())
    imported = {
        (n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in (n.names if isinstance(n, ast.Import) else [n])
    }
    assert imported <= {"__future__", "re", "collections", "dataclasses", "typing", "semver"}


# --- one semver implementation with pre-release semantics (issue 12 item 4) ------------------------


@pytest.mark.parametrize(
    ("jax", "chart", "problem"),
    [
        ("0.8.1", "0.24.0", None),
        ("0.8.1", "v0.24.0", None),
        ("0.8.1", "0.24.0+build.7", None),  # build metadata does not count
        ("0.8.1", "0.24.0-rc.1", "JAX 0.8.x needs connection-operator chart 0.24.0, not 0.24.0-rc.1"),
        (
            "0.9",
            "0.24.0-alpha",
            "JAX 0.9.x and later needs connection-operator chart 0.24.0 or later, not 0.24.0-alpha",
        ),
        ("0.9", "0.24.1-rc.1", None),
        ("0.9", "0.25.0", None),
    ],
)
def test_chart_rules_use_prerelease_precedence(jax, chart, problem):
    assert compat.connection_operator_chart_problem(jax, chart) == problem


def test_cert_manager_prerelease_of_v1_15_still_takes_install_crds():
    assert compat.cert_manager_crd_values("v1.15.0-beta.1") == {"installCRDs": True}
    assert compat.cert_manager_crd_values("v1.15.0") == {"crds": {"enabled": True, "keep": True}}


def test_config_validators_and_pack_share_the_prerelease_rule():
    import program.config  # noqa: F401  (target models import through it)
    from program.in_cluster import MlDiagnosticsManualSettings

    with pytest.raises(ValueError) as e:
        MlDiagnosticsManualSettings.model_validate(
            {"jaxVersion": "0.8.1", "connectionOperator": {"version": "0.24.0-rc.1"}}
        )
    assert (
        "connection_operator.version: JAX 0.8.x needs connection-operator chart 0.24.0, not 0.24.0-rc.1"
        in str(e.value)
    )
    with pytest.raises(ValueError) as e:
        MlDiagnosticsManualSettings.model_validate(
            {"jaxVersion": "0.9", "connectionOperator": {"version": "0.24.0-alpha"}}
        )
    assert "needs connection-operator chart 0.24.0 or later, not 0.24.0-alpha" in str(e.value)


def test_same_version_by_precedence():
    assert compat.same_version("v0.24.0", "0.24.0+build.1")
    assert not compat.same_version("0.24.0-rc.1", "0.24.0")
    with pytest.raises(ValueError):
        compat.same_version("latest", "0.24.0")
