"""`googleApi` (stack) and per-target `googleApi`: credentials, quota project, retry, emulator mode."""

from __future__ import annotations

from typing import Any

import pytest

from ml_diagnostics.google_api import rest_inputs
from program import config
from program.clouds.google import GoogleApiSettings, TargetGoogleApi, is_loopback_url

NS = "ml-diagnostics"
SA = "deployer@acme-ml.iam.gserviceaccount.com"


def parse(google_api: dict[str, Any]) -> GoogleApiSettings:
    return config.parse({f"{NS}:environment": "dev", f"{NS}:googleApi": google_api}).google_api


def problems(google_api: dict[str, Any]) -> list[str]:
    with pytest.raises(config.ConfigError) as e:
        parse(google_api)
    return e.value.problems


def test_all_keys_parse():
    g = parse(
        {
            "quotaProject": "billing",
            "impersonateServiceAccount": SA,
            "retry": {
                "deadlineMinutes": 10,
                "initialDelaySeconds": 2,
                "maxDelaySeconds": 60,
                "multiplier": 3,
            },
            "endpoints": {"aiplatform": "https://europe-west4-aiplatform.googleapis.com"},
        }
    )
    assert rest_inputs(g.to_args(), "aiplatform") == {
        "api_endpoint": "https://europe-west4-aiplatform.googleapis.com",
        "quota_project": "billing",
        "impersonate_service_account": SA,
        "retry": {
            "deadline_minutes": 10.0,
            "initial_delay_seconds": 2.0,
            "max_delay_seconds": 60.0,
            "multiplier": 3.0,
        },
    }
    assert rest_inputs(g.to_args(), "container") == {
        "quota_project": "billing",
        "impersonate_service_account": SA,
        "retry": g.retry.model_dump(),
    }


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080", "http://localhost:1/v1", "https://[::1]:9443", "http://127.0.0.1"]
)
def test_emulator_mode_accepts_loopback_endpoints_only(url):
    g = parse({"emulator": True, "endpoints": {"aiplatform": url}})
    assert rest_inputs(g.to_args(), "aiplatform") == {"api_endpoint": url, "emulator": True}


def test_emulator_mode_refuses_other_hosts():
    url = "https://aiplatform.googleapis.com"
    assert problems({"emulator": True, "endpoints": {"container": url}}) == [
        f"{NS}:googleApi: emulator: true allows only loopback endpoints (hosts 127.0.0.1, localhost, ::1); "
        f"not loopback: container ({url})"
    ]


@pytest.mark.parametrize("emulator", [True, False])
@pytest.mark.parametrize("url", ["http://10.0.0.1:8080", "http://127.0.0.1.nip.io", "http://u:p@localhost"])
def test_plain_http_off_the_loopback_is_refused_with_or_without_the_emulator(url, emulator):
    # The REST clients send a token with every call: plain http never leaves the host.
    assert problems({"emulator": emulator, "endpoints": {"container": url}}) == [
        f"{NS}:googleApi.endpoints: container: {url!r} sends credentials over plain http; use https://, or "
        "http:// only on the loopback (127.0.0.1, localhost, ::1)"
    ]


def test_plain_http_on_the_loopback_and_https_anywhere_are_accepted():
    for url in ("http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:9", "https://10.0.0.1:8443"):
        assert parse({"endpoints": {"container": url}}).endpoints == {"container": url}


def test_emulator_mode_needs_an_endpoint_and_no_credentials():
    assert problems({"emulator": True}) == [
        f"{NS}:googleApi: emulator: true needs endpoints (aiplatform and/or container) on the loopback"
    ]
    assert problems(
        {"emulator": True, "endpoints": {"container": "http://127.0.0.1:1"}, "impersonateServiceAccount": SA}
    ) == [f"{NS}:googleApi: emulator: true uses no credentials; remove impersonateServiceAccount"]


def test_bad_values_name_the_key():
    assert problems({"impersonateServiceAccount": "me@example.com", "retry": {"maxDelaySeconds": 0.5}}) == [
        f"{NS}:googleApi.impersonateServiceAccount: 'me@example.com' must be a service account email "
        "(NAME@PROJECT.iam.gserviceaccount.com)",
        f"{NS}:googleApi.retry.maxDelaySeconds: must be at least 1",
    ]


def test_target_settings_override_the_stack():
    stack = parse({"quotaProject": "billing", "endpoints": {"container": "https://c.example"}})
    target = TargetGoogleApi.model_validate(
        {"impersonateServiceAccount": SA, "retry": {"deadlineMinutes": 20}}
    )
    eff = stack.for_target(target)
    assert (eff.quota_project, eff.impersonate_service_account, eff.retry.deadline_minutes) == (
        "billing",
        SA,
        20,
    )
    assert eff.endpoints == {"container": "https://c.example"}
    assert stack.for_target(None) is stack
    assert stack.for_target(TargetGoogleApi(quota_project="other")).quota_project == "other"


def test_is_loopback_url():
    assert [
        is_loopback_url(u) for u in ("http://[::1]", "ftp://127.0.0.1", "http://127.0.0.2", "http://x:99999")
    ] == [
        True,
        False,
        False,
        False,
    ]
