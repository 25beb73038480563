"""The config loader: key paths, unknown keys, unique names, secrets, and a fuzz that only ever sees ConfigError."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from program.clouds import clouds_of
from program.config import PLACEHOLDER_SECRET, ConfigError, is_placeholder, parse
from program.kinds.table import KINDS

NS = "ml-diagnostics"
# The stack file's keys: the kinds' lists and their clouds' settings (program/kinds/table.py), and these.
KIND_KEYS = [k.key for k in KINDS]
CLOUD_KEYS = [c.settings.key for c in clouds_of(KINDS) if c.settings is not None]


def problems(raw: dict, secret_keys: tuple[str, ...] = ()) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(raw, secret_keys)
    return e.value.problems


def test_minimal_config_parses():
    cfg = parse({f"{NS}:environment": "dev"})
    assert cfg.environment == "dev"
    assert all(getattr(cfg, k.field) == [] for k in KINDS)


def test_environment_names_allowed_values():
    assert problems({f"{NS}:environment": "qa"}) == [
        f"{NS}:environment: must be one of 'dev', 'staging' or 'prod'"
    ]


def test_missing_environment():
    assert problems({}) == [f"{NS}:environment: required key is missing"]


def test_unknown_top_level_key_lists_allowed_keys():
    out = problems({f"{NS}:environment": "dev", f"{NS}:gkeCluster": []})
    allowed = ", ".join(sorted(["environment", "extraRegions", *KIND_KEYS, *CLOUD_KEYS]))
    assert out == [f"{NS}:gkeCluster: unknown key (did you mean 'gkeClusters'?); allowed keys: {allowed}"]
    assert {"azureMl", "gkeClusters", "googleApi", "kubernetesClusters"} <= set(allowed.split(", "))


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
    assert (
        f"{NS}:googleApi.endpoints.compute (key): must be one of 'aiplatform', 'container' or 'iamcredentials'"
        in out
    )
    assert (
        f"{NS}:googleApi.quotaProjct: unknown key (did you mean 'quotaProject'?); allowed keys: emulator, endpoints, impersonateServiceAccount, quotaProject, retry"
        in out
    )
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
# A value of another type at a key of a shaped target: small, since the shape around it comes from the model.
wrong_values = st.recursive(
    yaml_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=2), st.dictionaries(st.text(max_size=8), children, max_size=2)
    ),
    max_leaves=4,
)
keys = st.sampled_from(["environment", *KIND_KEYS, *CLOUD_KEYS, "bogus"])


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


@functools.cache
def _shaped(model, depth: int = 0):
    """Dicts keyed by the model's real keys (so validators run), values of any type or the right shape.
    Built once per model: rebuilding the nested strategies for every example cost most of the test."""
    import typing

    from pydantic import BaseModel

    fields = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        subs = [
            a for a in typing.get_args(field.annotation) if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            subs = [field.annotation]
        for a in typing.get_args(field.annotation):  # list[Model] / Model | None
            subs += [b for b in typing.get_args(a) if isinstance(b, type) and issubclass(b, BaseModel)]
        options = [wrong_values, st.sampled_from(["", "x", "LoadBalancer", "0.8", "1.34.0-gke.1", "a" * 70])]
        if subs and depth < 4:
            inner = _shaped(subs[0], depth + 1)
            options += [inner, st.lists(inner, max_size=2)]
        fields[key] = st.one_of(*options)
    return st.fixed_dictionaries({}, optional=fields)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(st.data())
def test_fuzz_shaped_targets_only_ever_raise_config_error(data):
    from program.config import StackModel as StackConfig

    kinds = {f.alias: f for f in StackConfig.model_fields.values()}
    raw = {f"{NS}:environment": data.draw(st.sampled_from(["dev", "prod", "qa"]))}
    for kind in KIND_KEYS:
        import typing

        (model,) = typing.get_args(kinds[kind].annotation)
        raw[f"{NS}:{kind}"] = data.draw(st.lists(_shaped(model), max_size=2))
    try:
        parse(raw, secret_keys=data.draw(st.sets(st.sampled_from(list(raw)))))
    except ConfigError as e:
        assert e.problems and all(p.startswith(f"{NS}:") for p in e.problems), e.problems


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _mutate(value, path, op, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    out = dict(value) if isinstance(value, dict) else list(value)
    if not rest and op == "delete":
        del out[head]
    else:
        out[head] = _mutate(value[head], rest, op, new)
    return out


def _stack_configs():
    from mldiag.engine.runtime import ROOT
    from mldiag.plan.cli import read_stack_file

    return [read_stack_file(p) for p in sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))]


STACK_CONFIGS = _stack_configs()


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutated_real_stacks_only_ever_raise_config_error(data):
    """Start from the real stack files (every validator runs) and break one thing."""
    config, secret_keys = data.draw(st.sampled_from(STACK_CONFIGS))
    key = data.draw(st.sampled_from(sorted(k for k in config if k.startswith(f"{NS}:"))))
    paths = list(_paths(config[key]))
    path = data.draw(st.sampled_from(paths))
    op = data.draw(st.sampled_from(["set", "delete"] if path else ["set"]))
    new = data.draw(st.one_of(yaml_values, st.sampled_from(["", "LATEST", "0.7", "1.0.0", "oci://x", "A B"])))
    raw = dict(config)
    raw[key] = _mutate(config[key], path, op, new)
    try:
        parse(raw, secret_keys)
    except ConfigError as e:
        assert e.problems and all(p.startswith(f"{NS}:") for p in e.problems), e.problems
