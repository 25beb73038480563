"""The environment of a fleet: its stack file read once and validated as the program validates it
(`program.config.from_raw`, the offline plan's way: secrets stay ciphertext), its targets in the program's
order, and each target's revision: a digest of what its member's update deploys (the program's files, the
environment-wide keys of the stack file and the target's own entry, secrets as their ciphertext). Progress
recorded at an older revision counts as not done (mldiag/fleet/progress.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from program import fleet_member, stack_file
from program.config_base import NAMESPACE
from program.stack_file import StackFileError

PROGRAM_PATHS = fleet_member.PROGRAM_PATHS
program_digest = fleet_member.program_digest
_Key = tuple[str, str]  # a target's (kind, name)


@dataclass(frozen=True)
class EnvTarget:
    kind: str
    name: str
    prefix: str
    entry: Any
    """The target's entry as the stack file holds it (secrets as SecretLeaf ciphertext)."""
    index: int | None = None
    """Its position among its kind's targets in the stack file."""


class EnvironmentError(Exception):
    """The environment stack file is missing or invalid (its problems, with their key paths)."""


def stack_config_dir(project_dir: Path) -> Path:
    project_file = project_dir / "Pulumi.yaml"
    try:
        doc, _ = stack_file.parse_text(stack_file.read_text(project_file), str(project_file))
    except StackFileError as e:
        raise EnvironmentError(str(e)) from None
    return project_dir / str((doc or {}).get("stackConfigDir", "."))


def environment_stack_file(project_dir: Path, stack: str) -> Path:
    return stack_config_dir(project_dir) / f"Pulumi.{stack}.yaml"


@dataclass(frozen=True)
class Environment:
    """An environment stack file, validated as the program validates it."""

    environment: str
    """Its `environment` (dev, staging, prod)."""
    targets: list[EnvTarget]
    """Its targets in the program's order."""
    written: dict[str, Any]
    """Its config as written (secrets as SecretLeaf ciphertext)."""
    digest: str
    """fleet_member.environment_digest of the program and this file: what a member derived from it records."""
    file: stack_file.StackFile = field(repr=False, compare=False)
    """The stack file as read."""


def read_environment(project_dir: Path, stack: str) -> Environment:
    """The environment stack file read once and validated whole (EnvironmentError with its problems)."""
    from program.config import ConfigError, from_raw
    from program.fleet_member import KEY as MEMBER_KEY
    from program.kinds.table import KINDS

    path = environment_stack_file(project_dir, stack)
    try:
        text = stack_file.read_text(path)
        written_file = stack_file.read_parsed(text, path, NAMESPACE)
        raw, secret_keys, _ = stack_file.offline_of(written_file, path)
    except StackFileError as e:
        raise EnvironmentError(str(e)) from None
    written = written_file.config
    if MEMBER_KEY in raw:
        raise EnvironmentError(
            f"{path}: {MEMBER_KEY} is set: that is a fleet member's key, not an environment's"
        )
    try:
        cfg = from_raw(raw, secret_keys, stack, project_dir=project_dir)
    except ConfigError as e:
        raise EnvironmentError(f"{path}: {e}") from None
    targets = []
    for kind in KINDS:
        entries = written.get(f"{NAMESPACE}:{kind.key}") or []
        for i, t in enumerate(cfg.targets(kind)):
            targets.append(
                EnvTarget(kind.key, t.name, kind.prefix, entries[i] if i < len(entries) else None, i)
            )
    digest = fleet_member.environment_digest(project_dir, stack, text.encode())
    return Environment(str(cfg.environment), targets, written, digest, written_file)


def member_revision(program: str, written: dict[str, Any], target: EnvTarget) -> str:
    return member_revisions(program, written, [target])[(target.kind, target.name)]


def member_revisions(program: str, written: dict[str, Any], targets: list[EnvTarget]) -> dict[_Key, str]:
    """Each target's revision: the digest of `{"program", "shared", "target"}` as sorted JSON, the program's
    and the environment-wide part written once for all of them."""
    from program.kinds.table import KINDS

    kind_keys = {f"{NAMESPACE}:{k.key}" for k in KINDS}
    shared = {k: v for k, v in sorted(written.items()) if k not in kind_keys}
    head = f'{{"program": {json.dumps(program)}, "shared": {json.dumps(stack_file.plain_data(shared), sort_keys=True)}, "target": '
    out = {}
    for t in targets:
        doc = head + json.dumps([t.kind, stack_file.plain_data(t.entry)], sort_keys=True) + "}"
        out[(t.kind, t.name)] = hashlib.sha256(doc.encode()).hexdigest()[:12]
    return out
