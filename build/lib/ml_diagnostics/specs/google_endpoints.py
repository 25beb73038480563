"""Where the Google REST clients may send requests without credentials: the loopback only.

Shared by the stack config (`googleApi.emulator`) and the REST client (which checks again before it
builds an unauthenticated session). Standard library only.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback_url(url: str) -> bool:
    """http(s)://127.0.0.1|localhost|[::1][:port][/path]: an emulator or a fake on this machine."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.username or parts.password:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host) in (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
    except ValueError:
        return False
