"""Retries of the Model Development Cluster provider against the loopback Vertex fake's injected faults:
lost PATCH answers never start a second operation, brief operation 404s are pending, retry settings apply."""

from __future__ import annotations

import copy

import pytest

from ml_diagnostics.providers.model_development_cluster import ModelDevelopmentClusterError

P = "projects/p/locations/us-central1"
NAME = f"{P}/modelDevelopmentClusters/mdc1"
BASE = f"/v1beta1/{NAME}"


@pytest.fixture()
def created(provider, api, spec, clock):
    outs = provider.create(copy.deepcopy(spec)).outs
    api.requests.clear()
    clock.sleeps.clear()
    new = copy.deepcopy(spec)
    new["labels"] = {"team": "research"}
    return outs, new


def calls(api):
    return [(r.method, r.path) for r in api.api_requests()]


def test_lost_patch_answer_waits_for_the_running_operation(provider, api, created):
    outs, new = created
    api.inject("PATCH", "mdc1", None, after=True)  # accepted, then the connection dropped
    res = provider.update(NAME, outs, new)
    assert calls(api) == [("PATCH", BASE), ("GET", f"{BASE}/operations")]  # no second PATCH
    assert len([o for o in api.operations.values() if o.kind == "update"]) == 1
    assert res.outs["labels"] == {"team": "research"} and res.outs["state"] == "RUNNING"


def test_lost_patch_answer_after_the_operation_finished_checks_the_cluster(provider, api, created):
    outs, new = created
    api.operation_seconds = 0
    api.inject("PATCH", "mdc1", 502, after=True)  # applied, but the answer was a 502
    res = provider.update(NAME, outs, new)
    assert calls(api) == [("PATCH", BASE), ("GET", f"{BASE}/operations"), ("GET", BASE)]
    assert res.outs["labels"] == {"team": "research"}


def test_patch_that_failed_before_taking_effect_is_sent_again(provider, api, created, clock):
    outs, new = created
    api.inject("PATCH", "mdc1", 503)  # rejected: nothing started
    provider.update(NAME, outs, new)
    assert calls(api) == [("PATCH", BASE), ("GET", f"{BASE}/operations"), ("GET", BASE), ("PATCH", BASE)]
    assert len([o for o in api.operations.values() if o.kind == "update"]) == 1
    assert clock.sleeps[0] == 0.75  # backed off before looking


@pytest.mark.parametrize("status", [408, 429])
def test_patch_refused_for_now_is_retried_without_looking(provider, api, created, status):
    outs, new = created
    api.inject("PATCH", "mdc1", status, retry_after="3")
    provider.update(NAME, outs, new)
    assert calls(api) == [("PATCH", BASE), ("PATCH", BASE)]


def test_patch_gives_up_at_the_configured_deadline(provider, api, created, clock):
    outs, new = created
    new["retry"] = {
        "deadline_minutes": 0.5,
        "initial_delay_seconds": 5,
        "max_delay_seconds": 10,
        "multiplier": 2,
    }
    api.inject("PATCH", "mdc1", 429, times=100, message="Quota exceeded for aiplatform.googleapis.com")
    with pytest.raises(ModelDevelopmentClusterError) as e:
        provider.update(NAME, outs, new)
    assert str(e.value) == (
        f"updating labels failed: {NAME} (PATCH {BASE}): HTTP 429, RESOURCE_EXHAUSTED: Quota exceeded for "
        "aiplatform.googleapis.com"
    )
    assert clock.sleeps == [3.75, 7.5, 7.5, 7.5]  # 5, 10, 10, 10 s less 25 % jitter; a fifth passes 30 s
    assert api.operations == {k: v for k, v in api.operations.items() if v.kind == "create"}


def test_operation_404_right_after_the_update_is_pending(provider, api, created):
    outs, new = created
    api.operation_not_found_polls = 3
    res = provider.update(NAME, outs, new)
    assert res.outs["labels"] == {"team": "research"}


def test_create_retried_on_504_looks_first(provider, api, spec):
    api.inject("POST", "modelDevelopmentClusters", 504)
    provider.create(copy.deepcopy(spec))
    assert calls(api) == [
        ("POST", f"/v1beta1/{P}/modelDevelopmentClusters"),
        ("GET", BASE),
        ("POST", f"/v1beta1/{P}/modelDevelopmentClusters"),
    ]


def test_reads_retry_server_errors(provider, api, spec):
    outs = provider.create(copy.deepcopy(spec)).outs
    api.requests.clear()
    api.inject("GET", "mdc1", 500, times=2)
    assert provider.read(NAME, outs).id == NAME
    assert calls(api) == [("GET", BASE)] * 3
