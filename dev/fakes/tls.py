"""A throwaway certificate for a loopback fake serving TLS on 127.0.0.1: its own CA, valid for an hour or
two, the key unencrypted. Files in the given directory (the caller's temporary one)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509

from mldiag.stacks.stack_secrets import self_signed


def loopback_certificate(directory: Path, common_name: str, *, ca: bool = False) -> tuple[str, str, bytes]:
    """(certificate file, key file, certificate PEM) for 127.0.0.1; `ca`: it may sign (a client trusts it as
    the CA of the server it is)."""
    pem, key = self_signed(
        common_name,
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        datetime.timedelta(hours=2),
        backdated=datetime.timedelta(minutes=5),
        ca=ca,
    )
    cert_file, key_file = directory / f"{common_name}.crt", directory / f"{common_name}.key"
    cert_file.write_bytes(pem)
    key_file.write_bytes(key)
    return str(cert_file), str(key_file), pem
