"""Region and zone names are checked against the lists of program/regions.py (with their date), near misses
get "did you mean", and a stack's extraRegions accepts a region newer than the lists."""

from __future__ import annotations

from typing import Any

import pytest

from program.config import ConfigError, parse

NS = "ml-diagnostics"
AZ = f"{NS}:azureMl"
MDC = f"{NS}:modelDevelopmentClusters"


def azure(location: str) -> dict[str, Any]:
    return {
        "name": "aks",
        "cluster": {
            "kind": "aks",
            "subscriptionId": "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f",
            "resourceGroup": "rg",
            "name": "aks",
            "location": location,
            "nodeCount": 3,
        },
        "training": True,
    }


def gke(location: str) -> dict[str, Any]:
    return {
        "name": "g",
        "project": "acme-ml-dev",
        "location": location,
        "currentVersion": "1.35.1-gke.1396000",
    }


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse({f"{NS}:environment": "dev", **raw})
    return e.value.problems


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("westeurop", "'westeurop' is not an Azure region name (did you mean 'westeurope'?)"),
        ("WestEurope", "'WestEurope' is not an Azure region name (did you mean 'westeurope'?)"),
        ("West Europe", "'West Europe' is not an Azure region name (did you mean 'westeurope'?)"),
    ],
)
def test_azure_near_misses_get_the_region_name(location: str, message: str) -> None:
    assert problems({AZ: [azure(location)]}) == [f"{AZ}[0].cluster.location: {message}"]


@pytest.mark.parametrize(
    ("location", "message"),
    [
        (
            "europe-west44",
            "'europe-west44' is not a Google Cloud region (did you mean 'europe-west4'?); the list is of "
            "2026-11-01: a newer one goes in the stack's extraRegions.gcp",
        ),
        (
            "us-central1-e",
            "'us-central1-e' is not a Google Cloud zone (did you mean 'us-central1-f'?); the list is of "
            "2026-11-01: a newer one goes in the stack's extraRegions.gcp",
        ),
    ],
)
def test_gcp_locations_are_checked_against_the_list(location: str, message: str) -> None:
    assert problems({f"{NS}:gkeClusters": [gke(location)]}) == [f"{NS}:gkeClusters[0].location: {message}"]


def test_extra_regions_accept_what_is_newer_than_the_lists() -> None:
    cfg = parse(
        {
            f"{NS}:environment": "dev",
            f"{NS}:extraRegions": {"gcp": ["europe-west15", "europe-west15-a"], "azure": ["newzealandsouth"]},
            f"{NS}:gkeClusters": [gke("europe-west15-a")],
            AZ: [azure("newzealandsouth")],
        }
    )
    assert cfg.gke_clusters[0].location == "europe-west15-a"
    assert cfg.azure_ml[0].cluster.location == "newzealandsouth"
    # only for the stack that names them
    assert problems({f"{NS}:gkeClusters": [gke("europe-west15-a")]})[0].startswith(
        f"{NS}:gkeClusters[0].location: 'europe-west15-a' is not a Google Cloud zone"
    )


def test_extra_regions_are_shape_checked() -> None:
    assert problems({f"{NS}:extraRegions": {"gcp": ["Europe West 15"], "azure": ["New Zealand"]}}) == [
        f"{NS}:extraRegions.azure[0]: 'New Zealand' must be an Azure region name: lowercase letters and digits",
        f"{NS}:extraRegions.gcp[0]: 'Europe West 15' must look like a region (europe-west15) or a zone (europe-west15-a)",
    ]
