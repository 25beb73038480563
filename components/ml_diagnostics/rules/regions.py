"""The cloud regions and zones a location may name, as of 2026-11-01.

Neither cloud publishes a machine-readable list that needs no account (`gcloud compute regions list` and
`az account list-locations` both need credentials), so these are the lists of the public pages, with
their date: https://cloud.google.com/compute/docs/regions-zones and
https://learn.microsoft.com/azure/reliability/regions-list (public, US Government and China clouds).

A region newer than the list: a stack file adds it to its `extraRegions` (`{gcp: [...], azure: [...]}`; GCP
zones too), read before its targets are checked; a program calls `allow(gcp=[...], azure=[...])` before it
creates the components.

Azure names are listed as ARM's location names, lowercase without spaces (`koreacentral`); a location (or an
extra region) in another form ARM takes (`KoreaCentral`, `Korea Central`) is looked up, and sent, in this form
(`ml_diagnostics.compat.arm_location`, the CLI's own normalisation).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar

from ml_diagnostics.compat import arm_location

LIST_DATE = "2026-11-01"

# region -> zone letters
GCP_ZONES: dict[str, str] = {
    "africa-south1": "abc",
    "asia-east1": "abc",
    "asia-east2": "abc",
    "asia-northeast1": "abc",
    "asia-northeast2": "abc",
    "asia-northeast3": "abc",
    "asia-south1": "abc",
    "asia-south2": "abc",
    "asia-southeast1": "abc",
    "asia-southeast2": "abc",
    "australia-southeast1": "abc",
    "australia-southeast2": "abc",
    "europe-central2": "abc",
    "europe-north1": "abc",
    "europe-north2": "abc",
    "europe-southwest1": "abc",
    "europe-west1": "bcd",
    "europe-west2": "abc",
    "europe-west3": "abc",
    "europe-west4": "abc",
    "europe-west6": "abc",
    "europe-west8": "abc",
    "europe-west9": "abc",
    "europe-west10": "abc",
    "europe-west12": "abc",
    "me-central1": "abc",
    "me-central2": "abc",
    "me-west1": "abc",
    "northamerica-northeast1": "abc",
    "northamerica-northeast2": "abc",
    "northamerica-south1": "abc",
    "southamerica-east1": "abc",
    "southamerica-west1": "abc",
    "us-central1": "abcf",
    "us-east1": "bcd",
    "us-east4": "abc",
    "us-east5": "abc",
    "us-south1": "abc",
    "us-west1": "abc",
    "us-west2": "abc",
    "us-west3": "abc",
    "us-west4": "abc",
}
GCP_REGIONS = frozenset(GCP_ZONES)
GCP_ZONE_NAMES = frozenset(f"{r}-{z}" for r, zones in GCP_ZONES.items() for z in zones)

AZURE_REGIONS = frozenset(
    {
        # public cloud
        "australiacentral", "australiacentral2", "australiaeast", "australiasoutheast", "austriaeast",
        "belgiumcentral", "brazilsouth", "brazilsoutheast", "canadacentral", "canadaeast", "centralindia",
        "centralus", "chilecentral", "denmarkeast", "eastasia", "eastus", "eastus2", "francecentral",
        "francesouth", "germanynorth", "germanywestcentral", "indonesiacentral", "israelcentral",
        "italynorth", "japaneast", "japanwest", "jioindiacentral", "jioindiawest", "koreacentral",
        "koreasouth", "malaysiawest", "mexicocentral", "newzealandnorth", "northcentralus", "northeurope",
        "norwayeast", "norwaywest", "polandcentral", "qatarcentral", "southafricanorth", "southafricawest",
        "southcentralus", "southeastasia", "southindia", "spaincentral", "swedencentral", "swedensouth",
        "switzerlandnorth", "switzerlandwest", "uaecentral", "uaenorth", "uksouth", "ukwest",
        "westcentralus", "westeurope", "westindia", "westus", "westus2", "westus3",
        # US Government and China clouds (cluster.cloudEnvironment usgovernment / china)
        "usgovarizona", "usgovtexas", "usgovvirginia", "usdodcentral", "usdodeast",
        "chinaeast", "chinaeast2", "chinaeast3", "chinanorth", "chinanorth2", "chinanorth3",
    }
)  # fmt: skip

# The running stack's `extraRegions`, set by program.config.parse while it validates.
EXTRA: ContextVar[dict[str, frozenset[str]] | None] = ContextVar("extra_regions", default=None)
_ALLOWED: dict[str, set[str]] = {"gcp": set(), "azure": set()}


def allow(*, gcp: Iterable[str] = (), azure: Iterable[str] = ()) -> None:
    """Regions (and GCP zones) newer than these lists, for every component of this process."""
    _ALLOWED["gcp"].update(gcp)
    _ALLOWED["azure"].update(arm_location(n) for n in azure)


def known(cloud: str) -> frozenset[str]:
    base = {"gcp": GCP_REGIONS | GCP_ZONE_NAMES, "azure": AZURE_REGIONS}[cloud]
    return base | _ALLOWED[cloud] | (EXTRA.get() or {}).get(cloud, frozenset())
