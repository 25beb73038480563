"""The adopt resource's provider against a loopback fake of the GKE API: exact requests, outputs, errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pulumi.dynamic import CheckFailure

from dev.fakes.gke_api import FakeGkeApi
from ml_diagnostics.providers import gke_managed_diagnostics as gmd
from ml_diagnostics.providers.google_rest import Clock, GoogleApiError, OperationFailed

P, L, C = "acme-ml-staging", "us-central1", "train-a"
CLUSTER = f"/v1/projects/{P}/locations/{L}/clusters/{C}"
OPS = f"/v1/projects/{P}/locations/{L}/operations"


class SimClock(Clock):
    """No real sleeping: time advances by what the client asks to sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def random(self) -> float:
        return 0.0


@pytest.fixture
def fake() -> Iterator[FakeGkeApi]:
    with FakeGkeApi() as f:
        f.add_cluster(P, L, C, version="1.35.1-gke.1396000", managed=False)
        yield f


@pytest.fixture(autouse=True)
def clock() -> SimClock:
    return SimClock()


def props(fake: FakeGkeApi, **over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "project": P,
        "location": L,
        "cluster": C,
        "enabled": True,
        "clusterVersion": "1.35.1-gke.1396000",
        "apiEndpoint": fake.url,
        "emulator": True,
    }
    return base | over


@pytest.fixture
def provider(clock: SimClock) -> gmd.ManagedMlDiagnosticsProvider:
    return gmd.ManagedMlDiagnosticsProvider(clock=clock)


def test_create_enables_and_waits_for_the_operation(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi, clock: SimClock
) -> None:
    fake.operation_polls = 2  # RUNNING twice, then DONE
    result = provider.create(props(fake))

    assert fake.calls() == [
        ("GET", CLUSTER),
        ("PUT", CLUSTER),
        ("GET", f"{OPS}/operation-0001"),
        ("GET", f"{OPS}/operation-0001"),
        ("GET", f"{OPS}/operation-0001"),
    ]
    put = fake.requests[1]
    assert put.body == {"update": {"desiredManagedMachineLearningDiagnosticsConfig": {"enabled": True}}}
    assert put.headers["Content-Type"] == "application/json"
    assert "x-goog-user-project" not in put.headers
    assert result.id == f"projects/{P}/locations/{L}/clusters/{C}"
    # the inputs, echoed, and what the provider found and started
    assert result.outs == props(fake) | {
        "previousEnabled": False,
        "liveVersion": "1.35.1-gke.1396000",
        "lastOperation": "operation-0001",
    }
    assert fake.managed(P, L, C) is True
    assert len(clock.sleeps) == 3  # one backoff before each poll


def test_create_when_already_in_the_wanted_state_sends_no_update(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    fake.add_cluster(P, L, C, version="1.35.1-gke.1396000", managed=True)
    result = provider.create(props(fake))
    assert fake.calls() == [("GET", CLUSTER)]
    assert result.outs["previousEnabled"] is True
    assert result.outs["lastOperation"] == ""


def test_quota_project_header(provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi) -> None:
    provider.create(props(fake, quotaProject="billing-proj"))
    assert {r.headers.get("x-goog-user-project") for r in fake.requests} == {"billing-proj"}


def test_absent_config_block_counts_as_disabled_and_delete_restores_it(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    fake.add_cluster(P, L, C, version="1.35.1-gke.1396000", managed=None)
    outs = provider.create(props(fake)).outs
    assert outs["previousEnabled"] is False
    assert fake.managed(P, L, C) is True

    fake.requests.clear()
    provider.delete("id", outs)
    assert fake.calls("PUT") == [("PUT", CLUSTER)]
    assert fake.requests[1].body == {
        "update": {"desiredManagedMachineLearningDiagnosticsConfig": {"enabled": False}}
    }
    assert fake.managed(P, L, C) is False


def test_delete_keeps_a_flag_that_was_on_before_the_program(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    fake.add_cluster(P, L, C, version="1.35.1-gke.1396000", managed=True)
    outs = provider.create(props(fake, enabled=False)).outs
    assert outs["previousEnabled"] is True
    assert fake.managed(P, L, C) is False
    fake.requests.clear()
    provider.delete("id", outs)
    assert [r.body for r in fake.requests if r.method == "PUT"] == [
        {"update": {"desiredManagedMachineLearningDiagnosticsConfig": {"enabled": True}}}
    ]
    assert fake.managed(P, L, C) is True


def test_update_flips_the_flag_and_keeps_the_recorded_previous_value(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    olds = provider.create(props(fake)).outs
    fake.requests.clear()
    outs = provider.update("id", olds, props(fake, enabled=False)).outs
    assert fake.calls() == [
        ("GET", CLUSTER),
        ("PUT", CLUSTER),
        ("GET", f"{OPS}/operation-0002"),
        ("GET", f"{OPS}/operation-0002"),
    ]
    assert fake.requests[1].body == {
        "update": {"desiredManagedMachineLearningDiagnosticsConfig": {"enabled": False}}
    }
    assert outs["enabled"] is False
    assert outs["previousEnabled"] is False
    assert outs["lastOperation"] == "operation-0002"


def test_failed_operation_reports_code_and_message(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    fake.operation_error = {"code": 9, "message": "Managed ML Diagnostics is not available in this location."}
    with pytest.raises(OperationFailed) as e:
        provider.create(props(fake))
    assert str(e.value) == (
        f"GKE cluster projects/{P}/locations/{L}/clusters/{C}: FAILED_PRECONDITION: operation "
        f"projects/{P}/locations/{L}/operations/operation-0001 failed (code 9, FAILED_PRECONDITION): "
        "Managed ML Diagnostics is not available in this location."
    )
    assert fake.managed(P, L, C) is False


def test_429_then_success(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi, clock: SimClock
) -> None:
    fake.fail_next("PUT", "/clusters/", 429, "Quota exceeded for quota metric 'Write requests'", times=2)
    provider.create(props(fake))
    assert [m for m, _ in fake.calls()] == ["GET", "PUT", "PUT", "PUT", "GET", "GET"]
    bodies = [r.body for r in fake.requests if r.method == "PUT"]
    assert bodies == [{"update": {"desiredManagedMachineLearningDiagnosticsConfig": {"enabled": True}}}] * 3
    assert clock.sleeps[:2] == [1.0, 2.0]  # request backoff (jitter 0 under the simulated clock)
    assert fake.managed(P, L, C) is True


def test_404_cluster_on_create(provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi) -> None:
    with pytest.raises(gmd.ClusterNotFound) as e:
        provider.create(props(fake, cluster="nope"))
    assert str(e.value) == (
        f"GKE cluster projects/{P}/locations/{L}/clusters/nope not found (HTTP 404): an adopted cluster must "
        "already exist; check project, location and cluster name, or set create: true to have the program "
        "create it"
    )
    assert fake.calls() == [("GET", f"/v1/projects/{P}/locations/{L}/clusters/nope")]


def test_404_on_read_means_gone_and_on_delete_means_done(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    gone = props(fake, cluster="nope", previousEnabled=False)
    assert provider.read("id", gone).id == ""
    provider.delete("id", gone)
    assert fake.calls("PUT") == []


def test_read_reports_drift(provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi) -> None:
    outs = provider.create(props(fake)).outs
    fake.clusters[(P, L, C)]["managedMachineLearningDiagnosticsConfig"] = {"enabled": False}
    read = provider.read("x", outs)
    assert read.id == "x"
    assert read.outs["enabled"] is False
    assert provider.diff("x", read.outs, props(fake)).changes is True


def test_permission_denied_is_not_retried(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    fake.fail_next("PUT", "/clusters/", 403, "Required 'container.clusters.update' permission")
    with pytest.raises(GoogleApiError) as e:
        provider.create(props(fake))
    assert str(e.value) == (
        f"GKE cluster projects/{P}/locations/{L}/clusters/{C} (PUT {CLUSTER}): HTTP 403, PERMISSION_DENIED: "
        "Required 'container.clusters.update' permission"
    )
    assert fake.calls("PUT") == [("PUT", CLUSTER)]


def next_put_finds_the_cluster_busy(fake: FakeGkeApi) -> None:
    """The next PUT is refused because the cluster is busy with operation-0001."""
    fake.fail_next(
        "PUT",
        "/clusters/",
        400,
        "Cluster is running incompatible operation operation-0001.",
        reason="FAILED_PRECONDITION",
    )


def test_busy_cluster_waits_for_the_running_operation_then_retries(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    next_put_finds_the_cluster_busy(fake)
    # the operation the message names exists (e.g. an upgrade someone else started)
    running = fake.add_operation(P, L, C, polls=0)
    provider.create(props(fake))
    assert fake.calls() == [
        ("GET", CLUSTER),
        ("PUT", CLUSTER),
        ("GET", f"{OPS}/operation-0001"),
        ("GET", CLUSTER),  # the flag still differs after the running operation: send again
        ("PUT", CLUSTER),
        ("GET", f"{OPS}/operation-0002"),
        ("GET", f"{OPS}/operation-0002"),
    ]
    assert running.done


def test_busy_with_the_same_change_sends_nothing_again(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    """A PUT retried after its answer was lost finds its own operation running: no second operation."""
    next_put_finds_the_cluster_busy(fake)
    running = fake.add_operation(P, L, C, polls=0)
    running.apply = {gmd.FIELD: {"enabled": True}}
    out = provider.create(props(fake))
    assert fake.calls("PUT") == [("PUT", CLUSTER)]
    assert out.outs["lastOperation"] == "operation-0001" and fake.managed(P, L, C) is True


def test_check_refuses_managed_on_an_old_declared_version(provider: gmd.ManagedMlDiagnosticsProvider) -> None:
    res = provider.check(
        {}, {"project": P, "location": L, "cluster": C, "enabled": True, "clusterVersion": "1.34.1-gke.100"}
    )
    assert [(f.property, f.reason) for f in res.failures] == [
        (
            "enabled",
            "managed ML diagnostics needs GKE >= 1.35.0-gke.3065000; clusterVersion is 1.34.1-gke.100",
        )
    ]
    ok = provider.check(
        {}, {"project": P, "location": L, "cluster": C, "enabled": False, "clusterVersion": "1.34.1-gke.100"}
    )
    assert ok.failures == []
    assert isinstance(CheckFailure("a", "b"), CheckFailure)


def test_create_refuses_enabling_on_a_live_cluster_below_the_threshold(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    fake.add_cluster(P, L, C, version="1.34.3-gke.1000", managed=False)
    with pytest.raises(ValueError) as e:
        provider.create(props(fake))
    assert str(e.value) == (
        f"GKE cluster projects/{P}/locations/{L}/clusters/{C} runs GKE 1.34.3-gke.1000; managed ML diagnostics "
        "needs GKE >= 1.35.0-gke.3065000. Upgrade the cluster or use mode manual"
    )
    assert fake.calls("PUT") == []


def test_diff_flip_is_an_update_and_identity_change_a_replace(
    provider: gmd.ManagedMlDiagnosticsProvider,
) -> None:
    olds = {"project": P, "location": L, "cluster": C, "enabled": True, "clusterVersion": "1.35.1-gke.1"}
    same = provider.diff("id", olds, dict(olds))
    assert (same.changes, same.replaces) == (False, [])
    flip = provider.diff("id", olds, olds | {"enabled": False})
    assert (flip.changes, flip.replaces) == (True, [])
    moved = provider.diff("id", olds, olds | {"cluster": "other"})
    assert (moved.changes, moved.replaces) == (True, ["cluster"])


def test_provider_pickles_small_and_without_sessions() -> None:
    import pickle

    p = gmd.ManagedMlDiagnosticsProvider()
    assert vars(p) == {"clock": None}
    assert vars(pickle.loads(pickle.dumps(p))) == {"clock": None}


def test_provider_as_pickled_into_state_works_in_a_fresh_process(fake: FakeGkeApi) -> None:
    """The engine unpickles the provider in another process: it must import by module path and run."""
    import base64
    import json
    import subprocess
    import sys

    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(gmd.ManagedMlDiagnosticsProvider())
    script = (
        "import base64, json, sys, dill\n"
        "p = dill.loads(base64.b64decode(sys.argv[1]))\n"
        "print(json.dumps([type(p).__module__, type(p).__name__, p.create(json.loads(sys.argv[2])).outs]))\n"
    )
    fake.operation_polls, fake.finish_at_once = 0, True  # the wall clock: no first poll to wait for
    out = subprocess.run(
        [sys.executable, "-c", script, blob, json.dumps(props(fake))],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=str(__import__("pathlib").Path(__file__).resolve().parents[1]),
    )
    module, cls, outs = json.loads(out.stdout)
    assert (module, cls) == (
        "ml_diagnostics.providers.gke_managed_diagnostics",
        "ManagedMlDiagnosticsProvider",
    )
    assert outs["previousEnabled"] is False and outs["lastOperation"] == "operation-0001"
    assert len(base64.b64decode(blob)) < 300  # by reference: no code or session inside
    assert fake.managed(P, L, C) is True


# --- import (adopting a cluster whose flag was set with gcloud) ------------------------------------------

ID = f"projects/{P}/locations/{L}/clusters/{C}"


def engine_inputs(fake: FakeGkeApi, **over: object) -> dict[str, object]:
    """What the engine passes to read on an import: the program's inputs, outputs still unset."""
    return props(fake, **over) | {"quotaProject": None, "previousEnabled": None, "liveVersion": None}


def test_import_of_a_cluster_already_managed_shows_no_diff(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    fake.clusters[(P, L, C)]["managedMachineLearningDiagnosticsConfig"] = {"enabled": True}
    inputs = engine_inputs(fake)
    read = provider.read(ID, inputs)
    assert read.id == ID
    assert read.inputs == {k: v for k, v in inputs.items() if v is not None}
    assert (read.outs["previousEnabled"], read.outs["liveVersion"]) == (True, "1.35.1-gke.1396000")
    d = provider.diff(ID, read.outs, inputs)
    assert (d.changes, d.replaces) == (False, [])
    assert fake.calls() == [("GET", CLUSTER)]


def test_import_of_a_cluster_with_the_flag_off_shows_exactly_enabled(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    inputs = engine_inputs(fake)
    read = provider.read(ID, inputs)
    assert {k for k in read.inputs if read.inputs[k] != inputs.get(k)} == {"enabled"}
    assert read.outs["previousEnabled"] is False  # delete will put it back off
    d = provider.diff(ID, read.outs, inputs)
    assert (d.changes, d.replaces) == (True, [])


def test_import_by_id_alone(provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi) -> None:
    read = provider.read(ID, {"apiEndpoint": fake.url, "emulator": True})
    assert (read.inputs["project"], read.inputs["location"], read.inputs["cluster"]) == (P, L, C)
    assert (read.inputs["enabled"], read.inputs["clusterVersion"]) == (False, "1.35.1-gke.1396000")


def test_lost_put_answer_never_starts_a_second_operation(
    provider: gmd.ManagedMlDiagnosticsProvider, fake: FakeGkeApi
) -> None:
    """The PUT took effect but its answer was a 503: the retry meets our own running operation, waits for
    it and finds the flag set; nothing is sent a third time."""
    fake.operation_polls = 1
    fake.fail_next("PUT", "/clusters/", 503, "backend error", after=True)
    out = provider.create(props(fake))
    assert fake.calls() == [
        ("GET", CLUSTER),
        ("PUT", CLUSTER),  # took effect: operation-0001 started; answered 503
        ("PUT", CLUSTER),  # retried: "running incompatible operation operation-0001"
        ("GET", f"{OPS}/operation-0001"),
        ("GET", f"{OPS}/operation-0001"),
        ("GET", CLUSTER),  # the flag is on: done
    ]
    assert list(fake._operations) == ["operation-0001"]
    assert out.outs["lastOperation"] == "operation-0001" and fake.managed(P, L, C) is True
