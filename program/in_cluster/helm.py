"""Helm v3 release records: Secrets of type `helm.sh/release.v1` named `sh.helm.release.v1.<release>.v<N>`,
labelled `owner=helm,name=<release>,version=<N>,status=<status>`; `data.release` is base64(gzip(JSON)) of
the release, itself base64-encoded once more by the Secret's `data`. Only the status, revision and chart
metadata are read from it: a release also carries its values, which may hold secrets, and nothing here
keeps or prints them.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from typing import Any

RELEASE_SECRET_TYPE = "helm.sh/release.v1"
GZIP_MAGIC = b"\x1f\x8b\x08"


@dataclass(frozen=True)
class Release:
    name: str
    namespace: str
    revision: int
    status: str  # deployed, failed, pending-install, pending-upgrade, superseded, uninstalling, ...
    chart: str
    chart_version: str
    description: str


def decode(secret_data_release: str | bytes) -> dict[str, Any]:
    """The release JSON from a Secret's `data.release` as the Kubernetes API returns it (base64)."""
    helm_payload = base64.b64decode(secret_data_release)
    raw = base64.b64decode(helm_payload)
    if raw[:3] == GZIP_MAGIC:
        raw = gzip.decompress(raw)
    return json.loads(raw)


def encode(release: dict[str, Any]) -> str:
    """The inverse of `decode` (Helm's encoding plus the Secret's base64), for fakes and tests."""
    helm_payload = base64.b64encode(gzip.compress(json.dumps(release).encode()))
    return base64.b64encode(helm_payload).decode()


def from_secret_data(data: str | bytes) -> Release:
    rel = decode(data)
    info = rel.get("info") or {}
    meta = (rel.get("chart") or {}).get("metadata") or {}
    return Release(
        name=str(rel.get("name", "")),
        namespace=str(rel.get("namespace", "")),
        revision=int(rel.get("version", 0)),
        status=str(info.get("status", "unknown")),
        chart=str(meta.get("name", "")),
        chart_version=str(meta.get("version", "")),
        description=str(info.get("description", "")),
    )
