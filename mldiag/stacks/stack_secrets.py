"""Real passphrase-provider secrets for the example stacks, so the Pulumi CLI can preview them.

The example stacks are encrypted with the documented example passphrase (`EXAMPLE_PASSPHRASE`, see README
"The real workflow"): never use it for real secrets. This writes each stack file's `encryptionsalt` and every
`secure:` value the way the CLI's passphrase secrets manager does:

- `encryptionsalt: v1:<base64 8-byte salt>:v1:<nonce>:<ciphertext>` (the second part encrypts "pulumi",
  which is how the CLI checks the passphrase);
- key = PBKDF2-HMAC-SHA256(passphrase, salt, 1,000,000 iterations, 32 bytes);
- each value `v1:<base64 12-byte nonce>:<base64 AES-256-GCM ciphertext with its 16-byte tag>`.

    python -m mldiag.stacks.stack_secrets --write            # every stack in stacks/ (new salt, new nonces)
    python -m mldiag.stacks.stack_secrets --check            # decrypt every secure value, print the key paths
    PULUMI_CONFIG_PASSPHRASE=... python -m mldiag.stacks.stack_secrets --write dev

The plaintexts are example material generated here (kubeconfigs of example clusters, a throwaway self-signed
certificate and its key); comments and layout of the stack files are kept, only the values change.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mldiag.exit_codes import Exit
from program import stack_file

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
EXAMPLE_PASSPHRASE = "ml-diagnostics-example-only"
ITERATIONS = 1_000_000
KEY_BYTES = 32
SALT_BYTES = 8
NONCE_BYTES = 12
CHECK_PLAINTEXT = "pulumi"
_SECURE = re.compile(r"(secure:\s*)(\S+)")
_SALT_LINE = re.compile(r"^encryptionsalt:.*\n", re.MULTILINE)


class SecretsError(Exception):
    """A stack file the tool cannot handle (wrong passphrase, bad value); the message says which."""


def derive_key(passphrase: str, salt: bytes) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", passphrase.encode(), salt, ITERATIONS, KEY_BYTES)


def encrypt_value(key: bytes, plaintext: str, nonce: bytes | None = None) -> str:
    nonce = nonce or os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode(), None)
    return f"v1:{base64.b64encode(nonce).decode()}:{base64.b64encode(sealed).decode()}"


def decrypt_value(key: bytes, value: str) -> str:
    parts = value.split(":")
    if len(parts) != 3 or parts[0] != "v1":
        raise SecretsError(f"{value[:12]}...: not a v1:<nonce>:<ciphertext> value")
    try:
        return AESGCM(key).decrypt(base64.b64decode(parts[1]), base64.b64decode(parts[2]), None).decode()
    except Exception as e:  # InvalidTag, binascii.Error: a wrong key or a damaged value
        raise SecretsError(
            f"cannot decrypt ({type(e).__name__}): wrong passphrase or damaged value"
        ) from None


def new_salt_state(passphrase: str, salt: bytes | None = None) -> tuple[str, bytes]:
    """(encryptionsalt value, key) for a new salt, as `pulumi stack init --secrets-provider passphrase`."""
    salt = salt or os.urandom(SALT_BYTES)
    key = derive_key(passphrase, salt)
    return f"v1:{base64.b64encode(salt).decode()}:{encrypt_value(key, CHECK_PLAINTEXT)}", key


def key_from_state(passphrase: str, state: str) -> bytes:
    """The key for an `encryptionsalt` value; SecretsError when the passphrase is not the one it was made with."""
    version, salt_b64, check = (state.split(":", 2) + ["", ""])[:3]
    if version != "v1" or not check:
        raise SecretsError("encryptionsalt: not a v1:<salt>:<check> value")
    key = derive_key(passphrase, base64.b64decode(salt_b64))
    if decrypt_value(key, check) != CHECK_PLAINTEXT:
        raise SecretsError("encryptionsalt: incorrect passphrase")
    return key


def _document(text: str) -> dict[str, Any]:
    """A stack file's document through the stack files' hardened reader."""
    try:
        doc, _ = stack_file.parse_text(text)
    except stack_file.StackFileError as e:
        raise SecretsError(str(e)) from None
    return stack_file.plain_data(doc) if isinstance(doc, dict) else {}


def secure_paths(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(key path, ciphertext) of every `secure:` value, in document order."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            yield path, value["secure"]
            return
        for k, v in value.items():
            yield from secure_paths(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from secure_paths(v, f"{path}[{i}]")


def decrypt_stack(text: str, passphrase: str) -> dict[str, str]:
    """Every secure value of a stack file, decrypted: key path -> plaintext."""
    doc = _document(text)
    state = doc.get("encryptionsalt")
    if not state:
        raise SecretsError("no encryptionsalt: the CLI cannot decrypt this stack's secrets")
    key = key_from_state(passphrase, state)
    return {p: decrypt_value(key, c) for p, c in secure_paths(doc.get("config") or {}, "")}


# --- example plaintexts -----------------------------------------------------------------------------------


def example_kubeconfig(cluster: str, server: str, user: str) -> str:
    """A kubeconfig for an example cluster; its exec credential names a helper the operator installs."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster, "cluster": {"server": server}}],
            "contexts": [{"name": user, "context": {"cluster": cluster, "user": user}}],
            "current-context": user,
            "users": [
                {
                    "name": user,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": "kubelogin",
                            "args": ["get-token", "--cluster", cluster],
                            "interactiveMode": "Never",
                        }
                    },
                }
            ],
        },
        sort_keys=False,
    )


def example_tls(cname: str) -> tuple[str, str]:
    """A throwaway self-signed certificate and unencrypted key for `cname` (PEM text)."""
    from cryptography import x509

    cert, key = self_signed(cname, x509.DNSName(cname), datetime.timedelta(days=365))
    return cert.decode(), key.decode()


def self_signed(
    common_name: str,
    alt_name: Any,
    lifetime: datetime.timedelta,
    *,
    backdated: datetime.timedelta = datetime.timedelta(0),
    ca: bool = False,
) -> tuple[bytes, bytes]:
    """(certificate, unencrypted key) as PEM: a P-256 key and its self-signed certificate for `common_name`
    and the subject alternative name `alt_name` (an x509 GeneralName), valid from `backdated` ago for
    `lifetime`; `ca`: it may sign."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - backdated)
        .not_valid_after(now + lifetime)
        .add_extension(x509.SubjectAlternativeName([alt_name]), critical=False)
    )
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    cert = builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    return cert, key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _prod_tls(part: int) -> Callable[[], str]:
    cache: dict[str, tuple[str, str]] = {}

    def make() -> str:
        if "tls" not in cache:
            cache["tls"] = example_tls("ml.mldiag.example.com")
        return cache["tls"][part]

    return make


_PROD_TLS_CERT, _PROD_TLS_KEY = _prod_tls(0), _prod_tls(1)

# stack -> key path -> plaintext factory. Every `secure:` value of a shipped stack must be listed here.
EXAMPLES: dict[str, dict[str, Callable[[], str]]] = {
    "dev": {
        "ml-diagnostics:kubernetesClusters[0].kubeconfig": lambda: example_kubeconfig(
            "lab", "https://lab-k8s.example.internal:6443", "lab-admin"
        ),
    },
    "staging": {
        "ml-diagnostics:kubernetesClusters[0].kubeconfig": lambda: example_kubeconfig(
            "onprem-gpu", "https://onprem-gpu.example.internal:6443", "onprem-gpu-admin"
        ),
    },
    "prod": {
        "ml-diagnostics:azureMl[0].inference.sslCertPem": _PROD_TLS_CERT,
        "ml-diagnostics:azureMl[0].inference.sslKeyPem": _PROD_TLS_KEY,
        "ml-diagnostics:kubernetesClusters[0].kubeconfig": lambda: example_kubeconfig(
            "onprem-prod", "https://onprem-prod.example.internal:6443", "onprem-prod-admin"
        ),
    },
}


def rewrite(text: str, stack: str, passphrase: str, salt: bytes | None = None) -> str:
    """The stack file with a new encryptionsalt and every secure value re-encrypted (comments kept)."""
    doc = _document(text)
    paths = [p for p, _ in secure_paths(doc.get("config") or {}, "")]
    plaintexts = EXAMPLES.get(stack, {})
    unknown = [p for p in paths if p not in plaintexts]
    if unknown:
        raise SecretsError(
            f"stack {stack}: no example plaintext for {', '.join(unknown)} (add it to EXAMPLES)"
        )
    state, key = new_salt_state(passphrase, salt)
    values = iter([encrypt_value(key, plaintexts[p]()) for p in paths])
    out = _SECURE.sub(lambda m: m.group(1) + next(values), text)
    out = _SALT_LINE.sub("", out)
    return f"encryptionsalt: {state}\n{out}"


def _stacks(names: list[str]) -> list[tuple[str, Path]]:
    if names:
        return [(n, STACKS / f"Pulumi.{n}.yaml") for n in names]
    return [
        (p.name.removeprefix("Pulumi.").removesuffix(".yaml"), p)
        for p in sorted(STACKS.glob("Pulumi.*.yaml"))
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mldiag.stacks.stack_secrets", description=__doc__.splitlines()[0]
    )
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="new salt and ciphertexts in the stack files")
    mode.add_argument(
        "--check", action="store_true", help="decrypt every secure value (prints key paths only)"
    )
    ap.add_argument("stacks", nargs="*", help="stack names (default: every stacks/Pulumi.<stack>.yaml)")
    args = ap.parse_args(argv)
    passphrase = os.environ.get("PULUMI_CONFIG_PASSPHRASE", EXAMPLE_PASSPHRASE)
    try:
        for stack, path in _stacks(args.stacks):
            if not path.exists():
                raise SecretsError(f"{path} does not exist")
            if args.write:
                path.write_text(rewrite(path.read_text(), stack, passphrase))
                print(f"{path.relative_to(ROOT)}: encrypted")
            else:
                for key_path in decrypt_stack(path.read_text(), passphrase):
                    print(f"{path.relative_to(ROOT)}: {key_path}: decrypts")
    except SecretsError as e:
        print(f"error: {e}", file=sys.stderr)
        return Exit.INVALID
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
