"""The config loader: key paths, unknown keys, unique names, secrets, and a fuzz that only ever sees ConfigError."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.config import PLACEHOLDER_SECRET, ConfigError, is_placeholder, parse

NS = "ml-diagnostics"


def problems(raw: dict, secret_keys: tuple[str, ...] = ()) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(raw, secret_keys)
    return e.value.problems


def test_minimal_config_parses():
    cfg = parse({f"{NS}:environment": "dev"})
    assert cfg.environment == "dev"
    assert cfg.gke_clusters == [] and cfg.azure_ml == []


def test_environment_names_allowed_values():
    assert problems({f"{NS}:environment": "qa"}) == [
        f"{NS}:environment: must be one of 'dev', 'staging' or 'prod'"
    ]


def test_missing_environment():
    assert problems({}) == [f"{NS}:environment: required key is missing"]


def test_unknown_top_level_key_lists_allowed_keys():
    out = problems({f"{NS}:environment": "dev", f"{NS}:gkeCluster": []})
    assert out == [
        f"{NS}:gkeCluster: unknown key; allowed keys: azureMl, environment, gkeClusters, googleApi, "
        "kubernetesClusters, modelDevelopmentClusters"
    ]


def test_other_namespaces_are_left_to_their_providers():
    cfg = parse({f"{NS}:environment": "prod", "gcp:project": "p", "kubernetes:context": "c"})
    assert cfg.environment == "prod"


def test_every_problem_reported_at_once_with_key_paths():
    raw = {
        f"{NS}:environment": "qa",
        f"{NS}:googleApi": {"endpoints": {"compute": "https://x"}, "quotaProjct": "p"},
    }
    out = problems(raw)
    assert f"{NS}:environment: must be one of 'dev', 'staging' or 'prod'" in out
    assert f"{NS}:googleApi.endpoints.compute (key): must be one of 'aiplatform' or 'container'" in out
    assert f"{NS}:googleApi.quotaProjct: unknown key; allowed keys: endpoints, quotaProject" in out
    assert len(out) == 3


def test_json_string_values_are_decoded_like_the_engine_passes_them():
    raw = {f"{NS}:environment": "dev", f"{NS}:googleApi": json.dumps({"quotaProject": "billing-1"})}
    assert parse(raw).google_api.quota_project == "billing-1"


def test_invalid_json_is_a_config_error():
    assert problems({f"{NS}:environment": "dev", f"{NS}:googleApi": "{not json"}) == [
        f"{NS}:googleApi: not valid JSON (Expecting property name enclosed in double quotes)"
    ]


def test_error_message_lists_problems_without_traceback_material():
    with pytest.raises(ConfigError) as e:
        parse({f"{NS}:environment": "qa"})
    text = str(e.value)
    assert text.startswith("invalid stack configuration (1 problem(s)):\n  - ml-diagnostics:environment")
    assert "Traceback" not in text and "pydantic" not in text


def test_placeholder_detection():
    assert is_placeholder(PLACEHOLDER_SECRET)
    assert is_placeholder(f"{PLACEHOLDER_SECRET}:abc123")
    assert not is_placeholder("-----BEGIN CERTIFICATE-----")
    assert not is_placeholder(None)


yaml_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20)
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)
keys = st.sampled_from(
    [
        "environment",
        "gkeClusters",
        "kubernetesClusters",
        "azureMl",
        "modelDevelopmentClusters",
        "googleApi",
        "bogus",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, yaml_values, max_size=6), st.booleans())
def test_fuzz_arbitrary_values_only_ever_raise_config_error(data, as_json):
    raw = {f"{NS}:{k}": (json.dumps(v) if as_json and not isinstance(v, str) else v) for k, v in data.items()}
    try:
        parse(raw)
    except ConfigError as e:
        assert e.problems, "a ConfigError always lists its problems"
        for p in e.problems:
            assert p.startswith(f"{NS}:"), p
