"""Verify's client of a Kubernetes API server (the official Python client): made from kubeconfig text or the
ambient kubeconfig, probed, and each read guarded so a refused read fails its check and a lost connection
ends the target as unreachable."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

import urllib3
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from program.clouds import Unreachable

TIMEOUT = (5, 30)
RBAC_HINT = "apply the verify role (`verifyRbac: {enabled: true}`, README 'After `pulumi up`')"
UNNAMED = "(unnamed)"


class Checks(Protocol):
    """Where a check's outcome goes (a verify run's TargetResult)."""

    def add(self, name: str, ok: bool, detail: str, fix: str = "") -> Any: ...


class Object(Protocol):
    """A Kubernetes API object as the client's models give it: its metadata may be absent."""

    @property
    def metadata(self) -> client.V1ObjectMeta | None: ...


def name_of(obj: Object) -> str:
    """The object's name; UNNAMED when the server sent none."""
    return (obj.metadata.name if obj.metadata else None) or UNNAMED


def labels_of(obj: Object) -> dict[str, str]:
    return (obj.metadata.labels if obj.metadata else None) or {}


def annotations_of(obj: Object) -> dict[str, str]:
    return (obj.metadata.annotations if obj.metadata else None) or {}


def probe(api: client.ApiClient) -> str:
    """The server's version; raises Unreachable when the API server cannot be reached or refuses us."""
    try:
        info = client.VersionApi(api).get_code(_request_timeout=TIMEOUT)
    except ApiException as e:
        raise Unreachable(
            f"Kubernetes API answered HTTP {e.status} {e.reason}: check the credentials"
        ) from None
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise Unreachable(f"Kubernetes API not reachable: {type(e).__name__}: {_short(e)}") from None
    return str(info.git_version)


def _short(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:300]


def guarded(result: Checks, name: str, fn: Callable[[], None]) -> None:
    """Runs one check; a refused or failed read becomes a failed check, a lost connection Unreachable."""
    try:
        fn()
    except ApiException as e:
        if e.status == 401:
            raise Unreachable(
                f"Kubernetes API answered HTTP 401 during {name}: check the credentials"
            ) from None
        fix = RBAC_HINT if e.status == 403 else "check the API server and rerun"
        result.add(name, False, f"read failed: HTTP {e.status} {e.reason}", fix)
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise Unreachable(f"Kubernetes API lost during {name}: {type(e).__name__}: {_short(e)}") from None


def kube_client(kubeconfig: str | None, context: str | None) -> Any:
    """An ApiClient from kubeconfig text, else the ambient kubeconfig (KUBECONFIG, ~/.kube/config), at `context`."""
    from kubernetes import config as kconfig
    from kubernetes.config.config_exception import ConfigException

    try:
        if kubeconfig:
            return kconfig.new_client_from_config_dict(
                yaml.safe_load(kubeconfig), context=context, persist_config=False
            )
        path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        return kconfig.new_client_from_config(config_file=path, context=context, persist_config=False)
    except (ConfigException, yaml.YAMLError, OSError, TypeError, ValueError) as e:
        raise Unreachable(
            f"kubeconfig unusable: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
        ) from None
