"""The shared Google REST client against the loopback Vertex fake (and a stub session for the GKE shape)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.providers import google_rest
from components.providers.google_rest import (
    GKE,
    VERTEX,
    GoogleApiError,
    GoogleRestClient,
    OperationFailed,
    OperationTimeout,
)
from tests.fakes.vertex_api import FakeVertexApi, SimulatedClock

CLUSTER = "projects/p/locations/us-central1/modelDevelopmentClusters/c1"


@pytest.fixture()
def api(api: FakeVertexApi) -> FakeVertexApi:
    api.put_cluster(CLUSTER, {"displayName": "c1"})
    return api


def client(api: FakeVertexApi, clock: SimulatedClock, **kw: Any) -> GoogleRestClient:
    return GoogleRestClient(
        f"{api.endpoint}/v1beta1", anonymous=True, custom_endpoint=True, clock=clock, **kw
    )


def test_anonymous_requires_a_custom_endpoint():
    with pytest.raises(ValueError, match="only allowed against a custom endpoint"):
        GoogleRestClient("https://us-central1-aiplatform.googleapis.com/v1beta1", anonymous=True)


def test_get_sends_quota_project_and_user_agent(api, clock):
    got = client(api, clock, quota_project="billing-proj").request("GET", CLUSTER)
    assert got["displayName"] == "c1"
    (req,) = api.requests
    assert (req.method, req.path) == ("GET", f"/v1beta1/{CLUSTER}")
    assert req.headers["x-goog-user-project"] == "billing-proj"
    assert req.headers["user-agent"] == "ml-diagnostics/1.0"


def test_no_quota_header_when_not_configured(api, clock):
    client(api, clock).request("GET", CLUSTER)
    assert "x-goog-user-project" not in api.requests[0].headers


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_idempotent_call_retries_with_exponential_backoff(api, clock, status):
    api.inject("GET", CLUSTER, status, times=2)
    assert client(api, clock).request("GET", CLUSTER)["name"] == CLUSTER
    assert len(api.requests) == 3
    # random() = 0.5, jitter 0.5: each delay is 75 % of 1 s, 2 s, ...
    assert clock.sleeps == [0.75, 1.5]


def test_dropped_connection_is_retried_for_get(api, clock):
    api.inject("GET", CLUSTER, None)
    assert client(api, clock).request("GET", CLUSTER)["name"] == CLUSTER
    assert [r.method for r in api.requests] == ["GET", "GET"]


def test_retry_after_header_is_honoured(clock):
    class Resp:
        def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
            self.status_code, self.headers, self.reason = status, headers or {}, ""
            self.content = json.dumps(body).encode()
            self.text = self.content.decode()

        def json(self) -> Any:
            return json.loads(self.content)

    class Session:
        def __init__(self):
            self.answers = [
                Resp(429, {"error": {"code": 429}}, {"Retry-After": "7"}),
                Resp(200, {"ok": True}),
            ]

        def request(self, *a: Any, **kw: Any) -> Resp:
            return self.answers.pop(0)

    c = GoogleRestClient("https://x.example/v1", session=Session(), clock=clock)  # type: ignore[arg-type]
    assert c.request("GET", "thing") == {"ok": True}
    assert clock.sleeps == [7.0]


def test_non_idempotent_call_is_not_retried(api, clock):
    api.inject("POST", "modelDevelopmentClusters", 503)
    with pytest.raises(GoogleApiError) as e:
        client(api, clock).request(
            "POST",
            "projects/p/locations/us-central1/modelDevelopmentClusters?modelDevelopmentClusterId=x",
            json={},
        )
    assert len(api.requests) == 1
    assert e.value.http_status == 503
    assert clock.sleeps == []


def test_dropped_connection_on_post_raises_without_retry(api, clock):
    api.inject("POST", "modelDevelopmentClusters", None)
    with pytest.raises(GoogleApiError) as e:
        client(api, clock).request(
            "POST", "projects/p/locations/us-central1/modelDevelopmentClusters", json={}
        )
    assert e.value.http_status is None
    assert e.value.status == "UNAVAILABLE"
    assert "no response after 1 attempt(s)" in str(e.value)
    assert len(api.requests) == 1


def test_gives_up_after_max_attempts(api, clock):
    api.inject("GET", CLUSTER, 503, times=10, message="backend unavailable")
    with pytest.raises(GoogleApiError) as e:
        client(api, clock, max_attempts=3).request("GET", CLUSTER, resource="cluster c1")
    assert len(api.requests) == 3
    assert str(e.value) == (
        f"cluster c1 (GET /v1beta1/{CLUSTER}): HTTP 503, UNAVAILABLE: backend unavailable"
    )


def test_error_names_resource_status_reason_and_message(api, clock):
    with pytest.raises(GoogleApiError) as e:
        client(api, clock).request("GET", CLUSTER + "x", resource="cluster c1x")
    err = e.value
    assert (err.http_status, err.status, err.reason) == (404, "NOT_FOUND", "RESOURCE_NOT_FOUND")
    assert str(err) == (
        f"cluster c1x (GET /v1beta1/{CLUSTER}x): HTTP 404, NOT_FOUND, reason RESOURCE_NOT_FOUND: "
        f'ModelDevelopmentCluster "{CLUSTER}x" not found.'
    )


def test_wait_operation_polls_with_backoff_until_done(api, clock):
    c = client(api, clock)
    op = c.request("DELETE", CLUSTER)
    done = c.wait_operation(op, 600, style=VERTEX)
    assert done["done"] is True
    polls = [r for r in api.requests if "/operations/" in r.path]
    assert all(r.method == "GET" and r.path == f"/v1beta1/{op['name']}" for r in polls)
    # 1 s growing x1.5, 5 % jitter at random()=0.5; done at 30 s, noticed at the first poll after it.
    assert clock.sleeps == pytest.approx([0.95, 1.425, 2.1375, 3.20625, 4.809375, 7.2140625, 10.82109375])
    assert len(polls) == 7
    assert clock.now == pytest.approx(sum(clock.sleeps))


def test_wait_operation_caps_the_interval_at_20s(api, clock):
    api.operation_seconds = 200
    c = client(api, clock)
    c.wait_operation(c.request("DELETE", CLUSTER), 600)
    assert max(clock.sleeps) == pytest.approx(19.0)  # 20 s less 5 % jitter


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


class _GkeSession:
    """Answers GKE-shaped operations: RUNNING twice, then DONE (optionally with an error)."""

    def __init__(self, final: dict[str, Any]):
        self.final = final
        self.urls: list[str] = []

    def request(self, method: str, url: str, **kw: Any) -> Any:
        self.urls.append(url)
        body = {"name": "operation-1", "status": "RUNNING"} if len(self.urls) < 3 else self.final

        class R:
            status_code, headers, reason = 200, {}, "OK"
            content = json.dumps(body).encode()

            def json(self) -> Any:
                return body

        return R()


def test_gke_operation_shape(clock):
    s = _GkeSession({"name": "operation-1", "status": "DONE"})
    c = GoogleRestClient("https://container.googleapis.com/v1", session=s, clock=clock)  # type: ignore[arg-type]
    c.wait_operation("projects/p/locations/l/operations/operation-1", 600, style=GKE)
    assert s.urls == ["https://container.googleapis.com/v1/projects/p/locations/l/operations/operation-1"] * 3


def test_gke_operation_polls_self_link_when_the_name_is_short(clock):
    s = _GkeSession({"name": "operation-1", "status": "DONE"})
    c = GoogleRestClient("https://container.googleapis.com/v1", session=s, clock=clock)  # type: ignore[arg-type]
    link = "https://container.googleapis.com/v1/projects/p/locations/l/operations/operation-1"
    c.wait_operation({"name": "operation-1", "selfLink": link, "status": "PENDING"}, 600, style=GKE)
    assert s.urls == [link] * 3


def test_gke_operation_error(clock):
    s = _GkeSession({"name": "operation-1", "status": "DONE", "error": {"code": 3, "message": "bad version"}})
    c = GoogleRestClient("https://container.googleapis.com/v1", session=s, clock=clock)  # type: ignore[arg-type]
    with pytest.raises(OperationFailed, match=r"failed \(code 3, INVALID_ARGUMENT\): bad version"):
        c.wait_operation("projects/p/locations/l/operations/operation-1", 600, style=GKE)


def test_adc_session_sends_the_bearer_token(api, clock, monkeypatch):
    from google.auth import credentials as ga_credentials

    class FakeCredentials(ga_credentials.Credentials):
        def __init__(self):
            super().__init__()
            self.token = "ya29.fake-test-token"

        def refresh(self, request: Any) -> None:
            pass

    seen: list[Any] = []

    def fake_default(scopes=None, **kw):
        seen.append(scopes)
        return FakeCredentials(), "p"

    import google.auth

    monkeypatch.setattr(google.auth, "default", fake_default)
    c = GoogleRestClient(f"{api.endpoint}/v1beta1", custom_endpoint=True, clock=clock)
    assert c._session is None  # created lazily
    c.request("GET", CLUSTER)
    assert seen == [[google_rest.CLOUD_PLATFORM_SCOPE]]
    assert api.requests[0].headers["authorization"] == "Bearer ya29.fake-test-token"
