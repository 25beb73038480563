"""Region and zone names are checked against the lists of program/regions.py (with their date), near misses
get "did you mean", a stack's extraRegions accepts a region newer than the lists, and an Azure location is
taken in every form ARM takes (any case, with or without spaces) and kept in the form the CLI sends."""

from __future__ import annotations

from typing import Any

import pytest

from program.config import ConfigError, parse

NS = "ml-diagnostics"
AZ = f"{NS}:azureMl"
MDC = f"{NS}:modelDevelopmentClusters"


def azure(location: str, name: str = "aks") -> dict[str, Any]:
    return {
        "name": name,
        "cluster": {
            "kind": "aks",
            "subscriptionId": "3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f",
            "resourceGroup": "rg",
            "name": name,
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
    ("location", "sent"),
    [
        # ARM reads location names without regard to case or spaces: each is the region of the lowercase name
        ("koreacentral", "koreacentral"),
        ("KoreaCentral", "koreacentral"),  # as ARM returns some clusters' location
        ("Korea Central", "koreacentral"),  # the display name
        ("KOREA CENTRAL", "koreacentral"),
        ("eastus", "eastus"),
        ("EastUS", "eastus"),
        ("East US", "eastus"),
        ("East US 2", "eastus2"),
        ("USGov Virginia", "usgovvirginia"),
    ],
)
def test_azure_locations_are_taken_in_every_form_arm_takes(location: str, sent: str) -> None:
    cfg = parse({f"{NS}:environment": "dev", AZ: [azure(location)]})
    assert cfg.azure_ml[0].cluster.location == sent


@pytest.mark.parametrize(
    ("location", "message"),
    [
        # well shaped, yet no region: a typo, or a region newer than the list
        (
            "westeurop",
            "'westeurop' is not an Azure region (did you mean 'westeurope'?); the list is of 2026-11-01: a newer "
            "one goes in the stack's extraRegions.azure",
        ),
        (
            "West Europ",
            "'West Europ' is not an Azure region (did you mean 'westeurope'?); the list is of 2026-11-01: a newer "
            "one goes in the stack's extraRegions.azure",
        ),
        # not a form ARM takes
        ("West-Europe", "'West-Europe' is not an Azure region name (did you mean 'westeurope'?)"),
        ("east_us", "'east_us' is not an Azure region name (did you mean 'eastus'?)"),
        ("eastus/..", "'eastus/..' is not an Azure region name (did you mean 'eastus'?)"),
        (
            "x",
            "'x' is not an Azure region name: letters and digits in any case, spaces allowed (eastus, EastUS or "
            "East US)",
        ),
        (
            "\uff45\uff41\uff53\uff54\uff55\uff53",  # full-width letters: not ASCII, never eastus
            "'\uff45\uff41\uff53\uff54\uff55\uff53' is not an Azure region name: letters and digits in any case, "
            "spaces allowed (eastus, EastUS or East US)",
        ),
    ],
)
def test_azure_names_of_no_region_are_refused(location: str, message: str) -> None:
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


def test_extra_regions_azure_takes_every_form_arm_takes_and_keeps_the_lowercase_name() -> None:
    cfg = parse(
        {
            f"{NS}:environment": "dev",
            f"{NS}:extraRegions": {"azure": ["New Zealand South", "MarsCentral", "venusnorth"]},
            AZ: [
                azure("newzealandsouth"),
                azure("Mars Central", "m"),
                azure("Venus North", "v"),
            ],
        }
    )
    assert cfg.extra_regions.azure == ["newzealandsouth", "marscentral", "venusnorth"]
    assert [t.cluster.location for t in cfg.azure_ml] == ["newzealandsouth", "marscentral", "venusnorth"]


def test_extra_regions_are_shape_checked() -> None:
    assert problems(
        {f"{NS}:extraRegions": {"gcp": ["Europe West 15"], "azure": ["New-Zealand", "nz/1"]}}
    ) == [
        f"{NS}:extraRegions.azure[0]: 'New-Zealand' is not an Azure region name: letters and digits in any case, "
        "spaces allowed (eastus, EastUS or East US)",
        f"{NS}:extraRegions.azure[1]: 'nz/1' is not an Azure region name: letters and digits in any case, "
        "spaces allowed (eastus, EastUS or East US)",
        f"{NS}:extraRegions.gcp[0]: 'Europe West 15' must look like a region (europe-west15) or a zone (europe-west15-a)",
    ]
