"""The hardened stack-file reader shared by the offline plan and the config loader.

A stack file may come from a fork's pull request: it is read as untrusted input, by reader.py (its limits,
UTF-8 only, YAML 1.2 scalars, no tags, no duplicate keys or self-referencing anchors; every problem one
`StackFileError` naming the line), which words what the YAML parser refused through yaml_errors.py (the same
message whichever loader read the file). Here: the stack file's own keys (`config:`, the secrets provider's
settings, whose ciphertexts ciphertexts.py checks, the ESC `environment:` list) and the config map for an
offline run, every `secure:` leaf a placeholder or its plaintext.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ml_diagnostics.compat import quote
from ml_diagnostics.nested import map_leaves
from program.stack_file.ciphertexts import check_ciphertexts
from program.stack_file.reader import (
    BYTES_PER_VALUE,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_INT,
    MIN_VALUES,
    Path_,
    SecretLeaf,
    StackFileError,
    check_limits,
    collector_paused,
    key_path,
    parse_text,
    read_text,
    value_budget,
)
from program.stack_file.yaml_errors import yaml_problem

__all__ = [
    "BYTES_PER_VALUE",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT",
    "MIN_VALUES",
    "STACK_FILE_KEYS",
    "Path_",
    "SecretLeaf",
    "StackFile",
    "StackFileError",
    "StackFileProblems",
    "check_ciphertexts",
    "check_limits",
    "collector_paused",
    "offline_config",
    "offline_of",
    "offline_stack",
    "offline_values",
    "parse_text",
    "plain_data",
    "read",
    "read_document",
    "read_parsed",
    "read_text",
    "value_budget",
    "yaml_problem",
]

STACK_FILE_KEYS = ("config", "encryptedkey", "encryptionsalt", "environment", "secretsprovider")


class StackFileProblems(StackFileError):
    """Problems of the stack file's own keys (a top-level `environment:` that is not a list of ESC environments)
    that still leave its config readable: `stack` holds it, so its own problems can be reported with these
    (program.config.read_stack_file)."""

    def __init__(self, path: Path, problems: list[str], stack: StackFile) -> None:
        super().__init__("; ".join(f"{path}: {p}" for p in problems))
        self.problems = problems
        self.stack = stack


@dataclass
class StackFile:
    """`config`: full key (`ml-diagnostics:gkeClusters`) -> value; `secret_paths`: (full key, *path) of
    every `secure:` leaf."""

    config: dict[str, Any]
    secret_paths: set[Path_]
    environments: tuple[str, ...] = ()
    """The Pulumi ESC environments it imports (`environment:`): the engine merges their `pulumiConfig` under
    `config` at `pulumi up`; nothing here opens them."""
    secrets_settings: dict[str, Any] = field(default_factory=dict)
    """Its `encryptionsalt`, `secretsprovider` and `encryptedkey`, those it has."""

    @property
    def encryptionsalt(self) -> str | None:
        """The passphrase secrets provider's salt and check value (None: another secrets provider)."""
        salt = self.secrets_settings.get("encryptionsalt")
        return salt if isinstance(salt, str) else None

    @property
    def secretsprovider(self) -> str | None:
        """A cloud KMS secrets provider's URL (`gcpkms://...`); None with an `encryptionsalt` or Pulumi Cloud's."""
        provider = self.secrets_settings.get("secretsprovider")
        return provider if isinstance(provider, str) and provider else None

    @property
    def secret_keys(self) -> list[str]:
        return sorted({p[0] for p in self.secret_paths if isinstance(p[0], str)})


def plain_data(value: Any) -> Any:
    """A parsed document's value with each `secure:` leaf back as `{"secure": ciphertext}` (for a tool that
    edits a stack file's data and writes it out again)."""
    return map_leaves(value, lambda v: {"secure": v.ciphertext} if isinstance(v, SecretLeaf) else v)


def read_document(path: Path) -> dict[str, Any]:
    """A stack file's whole document (config, encryptionsalt, ...) through the hardened reader, its `secure:`
    leaves as `{"secure": ciphertext}`."""
    doc, _ = parse_text(read_text(path), str(path))
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise StackFileError(f"{path}: must be a mapping with a 'config:' key")
    return plain_data(doc)


def read(path: Path, project: str) -> StackFile:
    """Reads a `Pulumi.<stack>.yaml`; bare config keys get the project's namespace like the CLI does."""
    return read_parsed(read_text(path), path, project)


def read_parsed(text: str, path: Path, project: str) -> StackFile:
    """`read` of a stack file's text already read (`read_text`)."""
    doc, secrets = parse_text(text, str(path))
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise StackFileError(f"{path}: must be a mapping with a 'config:' key")
    for key in doc:
        if key not in STACK_FILE_KEYS:
            raise StackFileError(
                f"{path}: unknown top-level key {key[:60]!r}; a stack file has {', '.join(STACK_FILE_KEYS)}"
            )
    raw = doc.get("config")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise StackFileError(f"{path}: 'config' must be a mapping of key -> value")
    config: dict[str, Any] = {}
    paths: set[Path_] = set()
    for key, value in raw.items():
        full = key if ":" in key else f"{project}:{key}"
        if full in config:
            raise StackFileError(f"{path}: config key {key!r} is given twice (as {full!r} too)")
        config[full] = value
    check_ciphertexts(doc, config, path)
    for p in secrets:
        if p and p[0] == "config" and len(p) > 1:
            key = str(p[1])
            paths.add((key if ":" in key else f"{project}:{key}", *p[2:]))
        elif p and p[0] != "config":
            raise StackFileError(f"{path}: `secure:` is only allowed under config ({key_path(p)})")
    settings = {k: doc[k] for k in ("encryptionsalt", "secretsprovider", "encryptedkey") if k in doc}
    stack = StackFile(config, paths, (), settings)
    problem = _environment_problem(doc.get("environment"))
    if problem:
        raise StackFileProblems(path, [problem], stack)
    stack.environments = _environments(doc.get("environment"))
    return stack


def _environment_problem(value: Any) -> str | None:
    """What is wrong with a top-level `environment:`, as `environment: <what>`; a stack environment's name
    written there (`environment: dev`) is taken for a misplaced `ml-diagnostics:environment`."""
    try:
        _environments(value)
        return None
    except ValueError as e:
        problem = f"environment: {e}"
    if isinstance(value, str):
        from ml_diagnostics.rules.base import closest
        from program.config_base import ENVIRONMENTS, NAMESPACE

        if value in ENVIRONMENTS or closest(value, ENVIRONMENTS):
            return (
                f"environment: {quote(value, 30)}: did you mean `{NAMESPACE}:environment` under config: (the "
                f"stack's environment: {', '.join(ENVIRONMENTS)})? The top-level `environment:` lists the Pulumi "
                "ESC environments the stack imports, e.g. environment: [ml-platform/gcp-oidc]"
            )
    return problem


def _environments(value: Any) -> tuple[str, ...]:
    """`environment:` as the Pulumi CLI reads it: a list of names (`project/env`, or `env` of the default
    project), each optionally the one key of a mapping of ESC import options (`- name: {merge: false}`).
    ValueError says what it must be."""
    if value is None:
        return ()
    names: list[str] = []
    items = value if isinstance(value, list) else None
    for item in items or ():
        name = next(iter(item)) if isinstance(item, dict) and len(item) == 1 else item
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?", name):
            items = None
            break
        names.append(name)
    if items is None:
        raise ValueError(
            "must be a list of Pulumi ESC environment names ('project/env' or 'env', optionally as the one key "
            "of a mapping of import options), e.g. environment: [ml-platform/gcp-oidc]"
        )
    return tuple(names)


def offline_config(path: Path, project: str) -> tuple[dict[str, Any], list[str]]:
    """The stack file for the offline plan: (config map, secret keys), every `secure:` leaf replaced by
    `PLACEHOLDER_SECRET:<digest of the ciphertext>` (a changed secret still shows as changed)."""
    config, secret_keys, _ = offline_stack(path, project)
    return config, secret_keys


def offline_stack(path: Path, project: str) -> tuple[dict[str, Any], list[str], tuple[str, ...]]:
    """`offline_config` and the ESC environments the stack file imports."""
    return offline_of(read(path, project), path)


def offline_of(stack: StackFile, path: Path) -> tuple[dict[str, Any], list[str], tuple[str, ...]]:
    """`offline_stack` of a stack file already read."""
    return offline_values(stack, path), stack.secret_keys, stack.environments


def offline_values(
    stack: StackFile, path: Path, plaintext: Callable[[str, str], str] | None = None
) -> dict[str, Any]:
    """The stack file's config map for an offline run: each `secure:` leaf as `plaintext(ciphertext, key
    path)`, or without `plaintext` as `PLACEHOLDER_SECRET:<digest of the ciphertext>` (a changed secret still
    shows as changed)."""
    from program.config_base import PLACEHOLDER_SECRET

    def replace(value: Any, at: Path_) -> Any:
        if isinstance(value, SecretLeaf):
            if plaintext is not None:
                return plaintext(value.ciphertext, key_path(at))
            return f"{PLACEHOLDER_SECRET}:{hashlib.sha256(value.ciphertext.encode()).hexdigest()[:12]}"
        if isinstance(value, dict):
            return {k: replace(v, (*at, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [replace(v, (*at, i)) for i, v in enumerate(value)]
        if isinstance(value, str) and value.startswith(PLACEHOLDER_SECRET):
            raise StackFileError(
                f"{path}: {key_path(at)}: values starting with {PLACEHOLDER_SECRET!r} are reserved"
            )
        return value

    return {k: replace(v, (k,)) for k, v in stack.config.items()}
