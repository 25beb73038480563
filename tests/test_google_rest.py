"""The shared Google REST client against the loopback Vertex fake (and a stub session for the GKE shape)."""

from __future__ import annotations

from typing import Any

import pytest

from dev.fakes.vertex_api import FakeAuth, FakeVertexApi, SimulatedClock
from ml_diagnostics.providers import google_rest
from ml_diagnostics.providers.google_rest import (
    GKE,
    VERTEX,
    GoogleApiError,
    GoogleRestClient,
    OperationFailed,
    OperationTimeout,
    PollSchedule,
    RetryPolicy,
)

CLUSTER = "projects/p/locations/us-central1/modelDevelopmentClusters/c1"
SA = "deployer@acme-ml.iam.gserviceaccount.com"


@pytest.fixture()
def api(api: FakeVertexApi) -> FakeVertexApi:
    api.put_cluster(CLUSTER, {"displayName": "c1"})
    return api


def client(api: FakeVertexApi, clock: SimulatedClock, **kw: Any) -> GoogleRestClient:
    kw.setdefault("emulator", True)
    return GoogleRestClient(f"{api.endpoint}/v1beta1", clock=clock, **kw)


@pytest.mark.parametrize(
    "url", ["https://us-central1-aiplatform.googleapis.com/v1beta1", "http://10.1.2.3:80/v1"]
)
def test_emulator_mode_only_on_the_loopback(url):
    host = url.split("/")[2]
    with pytest.raises(ValueError) as e:
        GoogleRestClient(url, emulator=True)
    assert str(e.value) == (
        "emulator mode sends no credentials, so only loopback endpoints (127.0.0.1, localhost, ::1) are "
        f"allowed; {host!r} is not one"
    )
    with pytest.raises(ValueError, match="emulator mode uses no credentials"):
        GoogleRestClient("http://127.0.0.1:1/v1", emulator=True, impersonate_service_account=SA)


def test_emulator_mode_sends_no_credentials_and_the_quota_project(api, clock):
    got = client(api, clock, quota_project="billing-proj").request("GET", CLUSTER)
    assert got["displayName"] == "c1"
    (req,) = api.requests
    assert (req.method, req.path) == ("GET", f"/v1beta1/{CLUSTER}")
    assert "authorization" not in req.headers
    assert req.headers["x-goog-user-project"] == "billing-proj"
    assert req.headers["user-agent"] == "ml-diagnostics/1.0"


def test_no_quota_header_when_not_configured(api, clock):
    client(api, clock).request("GET", CLUSTER)
    assert "x-goog-user-project" not in api.requests[0].headers


def test_adc_credentials_reach_the_api(api, clock, monkeypatch, tmp_path):
    api.auth = FakeAuth()
    monkeypatch.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS", api.auth.adc_file(api.endpoint, tmp_path / "adc.json")
    )
    c = client(api, clock, emulator=False, quota_project="billing")
    assert c._session is None  # created lazily
    assert c.request("GET", CLUSTER)["name"] == CLUSTER
    token, get = api.requests
    assert token.path == "/token" and api.auth.token_requests[0]["grant_type"] == [
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    ]
    assert get.headers["authorization"] == f"Bearer {FakeAuth.SOURCE_TOKEN}"
    assert get.headers["x-goog-user-project"] == "billing"


def test_impersonated_credentials_reach_the_api(api, clock, monkeypatch, tmp_path):
    api.auth = FakeAuth(service_account=SA)
    monkeypatch.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS", api.auth.adc_file(api.endpoint, tmp_path / "adc.json")
    )
    c = client(api, clock, emulator=False, impersonate_service_account=SA, iam_endpoint=api.endpoint)
    c.request("GET", CLUSTER)
    assert [r.path for r in api.requests] == [
        "/token",
        f"/v1/projects/-/serviceAccounts/{SA}:generateAccessToken",
        f"/v1beta1/{CLUSTER}",
    ]
    ((sa, body, headers),) = api.auth.iam_requests
    assert sa == SA and headers["authorization"] == f"Bearer {FakeAuth.SOURCE_TOKEN}"
    assert body["scope"] == [google_rest.CLOUD_PLATFORM_SCOPE]
    assert api.requests[-1].headers["authorization"] == f"Bearer {FakeAuth.IMPERSONATED_TOKEN}"


def test_impersonation_refused_by_iam_is_an_error_naming_it(api, clock, monkeypatch, tmp_path):
    api.auth = FakeAuth(service_account="someone-else@p.iam.gserviceaccount.com")
    monkeypatch.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS", api.auth.adc_file(api.endpoint, tmp_path / "adc.json")
    )
    c = client(api, clock, emulator=False, impersonate_service_account=SA, iam_endpoint=api.endpoint)
    with pytest.raises(Exception, match="Unable to acquire impersonated credentials"):
        c.request("GET", CLUSTER)
    assert f"/v1beta1/{CLUSTER}" not in [r.path for r in api.requests]


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_idempotent_call_retries_with_exponential_backoff(api, clock, status):
    api.inject("GET", CLUSTER, status, times=2)
    assert client(api, clock).request("GET", CLUSTER)["name"] == CLUSTER
    assert len(api.requests) == 3
    # random() = 0.5, jitter 0.5: each delay is 75 % of 1 s, 2 s, ...
    assert clock.sleeps == [0.75, 1.5]


def test_retry_settings_shape_the_backoff(api, clock):
    api.inject("GET", CLUSTER, 503, times=3)
    retry = RetryPolicy.from_inputs(
        {"deadline_minutes": 1, "initial_delay_seconds": 2, "max_delay_seconds": 5, "multiplier": 3}
    )
    client(api, clock, retry=retry).request("GET", CLUSTER)
    assert clock.sleeps == [1.5, 3.75, 3.75]  # 2, 6 -> 5, 5 s, less 25 % jitter


def test_dropped_connection_is_retried_for_get(api, clock):
    api.inject("GET", CLUSTER, None)
    assert client(api, clock).request("GET", CLUSTER)["name"] == CLUSTER
    assert [r.method for r in api.requests] == ["GET", "GET"]


def test_retry_after_seconds_is_honoured(api, clock):
    api.inject("GET", CLUSTER, 429, retry_after="7")
    assert client(api, clock).request("GET", CLUSTER)["name"] == CLUSTER
    assert clock.sleeps == [7.0]


def test_retry_after_http_date_is_honoured():
    assert google_rest.retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert google_rest.retry_after_seconds("soon") is None


def test_retry_after_beyond_the_deadline_gives_up_at_once(api, clock):
    api.inject("GET", CLUSTER, 503, retry_after="600", message="come back later")
    with pytest.raises(GoogleApiError) as e:
        client(api, clock).request("GET", CLUSTER, resource="cluster c1")
    assert (len(api.requests), clock.sleeps, e.value.retry_after) == (1, [], 600.0)


def test_non_idempotent_call_is_not_retried(api, clock):
    api.inject("POST", "modelDevelopmentClusters", 503)
    with pytest.raises(GoogleApiError) as e:
        client(api, clock).request(
            "POST",
            "projects/p/locations/us-central1/modelDevelopmentClusters?modelDevelopmentClusterId=x",
            json={},
        )
    assert len(api.requests) == 1
    assert e.value.http_status == 503 and e.value.answer_lost and e.value.retryable
    assert clock.sleeps == []


def test_dropped_connection_on_post_raises_without_retry(api, clock):
    api.inject("POST", "modelDevelopmentClusters", None)
    with pytest.raises(GoogleApiError) as e:
        client(api, clock).request(
            "POST", "projects/p/locations/us-central1/modelDevelopmentClusters", json={}
        )
    assert e.value.http_status is None


def test_gives_up_at_the_retry_deadline(api, clock):
    api.inject("GET", CLUSTER, 503, times=100, message="backend unavailable")
    with pytest.raises(GoogleApiError) as e:
        client(api, clock, retry=RetryPolicy(deadline=10)).request("GET", CLUSTER, resource="cluster c1")
    assert clock.sleeps == [0.75, 1.5, 3.0]  # the next (6 s) would pass the 10 s deadline
    assert len(api.requests) == 4
    assert str(e.value) == f"cluster c1 (GET /v1beta1/{CLUSTER}): HTTP 503, UNAVAILABLE: backend unavailable"


def test_default_deadline_is_minutes_long(api, clock):
    api.inject("GET", CLUSTER, 503, times=1000)
    with pytest.raises(GoogleApiError):
        client(api, clock).request("GET", CLUSTER)
    assert 240 < clock.now <= 300 and max(clock.sleeps) == 32 * 0.75


def test_error_names_resource_status_reason_and_message(api, clock):
    with pytest.raises(GoogleApiError) as e:
        client(api, clock).request("GET", CLUSTER + "x", resource="cluster c1x")
    err = e.value
    assert (err.http_status, err.status, err.reason) == (404, "NOT_FOUND", "RESOURCE_NOT_FOUND")
    assert str(err) == (
        f"cluster c1x (GET /v1beta1/{CLUSTER}x): HTTP 404, NOT_FOUND, reason RESOURCE_NOT_FOUND: "
        f'ModelDevelopmentCluster "{CLUSTER}x" not found.'
    )


def test_wait_operation_polls_on_the_schedule_until_done(api, clock):
    c = client(api, clock)
    op = c.request("DELETE", CLUSTER)
    done = c.wait_operation(op, 600, style=VERTEX)
    assert done["done"] is True
    polls = [r for r in api.requests if "/operations/" in r.path]
    assert all(r.method == "GET" and r.path == f"/v1beta1/{op['name']}" for r in polls)
    # 15 s twice, then 18 % of the time elapsed, 5 % jitter at random()=0.5; done at 30 s, noticed at the first
    # poll after it (33.4 s: 11 % late; a fixed 2 s + 10 s poller would make 4 polls and notice it at 32 s).
    assert clock.sleeps == pytest.approx([14.25, 14.25, 0.18 * 28.5 * 0.95])
    assert len(polls) == 3
    assert clock.now == pytest.approx(sum(clock.sleeps))


def test_wait_operation_interval_grows_with_the_elapsed_time_up_to_30s(api, clock):
    api.operation_seconds = 600
    c = client(api, clock)
    op = c.request("DELETE", CLUSTER)
    c.wait_operation(op, 900)
    assert clock.sleeps[:2] == pytest.approx([14.25, 14.25])
    elapsed = sum(clock.sleeps[:2])
    for sleep in clock.sleeps[2:]:
        assert sleep == pytest.approx(min(30.0, 0.18 * elapsed) * 0.95)
        elapsed += sleep
    assert max(clock.sleeps) == pytest.approx(28.5)  # 30 s less 5 % jitter
    assert api.operations[op["name"]].polls == len(clock.sleeps) < 30  # a fixed 10 s poller: 61


def test_poll_schedule_against_a_fixed_poller():
    """At every whole second from 30 s to an hour: no more polls than 2 s + every 10 s, and the worst lateness
    is the share of the elapsed time (mean lateness is what bench_lro prints)."""
    s = PollSchedule(jitter=0.0)
    times, t = [], 0.0
    while t < 3700:
        t += s.delay(len(times), t, 0.0)
        times.append(t)
    for d in range(30, 3601):
        ours = next(i for i, x in enumerate(times) if x >= d) + 1
        fixed = next(k for k in range(1000) if 2 + 10 * k >= d) + 1
        assert ours <= fixed, d
        assert times[ours - 1] - d <= max(s.share * d, 15.0), d


def test_wait_operation_deadline(api, clock):
    api.operation_seconds = 10_000
    c = client(api, clock)
    op = c.request("DELETE", CLUSTER)
    with pytest.raises(OperationTimeout) as e:
        c.wait_operation(op, 60, resource="cluster c1")
    assert clock.now == pytest.approx(60)  # the last sleep is cut to the deadline
    assert str(e.value).startswith(
        f"cluster c1: DEADLINE_EXCEEDED: operation {op['name']} still running after 60 s"
    )


def test_wait_operation_error_surfaces_code_and_message(api, clock):
    api.fail_next_operation(9, "node pool gpu: reservation not found")
    c = client(api, clock)
    op = c.request("DELETE", CLUSTER)
    with pytest.raises(OperationFailed) as e:
        c.wait_operation(op, 600, resource="cluster c1")
    assert e.value.code == 9
    assert e.value.status == "FAILED_PRECONDITION"
    assert str(e.value) == (
        f"cluster c1: FAILED_PRECONDITION: operation {op['name']} failed (code 9, FAILED_PRECONDITION): "
        "node pool gpu: reservation not found"
    )


def test_wait_operation_retries_a_dropped_poll(api, clock):
    c = client(api, clock)
    op = c.request("DELETE", CLUSTER)
    api.inject("GET", "/operations/", None)
    assert c.wait_operation(op, 600)["done"] is True


def test_already_done_operation_needs_no_request(clock):
    c = GoogleRestClient("https://x.example/v1", session=object(), clock=clock)  # type: ignore[arg-type]
    assert c.wait_operation({"name": "projects/p/locations/l/operations/o", "done": True}, 10) == {
        "name": "projects/p/locations/l/operations/o",
        "done": True,
    }


GKE_CLUSTER = "projects/p/locations/us-central1/clusters/c"
GKE_OP = "/v1/projects/p/locations/us-central1/operations/operation-0001"


@pytest.fixture()
def gke(gke_api):
    gke_api.add_cluster("p", "us-central1", "c", version="1.35.1-gke.1396000")
    gke_api.operation_polls = 2  # RUNNING twice, then DONE
    return gke_api


def gke_client(gke, clock) -> GoogleRestClient:
    return GoogleRestClient(f"{gke.url}/v1", emulator=True, clock=clock)


def start_gke_operation(c: GoogleRestClient) -> dict[str, Any]:
    body = {"update": {"desiredManagedMachineLearningDiagnosticsConfig": {"enabled": True}}}
    return c.request("PUT", GKE_CLUSTER, json=body)


def test_gke_operation_by_full_name(gke, clock):
    c = gke_client(gke, clock)
    start_gke_operation(c)
    c.wait_operation("projects/p/locations/us-central1/operations/operation-0001", 600, style=GKE)
    assert gke.calls("GET") == [("GET", GKE_OP)] * 3


def test_gke_operation_polls_self_link_when_the_name_is_short(gke, clock):
    c = gke_client(gke, clock)
    op = start_gke_operation(c)
    assert (op["name"], op["selfLink"]) == ("operation-0001", f"{gke.url}{GKE_OP}")
    done = c.wait_operation(op, 600, style=GKE)
    assert done["status"] == "DONE" and gke.calls("GET") == [("GET", GKE_OP)] * 3


def test_gke_operation_error(gke, clock):
    gke.operation_error = {"code": 3, "message": "bad version"}
    c = gke_client(gke, clock)
    with pytest.raises(OperationFailed, match=r"failed \(code 3, INVALID_ARGUMENT\): bad version"):
        c.wait_operation(start_gke_operation(c), 600, style=GKE)


def test_operation_404_right_after_the_call_counts_as_pending(api, clock):
    api.operation_not_found_polls = 2
    c = client(api, clock)
    op = c.request("DELETE", CLUSTER)
    assert c.wait_operation(op, 600)["done"] is True
    polls = [r for r in api.requests if "/operations/" in r.path]
    # the first two polls (15 s, 30 s) were answered 404; the operation still ends at 30 s, seen at the third
    assert (len(polls), api.operations[op["name"]].polls) == (3, 1)


def test_operation_404_that_lasts_past_the_retry_deadline_is_an_error(api, clock):
    api.operation_not_found_polls = 1000
    c = client(api, clock, retry=RetryPolicy(deadline=30))
    op = c.request("DELETE", CLUSTER)
    with pytest.raises(GoogleApiError) as e:
        c.wait_operation(op, 600, resource="cluster c1")
    assert e.value.http_status == 404 and 30 <= clock.now < 45


def test_one_client_factory():
    """Every client of the library and the program comes from `google_rest.client` (one spelling of settings)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    callers = []
    for base in (root / "components", root / "program", root / "mldiag", root / "dev"):
        for path in base.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", getattr(node.func, "attr", "")) == "GoogleRestClient"
                ):
                    callers.append(path.relative_to(root).as_posix())
    assert callers == ["components/ml_diagnostics/providers/google_rest.py"]
