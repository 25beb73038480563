"""The shapes of a stack file's secrets: every `secure:` value and the `encryptionsalt` as the stack's
secrets provider writes them, checked before anything is decrypted (nothing here decrypts)."""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any

from program.stack_file.reader import Path_, SecretLeaf, StackFileError, key_path

_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _b64_bytes(text: str) -> int | None:
    """How many bytes a base64 text holds; None when it is not base64."""
    if not text or len(text) % 4 or not _B64.fullmatch(text):
        return None
    try:
        return len(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return None


def _symmetric_problem(value: str) -> str | None:
    """What is wrong with a `v1:<nonce>:<ciphertext>` value (the passphrase and cloud KMS secrets managers)."""
    parts = value.split(":")
    if len(parts) != 3 or parts[0] != "v1":
        return "is not a ciphertext of this stack's secrets provider (v1:<nonce>:<ciphertext>)"
    if _b64_bytes(parts[1]) != 12:
        return "has no 12-byte base64 nonce (v1:<nonce>:<ciphertext>)"
    sealed = _b64_bytes(parts[2])
    if sealed is None or sealed < 16:
        return "has no base64 AES-GCM ciphertext (v1:<nonce>:<ciphertext>)"
    return None


def _salt_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be the string `pulumi stack init --secrets-provider passphrase` writes"
    parts = value.split(":", 2)
    if len(parts) != 3 or parts[0] != "v1" or _b64_bytes(parts[1]) != 8:
        return "is not v1:<8-byte base64 salt>:<check ciphertext>"
    if problem := _symmetric_problem(parts[2]):
        return f"check value {problem.removeprefix('is not ').removeprefix('has ')}"
    return None


def _leaves(value: Any, at: Path_) -> list[tuple[Path_, SecretLeaf]]:
    if isinstance(value, SecretLeaf):
        return [(at, value)]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(v, (*at, k))]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _leaves(v, (*at, i))]
    return []


def check_ciphertexts(doc: dict[str, Any], config: dict[str, Any], path: Path) -> None:
    """Every `secure:` value and the `encryptionsalt` in the shape the stack's secrets provider writes, so a
    pasted plaintext (`secure: hello`) or a damaged salt fails here with its key path, not at decryption.

    The passphrase provider (an `encryptionsalt`) and the cloud KMS providers (`secretsprovider`) write
    `v1:<nonce>:<ciphertext>`; the Pulumi Cloud provider (neither key) writes base64."""
    fix = "set it with `mldiag secrets set` or `pulumi config set --secret`"
    symmetric = "encryptionsalt" in doc or bool(doc.get("secretsprovider"))
    if "encryptionsalt" in doc and (problem := _salt_problem(doc["encryptionsalt"])):
        raise StackFileError(
            f"{path}: encryptionsalt {problem}; `pulumi stack init` writes it, or `mldiag new-stack`"
        )
    for at, leaf in _leaves(config, ()):
        if symmetric:
            problem = _symmetric_problem(leaf.ciphertext)
        else:
            problem = (
                None
                if _b64_bytes(leaf.ciphertext)
                else "is not a ciphertext (base64) of the Pulumi Cloud secrets provider"
            )
        if problem:
            raise StackFileError(f"{path}: {key_path(at)}: the `secure:` value {problem}; {fix}")
