"""A per-cluster stack of a fleet rollout (`mldiag fleet`, docs/fleet.md): one target of an environment.

`mldiag fleet` derives the member stack `<env>.<kind prefix>-<target>` from the environment's stack file, once
that file has been validated whole. The member's config holds what its update needs and nothing more, so its
size and its validation do not grow with the environment (a config passed to the program travels in one
environment variable, which Linux limits to 128 KiB):

    ml-diagnostics:environment: prod                 # every environment-wide key, as written
    ml-diagnostics:kubernetesClusters: [{name: onprem-prod, ...}]   # its one target, without its secrets
    ml-diagnostics:fleetSecret.kubernetesClusters[0].kubeconfig: {secure: v1:...}   # each secret leaf, by path
    ml-diagnostics:fleetMember:
      {environmentStack: prod, kind: kubernetesClusters, name: onprem-prod, index: 3, validated: <digest>}

A secret leaf is a top-level key of its own, so an engine that sets only whole keys as secrets (the Pulumi
Kubernetes Operator's `secretsRef`) can supply it; the program puts it back at its path. `validated` is the
digest of the program and of the environment's stack file that were validated when the member was derived:
while both are unchanged the program validates the member's own config alone; otherwise it validates the
environment as `pulumi up -s <env>` does, so a member reports the same problems, with the same key paths
(`index` is the target's position in the environment). Its resources get the same names and inputs as in
the environment stack; only the stack name in their URNs differs.

A member config written before `validated` existed holds the whole environment: it is validated whole and
keeps its one target, as it always was. A config without `fleetMember` is untouched.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ml_diagnostics.rules.names import quote, target_name_problem
from program import config_input, stack_file
from program.config_base import NAMESPACE, ConfigError
from program.kinds.table import KINDS
from program.stack_file import Path_, SecretLeaf, StackFileError

KEY = f"{NAMESPACE}:fleetMember"
SECRET_PREFIX = f"{NAMESPACE}:fleetSecret."
FIELDS = ("environmentStack", "kind", "name")
OPTIONAL_FIELDS = ("index", "validated")
# What a member's update runs besides its config: part of `validated` and of every member's revision.
PROGRAM_PATHS = ("Pulumi.yaml", "__main__.py", "requirements.txt", "program", "components/ml_diagnostics")
# Pulumi's stack name rule; it also keeps the stack file path (`Pulumi.<stack>.yaml`) inside stackConfigDir.
_STACK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class FleetMember:
    environment_stack: str
    """The environment stack whose stack file this member's config was derived from."""
    kind: str
    """The target's kind key (`kubernetesClusters`, ...)."""
    name: str
    """The target's name within its kind."""
    index: int | None = None
    """The target's position among its kind's targets in the environment (the key paths of its problems)."""
    validated: str | None = None
    """`environment_digest` when the member was derived from the validated environment; None: the config
    holds the whole environment (derived before this record existed)."""


# -- the digest of what was validated ----------------------------------------------------------------------------
def program_digest(project_dir: Path) -> str:
    h = hashlib.sha256()
    for rel in PROGRAM_PATHS:
        base = project_dir / rel
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for p in files:
            if "__pycache__" in p.parts or p.suffix == ".pyc":
                continue
            h.update(str(p.relative_to(project_dir)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def environment_file(project_dir: Path, environment_stack: str) -> Path:
    """`<stackConfigDir>/Pulumi.<environment>.yaml` of the project (StackFileError for a bad Pulumi.yaml)."""
    project_file = project_dir / "Pulumi.yaml"
    doc, _ = stack_file.parse_text(stack_file.read_text(project_file), str(project_file))
    config_dir = doc.get("stackConfigDir", ".") if isinstance(doc, dict) else "."
    return project_dir / str(config_dir) / f"Pulumi.{environment_stack}.yaml"


def environment_digest(project_dir: Path, environment_stack: str, text: bytes | None = None) -> str:
    """The digest of the program and of the environment's stack file (its bytes: `text` when already read);
    OSError or StackFileError when the file cannot be read."""
    if text is None:
        text = environment_file(project_dir, environment_stack).read_bytes()
    h = hashlib.sha256(program_digest(project_dir).encode() + b"\0")
    h.update(text)
    return h.hexdigest()


# -- secret leaves as keys of their own ---------------------------------------------------------------------------
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SEGMENT = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def path_text(path: Path_) -> str:
    """`kubernetesClusters[0].kubeconfig`; a key that is not a plain name is quoted: `values["a.b"]`."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        elif _IDENT.fullmatch(p):
            out += f".{p}" if out else p
        else:
            out += f"[{json.dumps(p)}]"
    return out


def parse_path(text: str) -> Path_ | None:
    """The inverse of `path_text`; None when `text` is not such a path."""
    out: list[str | int] = []
    pos = 0
    while pos < len(text):
        m = _SEGMENT.match(text, pos)
        if m is None or (m.group(1) is not None and text[pos] != "." and pos > 0):
            return None
        name, index, quoted = m.groups()
        out.append(name if name is not None else int(index) if index is not None else json.loads(quoted))
        pos = m.end()
    return tuple(out) if out and isinstance(out[0], str) else None


def derive(
    config: Mapping[str, Any],
    member: FleetMember,
) -> dict[str, Any]:
    """The member's config as written (values as the stack file reader gives them, `SecretLeaf`s included):
    the environment-wide keys as they are, the member's one target without its secret leaves, each of those
    (and each nested secret of an environment-wide key) under `fleetSecret.<path>`, and `fleetMember`."""
    kind_keys = {f"{NAMESPACE}:{k.key}" for k in KINDS}
    own = f"{NAMESPACE}:{member.kind}"
    out: dict[str, Any] = {}
    secrets: dict[str, SecretLeaf] = {}
    for key, value in config.items():
        if key in kind_keys and key != own:
            continue
        if key == own:
            value = [e for e in value or [] if isinstance(e, dict) and e.get("name") == member.name][:1]
        if key.startswith(NAMESPACE + ":") and not isinstance(value, SecretLeaf):
            value = _lift(value, (key[len(NAMESPACE) + 1 :],), secrets)
        out[key] = value
    out.update(secrets)
    out[KEY] = {
        "environmentStack": member.environment_stack,
        "kind": member.kind,
        "name": member.name,
        **({"index": member.index} if member.index is not None else {}),
        **({"validated": member.validated} if member.validated is not None else {}),
    }
    return out


def _lift(value: Any, at: Path_, secrets: dict[str, SecretLeaf]) -> Any:
    """`value` without its SecretLeaf leaves, each put in `secrets` under the key of its path."""
    if isinstance(value, SecretLeaf):
        secrets[SECRET_PREFIX + path_text(at)] = value
        return None
    if isinstance(value, dict):
        lifted = {k: _lift(v, (*at, k), secrets) for k, v in value.items()}
        return {k: v for k, v in lifted.items() if not isinstance(value[k], SecretLeaf)}
    if isinstance(value, list):
        return [_lift(v, (*at, i), secrets) for i, v in enumerate(value)]
    return value


def take(raw: Mapping[str, Any]) -> tuple[dict[str, Any], FleetMember | None, set[Path_]]:
    """(the config without the fleet keys, each secret leaf put back at its path; the member it names or None;
    the full paths of those leaves). ConfigError for a bad value."""
    rest = {k: v for k, v in raw.items() if k != KEY and not k.startswith(SECRET_PREFIX)}
    lifted = sorted(k for k in raw if k.startswith(SECRET_PREFIX))
    if KEY not in raw:
        if lifted:
            raise ConfigError(
                [f"{quote(lifted[0], 80)[1:-1]}: only a fleet member's config (with {KEY}) has it"]
            )
        return rest, None, set()
    member = _member(raw[KEY])
    problems: list[str] = []
    paths: set[Path_] = set()
    decoded: dict[str, Any] = {}
    for key in lifted:
        path = parse_path(key[len(SECRET_PREFIX) :])
        if path is None or len(path) < 2:
            problems.append(
                f"{quote(key, 80)[1:-1]}: not a key path like fleetSecret.kubernetesClusters[0].kubeconfig"
            )
            continue
        full = f"{NAMESPACE}:{path[0]}"
        if full not in decoded:
            value = rest.get(full)
            if isinstance(value, str) and value[:1] in ("[", "{"):
                try:
                    value = json.loads(value)
                except (json.JSONDecodeError, RecursionError):
                    problems.append(f"{full}: not valid JSON")
                    continue
            decoded[full] = value
        if not _put(decoded[full], path[1:], raw[key]):
            problems.append(f"{quote(key, 80)[1:-1]}: the member's config has no place {path_text(path)}")
            continue
        paths.add((full, *path[1:]))
    if problems:
        raise ConfigError(problems)
    rest.update(decoded)
    return rest, member, paths


def _put(container: Any, path: Path_, value: Any) -> bool:
    for i, p in enumerate(path):
        last = i == len(path) - 1
        if isinstance(container, dict) and isinstance(p, str):
            if last:
                container[p] = value
                return True
            container = container.get(p)
        elif isinstance(container, list) and isinstance(p, int) and 0 <= p < len(container):
            if last:
                container[p] = value
                return True
            container = container[p]
        else:
            return False
    return False


def _member(value: Any) -> FleetMember:
    decoded, problems = config_input.decode({KEY: value})
    if problems:
        raise ConfigError(problems)
    member = decoded.get("fleetMember")
    allowed = (*FIELDS, *OPTIONAL_FIELDS)
    if not isinstance(member, dict):
        raise ConfigError([f"{KEY}: must be a map with {', '.join(FIELDS)}"])
    out: list[str] = []
    for key in sorted(set(member) - set(allowed)):
        out.append(f"{KEY}.{quote(str(key), 40)[1:-1]}: unknown key; allowed keys: {', '.join(allowed)}")
    for key in FIELDS:
        if key not in member:
            out.append(f"{KEY}.{key}: required key is missing")
        elif not isinstance(member[key], str):
            out.append(f"{KEY}.{key}: must be a string")
    index, validated = member.get("index"), member.get("validated")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
        out.append(f"{KEY}.index: must be a whole number, 0 or more")
    if validated is not None and not (isinstance(validated, str) and _DIGEST.fullmatch(validated)):
        out.append(f"{KEY}.validated: must be a digest (64 hexadecimal digits) written by `mldiag fleet`")
    if not out:
        kinds = [k.key for k in KINDS]
        if not _STACK_NAME.fullmatch(member["environmentStack"]):
            out.append(
                f"{KEY}.environmentStack: {quote(member['environmentStack'])} is not a stack name "
                "(letters, digits, '_', '.', '-'; at most 100)"
            )
        if member["kind"] not in kinds:
            out.append(f"{KEY}.kind: must be one of {', '.join(kinds)}")
        if (problem := target_name_problem(member["name"])) is not None:
            out.append(f"{KEY}.name: {problem}")
    if out:
        raise ConfigError(out)
    return FleetMember(member["environmentStack"], member["kind"], member["name"], index, validated)


def keep(cfg: Any, member: FleetMember) -> Any:
    """The validated StackConfig with the member's target alone (every other kind's list empty)."""
    kind = next(k for k in KINDS if k.key == member.kind)
    targets = cfg.targets(kind)
    mine = [t for t in targets if t.name == member.name]
    if not mine:
        names = ", ".join(t.name for t in targets) or "none"
        raise ConfigError(
            [
                f"{KEY}.name: the config has no {member.kind} target {quote(member.name)} "
                f"(its {member.kind}: {names}); rerun `mldiag fleet` to derive the member stack again"
            ]
        )
    return cfg.model_copy(update={k.field: (mine if k is kind else []) for k in KINDS})


def in_environment(error: ConfigError, member: FleetMember) -> ConfigError:
    """A problem of the member's own config with the key path the environment's stack file gives it."""
    if member.index is None or member.index == 0:
        return error
    own = f"{NAMESPACE}:{member.kind}[0]"
    there = f"{NAMESPACE}:{member.kind}[{member.index}]"
    problems = [there + p[len(own) :] if p.startswith(own) else p for p in error.problems]
    return ConfigError(problems, getattr(error, "total", None))


def stale(member: FleetMember, project_dir: Path) -> str | None:
    """None while the program and the environment's stack file are those the member was derived from;
    otherwise why not (the caller then validates the environment itself)."""
    try:
        now = environment_digest(project_dir, member.environment_stack)
    except (OSError, StackFileError) as e:
        return f"the environment's stack file could not be read here ({e})"
    if now == member.validated:
        return None
    return "the program or the environment's stack file changed since it was derived"


# -- one way per environment ------------------------------------------------------------------------------------
# The lease stack of an environment's rollouts, `<environment>.fleet` (mldiag/fleet/progress.py), exports under
# MARK the targets its member stacks deploy: {"members": ["kubernetesClusters/a", ...], "fleet": "fleet/prod.yaml"}.
COORDINATOR_SUFFIX = "fleet"
MARK = "fleet"
READ_OUTPUTS = "pulumi:pulumi:readStackOutputs"


def fleet_members(read: Any = None) -> tuple[str, list[str]] | None:
    """(the fleet file, the targets it deploys) when member stacks deploy this environment, else None."""
    import pulumi
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.settings import get_monitor

    if read is None and isinstance(get_monitor(), MockMonitor):
        return None  # the offline plan (mock runtime) plans the stack as written
    name = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}.{COORDINATOR_SUFFIX}"
    try:
        found = (read or pulumi.runtime.invoke)(READ_OUTPUTS, {"name": name}).value
    except Exception as e:  # noqa: BLE001 - the engine reports a failed invoke as a plain Exception
        text = str(e).lower()
        if "unknown stack" in text or "no stack named" in text or "not found" in text:
            return None  # no rollout of this environment ever ran
        raise pulumi.RunError(
            f"the lease stack {name} of this environment's fleet could not be read: {e}"
        ) from None
    mark = ((found or {}).get("outputs") or {}).get(MARK)
    if not isinstance(mark, dict) or not mark.get("members"):
        return None
    return str(mark.get("fleet") or "its fleet file"), [str(m) for m in mark["members"]]


def one_way(cfg: Any, read: Any = None) -> None:
    """An environment whose targets its fleet's member stacks deploy refuses `pulumi up -s <env>` (both would
    manage the same objects); its preview says so as a warning. A member stack itself is not checked here."""
    import pulumi

    if pulumi.Config(NAMESPACE).get("fleetMember") is not None:
        return
    found = fleet_members(read)
    if found is None:
        return
    fleet, members = found
    mine = [f"{k.key}/{t.name}" for k in KINDS for t in cfg.targets(k)]
    shared = [m for m in mine if m in members]
    if not shared:
        return
    stack = pulumi.get_stack()
    message = (
        f"environment {stack} is deployed by its fleet's member stacks ({', '.join(shared[:5])}"
        f"{f' and {len(shared) - 5} more' if len(shared) > 5 else ''}: `mldiag fleet run {fleet}`); "
        f"`pulumi up -s {stack}` would manage the same clusters a second time. Roll it out with "
        f"`mldiag fleet run {fleet}` (docs/fleet.md, 'One way per environment')"
    )
    if pulumi.runtime.is_dry_run():
        pulumi.log.warn(f"`pulumi up` would be refused: {message}")
        return
    raise pulumi.RunError(message)
