"""Rules of identifiers, one per kind of name, from each system's documented naming rules.

Each `*_problem(value)` returns why the value is not allowed (None when fine). Every check bounds the length
before any regex, and the regexes have no nested unbounded repetition, so their cost is linear in the
(bounded) input. The Specs (ml_diagnostics.rules) call them from their field validators.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ml_diagnostics.compat import QUOTE_LIMIT as QUOTE_LIMIT
from ml_diagnostics.compat import arm_location
from ml_diagnostics.compat import quote as quote
from ml_diagnostics.rules import regions
from ml_diagnostics.rules.base import MapKey, Path, closest, key, phrase
from ml_diagnostics.rules.base import check as check

# --- names of this program ------------------------------------------------------------------------------

_SHORT_NAME = re.compile(r"[a-z]([a-z0-9-]{0,38}[a-z0-9])?")
SHORT_NAME_RULE = "1-40 lowercase letters, digits and '-', starting with a letter and not ending with '-'"


def short_name_problem(v: str) -> str | None:
    """Target names, GKE cluster and node pool names (GKE: 1-40 characters, RFC 1035 label)."""
    if len(v) > 40 or not _SHORT_NAME.fullmatch(v):
        return f"{quote(v)} is not allowed: must be {SHORT_NAME_RULE}"
    return None


target_name_problem = short_name_problem


# --- Kubernetes ------------------------------------------------------------------------------------------

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN_PART = _DNS_LABEL
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def dns_label_problem(v: str, what: str = "a Kubernetes name") -> str | None:
    """RFC 1123 label: namespaces, service accounts."""
    if len(v) > 63 or not _DNS_LABEL.fullmatch(v):
        return (
            f"{quote(v)} is not {what}: 1-63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def namespace_problem(v: str) -> str | None:
    return dns_label_problem(v, "a Kubernetes namespace name")


def _dns_subdomain_ok(v: str) -> bool:
    return 0 < len(v) <= 253 and all(
        len(part) <= 63 and _DNS_SUBDOMAIN_PART.fullmatch(part) for part in v.split(".")
    )


def dns_subdomain_problem(v: str, what: str = "a Kubernetes object name") -> str | None:
    """RFC 1123 subdomain: secret names, label key prefixes."""
    if not _dns_subdomain_ok(v):
        return f"{quote(v)} is not {what}: up to 253 characters of lowercase letters, digits, '-' and '.'"
    return None


def label_key_problem(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if (prefix and not _dns_subdomain_ok(prefix)) or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return (
            f"{quote(key)} is not a Kubernetes label key: [prefix/]name, name 1-63 of [A-Za-z0-9-_.] starting "
            "and ending with a letter or digit, prefix a DNS subdomain"
        )
    return None


def label_value_problem(v: str) -> str | None:
    if v and (len(v) > 63 or not _LABEL_NAME.fullmatch(v)):
        return (
            f"{quote(v)} is not a Kubernetes label value: up to 63 of [A-Za-z0-9-_.] starting and ending "
            "with a letter or digit"
        )
    return None


def k8s_labels_problems(labels: Mapping[str, object], path: Path) -> list[tuple[Path, str]]:
    """(relative path, message) for every bad key or value of a Kubernetes label map (an Output value
    is known only later: its key is checked)."""
    problems: list[tuple[Path, str]] = []
    for k, v in labels.items():
        value_problem = label_value_problem(v) if isinstance(v, str) else None
        if p := label_key_problem(k) or value_problem:
            problems.append(((*path, MapKey(k)), p))
    return problems


# --- anything spliced into a URL ---------------------------------------------------------------------------

_URL_UNSAFE = ("/", "..", "?", "#", "%")


def url_segment_problem(v: str) -> str | None:
    """Values that become one segment of a REST path or ARM id: never `/`, `..`, `?`, `#`, `%` or whitespace."""
    if any(s in v for s in _URL_UNSAFE) or any(c.isspace() for c in v):
        return (
            f"{quote(v)} is not allowed: no '/', '..', '?', '#', '%' or whitespace (it becomes part of a URL)"
        )
    return None


def _shaped(v: str, max_len: int, pattern: re.Pattern[str], rule: str) -> str | None:
    if (p := url_segment_problem(v)) is not None:
        return p
    if len(v) > max_len or not pattern.fullmatch(v):
        return f"{quote(v)} is not allowed: {rule}"
    return None


# --- Google Cloud (documented naming rules) ----------------------------------------------------------------

_GCP_PROJECT = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
_GCP_REGION = re.compile(r"[a-z]{2,20}-[a-z]{2,20}[0-9]{1,2}")
_GCP_ZONE = re.compile(r"[a-z]{2,20}-[a-z]{2,20}[0-9]{1,2}-[a-z]")
_GCP_MACHINE_TYPE = re.compile(r"[a-z][a-z0-9]{0,15}(-[a-z0-9]{1,16}){1,5}")
_GCP_NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_GCP_SA = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z][a-z0-9-]{4,28}[a-z0-9]\.iam\.gserviceaccount\.com")


def gcp_project_problem(v: str) -> str | None:
    return _shaped(
        v,
        30,
        _GCP_PROJECT,
        "a Google Cloud project id is 6-30 lowercase letters, digits and '-', starting "
        "with a letter and not ending with '-'",
    )


def _listed(v: str, cloud: str, names: Iterable[str], what: str) -> str | None:
    """None when `v` is a known name; else the problem, with the nearest known name when there is one."""
    if v in regions.known(cloud):
        return None
    hint = closest(v, sorted(names))
    near = f" (did you mean {hint!r}?)" if hint else ""
    where = phrase(
        stack=f"the stack's extraRegions.{cloud}",
        args=f"ml_diagnostics.rules.regions.allow({cloud}=[...])",
    )
    return f"{quote(v)} is not {what}{near}; the list is of {regions.LIST_DATE}: a newer one goes in {where}"


def gcp_region_problem(v: str) -> str | None:
    if shape := _shaped(v, 45, _GCP_REGION, "must be a Google Cloud region such as us-central1"):
        hint = closest(v, sorted(regions.GCP_REGIONS))
        return shape + (f" (did you mean {hint!r}?)" if hint else "")
    return _listed(v, "gcp", regions.GCP_REGIONS, "a Google Cloud region")


def gcp_zone_problem(v: str) -> str | None:
    if shape := _shaped(v, 47, _GCP_ZONE, "must be a Google Cloud zone such as us-central1-a"):
        hint = closest(v, sorted(regions.GCP_ZONE_NAMES))
        return shape + (f" (did you mean {hint!r}?)" if hint else "")
    return _listed(v, "gcp", regions.GCP_ZONE_NAMES, "a Google Cloud zone")


def gcp_location_problem(v: str) -> str | None:
    """A region (regional resources) or a zone (zonal ones)."""
    if _GCP_ZONE.fullmatch(v):
        return gcp_zone_problem(v)
    if _GCP_REGION.fullmatch(v):
        return gcp_region_problem(v)
    hint = closest(v, sorted(regions.GCP_REGIONS | regions.GCP_ZONE_NAMES))
    return (
        url_segment_problem(v)
        or f"{quote(v)} is not allowed: must be a region (us-central1) or a zone (us-central1-a)"
    ) + (f" (did you mean {hint!r}?)" if hint else "")


def gcp_machine_type_problem(v: str) -> str | None:
    return _shaped(
        v,
        63,
        _GCP_MACHINE_TYPE,
        "must be a Compute Engine machine type such as e2-standard-4, a3-highgpu-8g or n2-custom-8-32768",
    )


def gcp_name_problem(v: str) -> str | None:
    """Compute resource names (networks, subnetworks, disk types, accelerator types): RFC 1035, 1-63."""
    return _shaped(v, 63, _GCP_NAME, "must be 1-63 lowercase letters, digits and '-', starting with a letter")


def helm_repository_problem(v: str) -> str | None:
    """Helm takes a chart repository as an http(s):// index URL or an oci:// registry."""
    if not v.startswith(("oci://", "https://", "http://")):
        return "must be an oci://, https:// or http:// URL"
    return None


def zone_in_region_problem(zone: str, region: str, region_key: str) -> str | None:
    """A zone lies in the region its name starts with (us-central1-a in us-central1)."""
    if _GCP_ZONE.fullmatch(zone) and zone.rsplit("-", 1)[0] != region:
        return f"{quote(zone)} is not in {region_key} {region!r}: a zone of {region} (e.g. {region}-a)"
    return None


def gcp_region_of(location: str) -> str:
    """The region of a GKE location (a region, or a zone)."""
    return location.rsplit("-", 1)[0] if _GCP_ZONE.fullmatch(location) else location


def gcp_service_account_problem(v: str) -> str | None:
    return _shaped(v, 100, _GCP_SA, "must be a service account email (NAME@PROJECT.iam.gserviceaccount.com)")


def _gcp_label_chars_ok(v: str) -> bool:
    return all(c.islower() or c.isdigit() or c in "-_" for c in v)


def gcp_labels_problems(labels: Mapping[str, str], path: Path) -> list[tuple[Path, str]]:
    """Google Cloud labels: at most 64; keys 1-63 lowercase letters (any script), digits, '_' and '-',
    starting with a lowercase letter; values 0-63 of the same characters."""
    problems: list[tuple[Path, str]] = []
    if len(labels) > 64:
        problems.append((path, f"at most 64 labels ({len(labels)} given)"))
    for k, v in labels.items():
        at = (*path, MapKey(k))
        if not (0 < len(k) <= 63 and k[0].islower() and _gcp_label_chars_ok(k)):
            problems.append(
                (
                    at,
                    f"{quote(k)} is not a Google Cloud label key: 1-63 lowercase letters, digits, '_' and "
                    "'-', starting with a lowercase letter",
                )
            )
        elif not (len(v) <= 63 and _gcp_label_chars_ok(v)):
            problems.append(
                (
                    at,
                    f"{quote(v)} is not a Google Cloud label value: up to 63 lowercase letters, digits, "
                    "'_' and '-'",
                )
            )
    return problems


# --- Azure (documented naming rules) -----------------------------------------------------------------------

_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Azure allows any letter or digit (Char.IsLetterOrDigit) in resource group names: \w, not ASCII only.
_RESOURCE_GROUP = re.compile(r"[-\w.()]{0,89}[-\w()]")
_AZURE_CLUSTER = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?")
_AZURE_LOCATION = re.compile(r"[a-z][a-z0-9]{1,40}")
_EXTENSION_VERSION = re.compile(r"\d{1,4}\.\d{1,4}\.\d{1,6}", re.ASCII)


def azure_guid_problem(v: str, what: str = "subscription") -> str | None:
    """Subscription and tenant ids."""
    return _shaped(v, 36, _GUID, f"must be a {what} GUID like 00000000-0000-0000-0000-000000000000")


def azure_subscription_problem(v: str) -> str | None:
    return azure_guid_problem(v, "subscription")


def azure_resource_group_problem(v: str) -> str | None:
    return _shaped(
        v,
        90,
        _RESOURCE_GROUP,
        "must be 1-90 characters of letters, digits, '-', '_', '.', '(', ')' and not end with '.'",
    )


def azure_cluster_name_problem(v: str) -> str | None:
    return _shaped(
        v,
        63,
        _AZURE_CLUSTER,
        "must be 1-63 characters of letters, digits, '-' and '_', starting and ending with a letter or digit",
    )


AZURE_LOCATION_FORMS = "eastus, EastUS or East US"


def azure_location_shape_problem(v: str) -> str | None:
    """Whether `v` is shaped like an Azure location name in a form ARM takes: ASCII letters and digits in any
    case, spaces anywhere (ARM drops them: `East US` is eastus). Says nothing of whether a region has it."""
    if len(v) > 100 or not v.isascii() or not _AZURE_LOCATION.fullmatch(arm_location(v)):
        return (
            f"{quote(v)} is not an Azure region name: letters and digits in any case, spaces allowed "
            f"({AZURE_LOCATION_FORMS})"
        )
    return None


def azure_location_problem(v: str) -> str | None:
    """An Azure region's name in any form ARM takes: any case, with or without spaces (eastus, EastUS and
    East US are one region). Checked in the form the CLI sends, `arm_location(v)`; refused only when no
    region (of the list, or the extra regions) has that name."""
    shape = azure_location_shape_problem(v)
    if shape is None and arm_location(v) in regions.known("azure"):
        return None
    if shape is not None:
        hint = closest(v, sorted(regions.AZURE_REGIONS)) if len(v) <= 100 else None
        return f"{quote(v)} is not an Azure region name (did you mean {hint!r}?)" if hint else shape
    # well shaped (so at most 100 characters), named by no region: perhaps one newer than the list
    return _listed(v, "azure", regions.AZURE_REGIONS, "an Azure region")


def extension_version_problem(v: str) -> str | None:
    """Extension versions are exact MAJOR.MINOR.PATCH; `latest` is not a version (unset follows the train)."""
    return _shaped(
        v,
        20,
        _EXTENSION_VERSION,
        "must be an exact version such as 1.1.62 (to follow the newest, leave version unset and keep "
        f"{key('auto_upgrade_minor_version')})",
    )


def gcp_network_problem(v: str) -> str | None:
    """A network or subnetwork: its name, or `projects/P/global/networks/N`,
    `projects/P/regions/R/subnetworks/N`."""
    parts = v.split("/")
    if len(parts) == 1:
        return gcp_name_problem(v)
    shapes = {
        5: ("projects", None, "global", "networks", None),
        6: ("projects", None, "regions", None, "subnetworks", None),
    }
    shape = shapes.get(len(parts))
    if shape is None or any(s is not None and s != p for s, p in zip(shape, parts, strict=True)):
        return (
            f"{quote(v)} is not allowed: a network name, projects/PROJECT/global/networks/NAME or "
            "projects/PROJECT/regions/REGION/subnetworks/NAME"
        )
    checks = [gcp_project_problem(parts[1]), gcp_name_problem(parts[-1])]
    if len(parts) == 6:
        checks.append(gcp_region_problem(parts[3]))
    return next((c for c in checks if c), None)
