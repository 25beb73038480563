"""The cluster side of a recovery (mldiag/fleet/recovery.py): what the decisions ask of a cluster
(`Cluster`: a Helm release's records, an object by name, deleting a record), what they get back (`Record`,
`Found`), the two ways an answer fails (`ClusterUnreachable`; `RecoveryRefused` for what only a person can
settle), and `KubeCluster`, that cluster through the official Kubernetes client over the provider's own
kubeconfig.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mldiag.fleet.rollout import StackUnavailable


class RecoveryRefused(StackUnavailable):
    """An interrupted operation that only a person can settle (what it is and what to do is the message)."""


class ClusterUnreachable(Exception):
    """The cluster of a pending operation could not be read or written (the reason)."""


@dataclass(frozen=True)
class Record:
    """A Helm release record: `sh.helm.release.v1.<release>.v<revision>` in the release's namespace."""

    secret: str
    revision: int
    status: str
    created: float | None


@dataclass(frozen=True)
class Found:
    """A Kubernetes object the cluster has."""

    created: float | None


class Cluster(Protocol):
    """A cluster as the reconciliation needs it; ClusterUnreachable when it cannot be reached."""

    def release_records(self, namespace: str, release: str) -> list[Record]: ...

    def find(self, api_version: str, kind: str, namespace: str, name: str) -> Found | None:
        """The object; None when the server says it does not exist; RecoveryRefused for an unknown kind."""

    def delete_record(self, namespace: str, secret: str) -> None: ...


def _created(meta: Any) -> float | None:
    stamp = getattr(meta, "creation_timestamp", None) if meta is not None else None
    return stamp.timestamp() if stamp is not None else None


class KubeCluster:
    """`Cluster` over a kubeconfig (the provider's own), with the official client."""

    def __init__(self, kubeconfig: str | None, context: str | None) -> None:
        from program.clouds import Unreachable
        from program.clouds.kubernetes_client import kube_client

        try:
            self.api = kube_client(kubeconfig, context)
        except Unreachable as e:
            raise ClusterUnreachable(str(e)) from None

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        try:
            return fn()
        except ApiException as e:
            if e.status == 404:
                raise LookupError(e.body or "") from None
            raise ClusterUnreachable(f"{what}: HTTP {e.status} {e.reason}") from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise ClusterUnreachable(f"{what}: {type(e).__name__}: {str(e).splitlines()[0][:300]}") from None

    def release_records(self, namespace: str, release: str) -> list[Record]:
        from kubernetes import client

        from program.clouds.kubernetes_client import TIMEOUT

        core = client.CoreV1Api(self.api)
        try:
            found = self._call(
                f"the Helm release records of {namespace}/{release}",
                lambda: core.list_namespaced_secret(
                    namespace, label_selector=f"owner=helm,name={release}", _request_timeout=TIMEOUT
                ),
            )
        except LookupError:
            return []
        out = []
        for s in found.items or []:
            labels = (s.metadata.labels if s.metadata else None) or {}
            try:
                revision = int(labels.get("version", "0"))
            except ValueError:
                revision = 0
            out.append(
                Record(s.metadata.name, revision, str(labels.get("status", "unknown")), _created(s.metadata))
            )
        return out

    def find(self, api_version: str, kind: str, namespace: str, name: str) -> Found | None:
        from program.clouds.kubernetes_client import TIMEOUT

        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        lower = kind.lower()
        plural = (
            lower + "es"
            if lower.endswith("s")
            else lower[:-1] + "ies"
            if lower.endswith("y")
            else lower + "s"
        )
        path = f"{base}{f'/namespaces/{namespace}' if namespace else ''}/{plural}/{name}"

        def get() -> Any:
            request = self.api.param_serialize("GET", path, auth_settings=["BearerToken"])
            response = self.api.call_api(*request, _request_timeout=TIMEOUT)
            text = response.read().decode(errors="replace")
            if response.status == 404:
                raise LookupError(text)
            if response.status >= 300:
                raise ClusterUnreachable(f"{kind} {name}: HTTP {response.status} {response.reason}")
            return json.loads(text)

        try:
            body = self._call(f"{kind} {name}", get)
        except LookupError as e:
            status = _status(str(e))
            message = str(status.get("message") or "")
            named = (status.get("details") or {}).get("name") == name or message.endswith(
                f'"{name}" not found'
            )
            if status.get("reason") == "NotFound" and named:
                return None
            raise RecoveryRefused(
                f"the cluster does not serve {kind} at {path} ({message or e}): check by hand"
            ) from None
        created = ((body or {}).get("metadata") or {}).get("creationTimestamp")
        return Found(_timestamp(created))

    def delete_record(self, namespace: str, secret: str) -> None:
        from kubernetes import client

        from program.clouds.kubernetes_client import TIMEOUT

        core = client.CoreV1Api(self.api)
        try:
            self._call(
                f"the Helm release record {namespace}/{secret}",
                lambda: core.delete_namespaced_secret(secret, namespace, _request_timeout=TIMEOUT),
            )
        except LookupError:
            return  # gone already

    def close(self) -> None:
        self.api.close()


def _status(body: str) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _timestamp(text: Any) -> float | None:
    from datetime import datetime

    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
