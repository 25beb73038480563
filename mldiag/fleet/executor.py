"""The local engine of a rollout: the Pulumi Automation API (`pulumi.automation`), one workspace per stack.

Each member stack gets its own work directory, `<project>/.fleet-work/<stack>/`, holding a `Pulumi.yaml`
(the project's, with `main:` pointing back at the program) and the member's stack file, derived from the
environment's before every run: its config verbatim (secrets stay the environment's ciphertexts under its
`encryptionsalt` or `secretsprovider`) plus `ml-diagnostics:fleetMember` (program/fleet_member.py). Separate
directories mean separate `workspace.json` files: concurrent stacks never select each other's stack
(pulumi/pulumi#8186), and every command names its stack. The backend's stack lock keeps two updates of one
stack apart; a lock held elsewhere is a LockConflict, never a wait.

The gate is verify's checks (mldiag/verify) over the member's config as the Pulumi CLI decrypts it
(`pulumi config --show-secrets`, kept in memory). Progress is a stack tag; the lease is the output of the
coordination stack `<environment>.fleet`, an inline program whose update reads the lease it holds and
writes the next one while the backend's lock is held (mldiag/fleet/progress.py).

One file (over 450 lines) because it is the one adapter of the rollout to the Automation API: every call that
runs, locks, tags or exports a stack, and the error mapping they share (LockConflict, StackUnavailable).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from mldiag.common import PROJECT
from mldiag.fleet import progress, recovery, testhook
from mldiag.fleet.planner import EnvironmentError, Member, Plan, environment_stack_file
from mldiag.fleet.rollout import Check, DeployFailed, LockConflict, OtherWay, StackUnavailable, StateInFlux
from program import fleet_member
from program.config_base import NAMESPACE
from program.stack_file import StackFileError, plain_data

WORK_DIR = ".fleet-work"
STACK_TYPE = "pulumi:pulumi:Stack"
HEADER = (
    "# Derived by `mldiag fleet` from {source} (program/fleet_member.py): rewritten before every\n"
    "# operation, do not edit. Change the environment's stack file instead.\n"
)
_ERROR_LINE = re.compile(r"^\s*(error|[A-Za-z]+Error|.*\berror:)", re.IGNORECASE)


class Workspaces:
    """The work directories of an environment's member stacks and of its coordination stack."""

    def __init__(self, plan: Plan, project_dir: Path, work_root: Path | None = None) -> None:
        from program import stack_file

        self.plan = plan
        self.project_dir = project_dir.resolve()
        self.root = (work_root or self.project_dir / WORK_DIR).resolve()
        self.source = environment_stack_file(self.project_dir, plan.environment_stack)
        if plan.source is not None:
            self.env_file = plan.source.file
        else:
            try:
                self.env_file = stack_file.read(self.source, NAMESPACE)
            except StackFileError as e:
                raise EnvironmentError(str(e)) from None
        self.secrets_keys = dict(self.env_file.secrets_settings)
        if self.env_file.secret_paths and not (
            "encryptionsalt" in self.secrets_keys or "secretsprovider" in self.secrets_keys
        ):
            raise EnvironmentError(
                f"{self.source}: it has `secure:` values but neither encryptionsalt nor secretsprovider, so its "
                "secrets are the Pulumi Cloud provider's, bound to that one stack: member stacks cannot share them. "
                "Give the stack a passphrase or cloud KMS provider (`pulumi stack change-secrets-provider`)"
            )

    @property
    def secrets_provider(self) -> str | None:
        if "secretsprovider" in self.secrets_keys:
            return str(self.secrets_keys["secretsprovider"])
        return "passphrase" if "encryptionsalt" in self.secrets_keys else None

    def project_settings(self, work_dir: Path) -> dict[str, Any]:
        from program import stack_file

        path = self.project_dir / "Pulumi.yaml"
        project, _ = stack_file.parse_text(stack_file.read_text(path), str(path))
        runtime = project.get("runtime", "python")
        if isinstance(runtime, dict):
            options = dict(runtime.get("options") or {})
            if "virtualenv" in options and not os.path.isabs(str(options["virtualenv"])):
                options["virtualenv"] = str((self.project_dir / str(options["virtualenv"])).resolve())
            runtime = {**runtime, "options": options}
        out = {"name": project.get("name", PROJECT), "runtime": runtime}
        if project.get("description"):
            out["description"] = project["description"]
        out["main"] = os.path.relpath(self.project_dir, work_dir)
        return out

    def member_dir(self, member: Member) -> Path:
        return self.root / member.stack

    def coordinator_stack(self) -> str:
        return f"{self.plan.environment_stack}.{progress.COORDINATOR_SUFFIX}"

    def derive(self, member: Member) -> Path:
        """Writes the member's work directory: Pulumi.yaml and its stack file."""
        work = self.member_dir(member)
        work.mkdir(parents=True, exist_ok=True)
        settings = self.project_settings(work)
        _write(work / "Pulumi.yaml", yaml.safe_dump(settings, sort_keys=False))
        config = {k: plain_data(v) for k, v in self.member_config_written(member).items()}
        doc = {**self.secrets_keys, "config": config}
        rel = os.path.relpath(self.source, self.project_dir)
        _write(
            work / f"Pulumi.{member.stack}.yaml",
            HEADER.format(source=rel) + yaml.safe_dump(doc, sort_keys=False),
        )
        return work

    def member_config_written(self, member: Member) -> dict[str, Any]:
        """The member's config as its stack file holds it (program/fleet_member.py), secrets as SecretLeaf."""
        record = fleet_member.FleetMember(
            self.plan.environment_stack, member.kind, member.name, member.index, self.plan.validated or None
        )
        return fleet_member.derive(self.env_file.config, record)

    def derive_coordinator(self) -> Path:
        # One directory per process: the Automation API rewrites the inline program's Pulumi.yaml in it, and
        # two rollouts started at once must not read each other's half-written file.
        work = self.root / self.coordinator_stack() / str(os.getpid())
        work.mkdir(parents=True, exist_ok=True)
        stack = self.coordinator_stack()
        rel = os.path.relpath(self.source, self.project_dir)
        doc = {**self.secrets_keys, "config": {}}
        _write(
            work / f"Pulumi.{stack}.yaml", HEADER.format(source=rel) + yaml.safe_dump(doc, sort_keys=False)
        )
        return work


def _shown(path: Path) -> str:
    """A path as a person would type it here: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(path.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)


# A file backend's checkpoint read while another process writes it (two rollouts started together).
_IN_FLUX = "failed to load checkpoint: EOF"


def _lease_stack_unavailable(message: str, e: Exception) -> StackUnavailable:
    """The coordination stack's failed command: StateInFlux when its state was being written, read again."""
    unavailable = StateInFlux if _IN_FLUX in str(e) else StackUnavailable
    return unavailable(f"{message}: {_error_lines(e)}")


def _error_lines(e: Exception, limit: int = 6) -> str:
    """The engine's error lines of a failed command (never its whole output: that may be long)."""
    text = str(e)
    lines = [
        ln.strip().removeprefix("stderr: ").removeprefix("stdout: ")
        for ln in text.splitlines()
        if _ERROR_LINE.match(ln) and "code:" not in ln
    ]
    lines += [ln.strip() for ln in text.splitlines() if ln.strip().startswith("- [mandatory]")]
    picked = [ln for ln in dict.fromkeys(lines) if ln and ln not in ("stderr:", "stdout:")][-limit:]
    if picked:
        return " | ".join(picked)[:800]
    rest = [ln.strip() for ln in text.splitlines() if ln.strip() not in ("", "stderr:", "stdout:")]
    return rest[-1][:300] if rest else type(e).__name__


def _lock_text(e: Exception) -> str:
    """A lock conflict's error lines and who holds the lock, when the backend says (`created by u@host (pid n)`)."""
    holders = re.findall(r"created by (\S+ \(pid \d+\)(?: at \S+)?)", str(e))
    held = f"; held by {', '.join(dict.fromkeys(holders))}" if holders else ""
    return _error_lines(e) + held


def _conflict(message: str, e: Exception) -> LockConflict:
    return LockConflict(message, progress.locks_in(str(e)))


@contextmanager
def _engine_refusals(name: str, failed: str) -> Iterator[None]:
    """The CLI's refusals as the rollout's: stack `name` locked by another update, or `failed` with its lines."""
    from pulumi import automation as auto

    try:
        yield
    except auto.ConcurrentUpdateError as e:
        raise _conflict(f"stack {name} is locked by another update ({_lock_text(e)})", e) from None
    except auto.CommandError as e:
        raise StackUnavailable(f"{failed}: {_error_lines(e)}") from None


def _select(name: str, create: bool, **kwargs: Any) -> Any:
    """The stack (created when missing and `create`; None when missing otherwise). Two rollouts creating it
    at once: the one that finds it created by the other selects it."""
    from pulumi import automation as auto

    try:
        return auto.select_stack(stack_name=name, **kwargs)
    except auto.StackNotFoundError:
        if not create:
            return None
    return _create_or_select(name, **kwargs)


def _create_or_select(name: str, **kwargs: Any) -> Any:
    """The stack created, or, when another process created it meanwhile, selected."""
    from pulumi import automation as auto

    try:
        return auto.create_stack(stack_name=name, **kwargs)
    except auto.StackAlreadyExistsError:
        return auto.select_stack(stack_name=name, **kwargs)
    except auto.CommandError as refused:
        # The other one may have created it and be updating it already: a local backend then refuses the
        # create with "the stack is currently locked" rather than "already exists". Selecting it settles which.
        try:
            return auto.select_stack(stack_name=name, **kwargs)
        except auto.CommandError:
            raise refused from None


class AutomationExecutor:
    """The rollout's Executor over the Pulumi Automation API."""

    def __init__(
        self,
        plan: Plan,
        project_dir: Path,
        *,
        work_root: Path | None = None,
        policy_config: Path | None = None,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.plan = plan
        self.workspaces = Workspaces(plan, project_dir, work_root)
        self.project_dir = self.workspaces.project_dir
        self.policy_config = policy_config
        self.log = log
        self._stacks: dict[str, Any] = {}
        self._configs: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._lease_lock = threading.Lock()
        self._command: Any = None

    # -- stacks -----------------------------------------------------------------------------------------------
    def command(self) -> Any:
        from pulumi import automation as auto

        with self._lock:
            if self._command is None:
                try:
                    self._command = auto.PulumiCommand()
                except (FileNotFoundError, OSError) as e:
                    raise StackUnavailable(
                        f"the Pulumi CLI could not be run ({e}); install it or put it on PATH"
                    ) from None
                except Exception as e:  # noqa: BLE001 - the SDK raises plain errors for a too old CLI
                    raise StackUnavailable(f"the Pulumi CLI cannot be used: {e}") from None
            return self._command

    def stack(self, member: Member, create: bool = True) -> Any:
        """The member's Automation API stack (created on first use when `create`); None when it does not
        exist and `create` is false."""
        from pulumi import automation as auto

        name = self.plan.qualified(member.stack)
        with self._lock:
            if name in self._stacks:
                return self._stacks[name]
        work = self.workspaces.derive(member)
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(work),
            secrets_provider=self.workspaces.secrets_provider,
            pulumi_command=self.command(),
        )
        try:
            stack = _select(name, create, work_dir=str(work), opts=opts)
        except auto.StackNotFoundError:
            return None
        except auto.ConcurrentUpdateError as e:
            raise _conflict(f"stack {name} is locked: {_lock_text(e)}", e) from None
        except auto.CommandError as e:
            raise StackUnavailable(
                f"stack {name} could not be selected or created: {_error_lines(e)}"
            ) from None
        if stack is None:
            return None
        with self._lock:
            self._stacks[name] = stack
        return stack

    def _policy_args(self, member: Member) -> dict[str, Any]:
        if not self.plan.policy_pack:
            return {}
        from mldiag.stacks import policy_config

        path = self.policy_config
        if path is None:
            try:
                config, _ = policy_config.effective(
                    self.plan.environment_stack,
                    stack_file=self.workspaces.source,
                    config_dir=self.project_dir / "policies" / "config",
                )
            except policy_config.PolicyConfigInputError as e:
                raise StackUnavailable(
                    f"the policy pack config of {self.plan.environment_stack}: {e}"
                ) from None
            path = self.workspaces.member_dir(member) / "policy-config.json"
            _write(path, json.dumps(config, indent=2) + "\n")
        return {"policy_packs": [str(self.project_dir / "policies")], "policy_pack_configs": [str(path)]}

    # -- Executor ----------------------------------------------------------------------------------------------
    def deploy(self, member: Member) -> None:
        from pulumi import automation as auto

        stack = self.stack(member)
        name = self.plan.qualified(member.stack)
        args = self._policy_args(member)
        message = f"mldiag fleet: {member.ref} at revision {member.revision}"
        for attempt in (1, 2):
            try:
                result = stack.up(color="never", message=message, suppress_progress=True, **args)
            except auto.ConcurrentUpdateError as e:
                raise _conflict(
                    f"stack {name} is locked by another update ({_lock_text(e)}); if none runs: `pulumi cancel -s {name}`",
                    e,
                ) from None
            except auto.CommandError as e:
                text = str(e)
                if "Updating (" not in text and "Previewing update" not in text:
                    raise StackUnavailable(f"stack {name} could not be updated: {_error_lines(e)}") from None
                raise DeployFailed(_error_lines(e)) from None
            pending = result.outputs.get("pendingSteps")
            if not (pending is not None and pending.value) or attempt == 2:
                return
            # manual -> managed takes two updates (README "Adoption, renames and deletion")
            self.log(f"{name}: pendingSteps {pending.value}: a second update")

    def member_config(self, member: Member) -> Any:
        """The member's validated config (its one target), with secrets as the Pulumi CLI decrypts them."""
        from pulumi import automation as auto

        from program.config import ConfigError, from_raw

        name = self.plan.qualified(member.stack)
        with self._lock:
            if name in self._configs:
                return self._configs[name]
        stack = self.stack(member, create=False)
        if stack is None:
            raise StackUnavailable(f"stack {name} does not exist (never updated)")
        try:
            values = stack.get_all_config()
        except auto.CommandError as e:
            raise StackUnavailable(f"the config of {name} could not be read: {_error_lines(e)}") from None
        raw = {k: v.value for k, v in values.items()}
        secret_keys = [k for k, v in values.items() if v.secret]
        try:
            cfg = from_raw(
                raw, secret_keys, name, self.workspaces.env_file.secret_paths, project_dir=self.project_dir
            )
        except ConfigError as e:
            raise StackUnavailable(f"the config of {name} is invalid: {e}") from None
        with self._lock:
            self._configs[name] = cfg
        return cfg

    def check(self, member: Member) -> Check:
        from mldiag.verify import report
        from mldiag.verify.cli import default_options, run_once
        from program.verify.result import Unreachable

        cfg = self.member_config(member)
        try:
            results = run_once(cfg, default_options())
        except Unreachable as e:
            return Check(False, unreachable=str(e))
        unreachable = "; ".join(f"{r.label}: {r.unreachable}" for r in results if r.unreachable)
        failing = [f"{r.label} {c.name}: {c.detail}" for r in results for c in r.failed]
        return Check(report.exit_code(results) == report.EXIT_OK, failing, unreachable)

    def read_record(self, member: Member) -> str | None:
        from pulumi import automation as auto

        stack = self.stack(member, create=False)
        if stack is None:
            return None
        try:
            tags = stack.list_tags()
        except auto.CommandError as e:
            raise StackUnavailable(
                f"the tags of {self.plan.qualified(member.stack)} could not be read: {_error_lines(e)}"
            ) from None
        value = tags.get(progress.TAG)
        return str(value) if value is not None else None

    def write_record(self, member: Member, text: str) -> None:

        stack = self.stack(member)
        name = self.plan.qualified(member.stack)
        with _engine_refusals(name, f"the progress tag of {name} could not be written"):
            stack.set_tag(progress.TAG, text)

    def _coordinator(self, program: Callable[[], None], create: bool) -> Any:
        """The coordination stack `<environment>.fleet` (an inline program; None when missing, unless `create`)."""
        from pulumi import automation as auto

        name = self.plan.qualified(self.workspaces.coordinator_stack())
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(self.workspaces.derive_coordinator()),
            secrets_provider=self.workspaces.secrets_provider,
            pulumi_command=self.command(),
            project_settings=auto.ProjectSettings(name=PROJECT, runtime="python"),
        )
        try:
            return _select(name, create, project_name=PROJECT, program=program, opts=opts)
        except auto.CommandError as e:
            raise _lease_stack_unavailable(f"the lease stack {name} could not be selected", e) from None

    def mark(self) -> dict[str, Any]:
        """What the coordination stack records for the environment's own program (program/fleet_member.py):
        the targets its member stacks deploy, and the fleet file that rolls them out."""
        return {
            "members": [m.ref for m in self.plan.members],
            "fleet": os.path.relpath(self.plan.fleet, self.project_dir),
        }

    def exclusive(self, decide: Callable[[Any], Any], mark: bool = False) -> Any:
        import pulumi
        from pulumi import automation as auto

        box: dict[str, Any] = {}
        written = self.mark() if mark else None

        def program() -> None:
            me = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"
            ref = pulumi.StackReference(me)

            def choose(existing: Any) -> Any:
                testhook.stop("lease")
                try:
                    box["lease"] = decide(existing)
                except progress.LeaseHeld as e:
                    box["held"] = e
                    raise
                return box["lease"]

            pulumi.export("lease", ref.get_output("lease").apply(choose))
            pulumi.export(
                fleet_member.MARK, written if written is not None else ref.get_output(fleet_member.MARK)
            )

        name = self.plan.qualified(self.workspaces.coordinator_stack())
        with self._lease_lock:
            try:
                stack = self._coordinator(program, create=True)
                stack.up(color="never", message="mldiag fleet: lease", suppress_progress=True)
            except auto.ConcurrentUpdateError as e:
                raise _conflict(f"stack {name} is locked by another update ({_lock_text(e)})", e) from None
            except auto.CommandError as e:
                if "held" in box:
                    raise box["held"] from None
                raise _lease_stack_unavailable(f"the lease stack {name} could not be updated", e) from None
        return box.get("lease")

    def _coordinator_outputs(self) -> dict[str, Any]:
        from pulumi import automation as auto

        stack = self._coordinator(lambda: None, create=False)
        if stack is None:
            return {}
        try:
            return {k: v.value for k, v in stack.outputs().items()}
        except auto.CommandError as e:
            name = self.plan.qualified(self.workspaces.coordinator_stack())
            raise StackUnavailable(f"the lease stack {name} could not be read: {_error_lines(e)}") from None

    def read_lease(self) -> Any:
        return self._coordinator_outputs().get("lease")

    def read_wave_mark(self, number: int) -> str | None:
        from pulumi import automation as auto

        stack = self._coordinator(lambda: None, create=False)
        if stack is None:
            return None
        try:
            value = stack.list_tags().get(progress.wave_tag(number))
        except auto.CommandError as e:
            raise StackUnavailable(f"the tags of {stack.name} could not be read: {_error_lines(e)}") from None
        return str(value) if value is not None else None

    def write_wave_mark(self, number: int, text: str) -> None:
        from pulumi import automation as auto

        stack = self._coordinator(lambda: None, create=True)
        try:
            stack.set_tag(progress.wave_tag(number), text)
        except auto.CommandError as e:
            raise StackUnavailable(
                f"the tags of {stack.name} could not be written: {_error_lines(e)}"
            ) from None

    def is_marked(self) -> bool:
        found = self._coordinator_outputs().get(fleet_member.MARK)
        return isinstance(found, dict) and found.get("members") == self.mark()["members"]

    def cancel(self, member: Member | None) -> None:
        stack = self.stack(member, create=False) if member else self._coordinator(lambda: None, create=False)
        if stack is not None:
            self.cancel_stack(stack)

    def cancel_stack(self, stack: Any) -> None:
        """`pulumi cancel`: removes the stack's lock (a caller has found its holder gone)."""
        from pulumi import automation as auto

        try:
            stack.cancel()
        except auto.CommandError as e:
            text = str(e).lower()
            if "no update" in text or "not currently running" in text or "not locked" in text:
                return
            raise StackUnavailable(
                f"the lock of stack {stack.name} could not be removed: {_error_lines(e)}"
            ) from None

    # -- an interrupted update ----------------------------------------------------------------------------------
    def reconcile(self, member: Member, since: float | None) -> list[str]:
        stack = self.stack(member, create=False)
        return [] if stack is None else self.reconcile_stack(stack, since)

    def reconcile_stack(self, stack: Any, since: float | None, probe: bool = False) -> list[str]:
        """Settles the pending operations of `stack` against their clusters (mldiag/fleet/recovery.py)."""
        from pulumi import automation as auto

        try:
            deployment = stack.export_stack().deployment or {}
        except auto.CommandError as e:
            raise StackUnavailable(
                f"the state of {stack.name} could not be read: {_error_lines(e)}"
            ) from None
        pending = recovery.pending_operations(deployment)
        if not pending and not probe:
            return []
        root = next(
            (str(r["urn"]) for r in deployment.get("resources") or [] if r.get("type") == STACK_TYPE), None
        )
        # a lock is found before anything is changed: a refresh of the stack resource alone takes it (and
        # keeps the pending creates); LockConflict tells the caller whose it is
        if root is not None:
            self._refresh_root(stack, root, clear=False)
        if not pending:
            return []
        known = {str(r.get("urn")) for r in deployment.get("resources") or []}
        clusters: dict[str, recovery.KubeCluster] = {}

        def cluster_of(p: recovery.Pending) -> recovery.Cluster:
            if p.provider not in clusters:
                clusters[p.provider] = recovery.KubeCluster(*recovery.provider_access(deployment, p.provider))
            return clusters[p.provider]

        try:
            steps = recovery.plan(pending, cluster_of, since, known)
            for step in steps:
                for secret in step.records:
                    cluster_of(step.pending).delete_record(step.namespace, secret)
        except recovery.ClusterUnreachable as e:
            raise DeployFailed(
                f"what its interrupted update left could not be settled, the cluster is unreachable: {e}"
            ) from None
        finally:
            for c in clusters.values():
                c.close()
        resources, names = recovery.imports(steps)
        if resources:
            with _engine_refusals(stack.name, f"the interrupted update of {stack.name} could not be settled"):
                stack.import_resources(
                    message="mldiag fleet: what an interrupted update created",
                    resources=resources,
                    name_table=names,
                    protect=False,
                    generate_code=False,
                )
        if resources and (settled := recovery.as_if_created(self.export_state(stack), steps)) is not None:
            self.import_state(stack, settled)
        self._refresh_root(stack, root, clear=True)
        return [s.say() for s in steps] + [f"cleared {len(pending)} pending operation(s) from its state"]

    def _refresh_root(self, stack: Any, root: str | None, clear: bool) -> None:
        """A refresh of the stack resource alone (of nothing when the state has none)."""
        from pulumi import automation as auto

        try:
            stack.refresh(
                message="mldiag fleet: "
                + ("clear an interrupted update's pending operations" if clear else "lock check"),
                target=[root] if root else None,
                clear_pending_creates=clear or None,
                color="never",
                suppress_progress=True,
            )
        except auto.ConcurrentUpdateError as e:
            raise _conflict(f"stack {stack.name} is locked by another update ({_lock_text(e)})", e) from None
        except auto.CommandError as e:
            raise StackUnavailable(f"stack {stack.name} could not be refreshed: {_error_lines(e)}") from None

    # -- state, previews (fleet adopt) ------------------------------------------------------------------------------
    def _cli(self, stack: Any, *args: str) -> str:
        from pulumi import automation as auto

        ws = stack.workspace
        try:
            return str(
                ws.pulumi_command.run(
                    [*args, "--stack", stack.name, "--non-interactive"], ws.work_dir, dict(ws.env_vars or {})
                ).stdout
            )
        except auto.CommandError as e:
            raise StackUnavailable(
                f"`pulumi {args[0]} {args[1]}` of {stack.name} failed: {_error_lines(e)}"
            ) from None

    def export_state(self, stack: Any) -> dict[str, Any]:
        """The stack's deployment with its secrets as ciphertext (`pulumi stack export`)."""
        return dict(json.loads(self._cli(stack, "stack", "export")).get("deployment") or {})

    def import_state(self, stack: Any, deployment: dict[str, Any]) -> None:
        """`pulumi stack import` of a deployment (its secrets ciphertext of the stacks' shared provider)."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="mldiag-fleet-") as tmp:
            path = Path(tmp) / "deployment.json"
            path.write_text(json.dumps({"version": 3, "deployment": deployment}))
            self._cli(stack, "stack", "import", "--file", str(path))

    def outputs(self, stack: Any) -> dict[str, Any]:
        from pulumi import automation as auto

        try:
            return {k: v.value for k, v in stack.outputs().items()}
        except auto.CommandError as e:
            raise StackUnavailable(
                f"the outputs of {stack.name} could not be read: {_error_lines(e)}"
            ) from None

    def preview_changes(self, stack: Any) -> dict[str, int]:
        """What `pulumi preview` of the stack would do, by operation (empty: no change)."""
        from pulumi import automation as auto

        try:
            result = stack.preview(color="never", suppress_progress=True)
        except auto.CommandError as e:
            raise StackUnavailable(f"the preview of {stack.name} failed: {_error_lines(e)}") from None
        return {str(op): int(n) for op, n in (result.change_summary or {}).items() if str(op) != "same" and n}

    # -- one way per environment ----------------------------------------------------------------------------------
    def environment_stack(self) -> Any:
        """The environment stack itself (None when it does not exist)."""
        from pulumi import automation as auto

        name = self.plan.qualified(self.plan.environment_stack)
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(self.project_dir),
            secrets_provider=self.workspaces.secrets_provider,
            pulumi_command=self.command(),
        )
        try:
            return _select(name, False, work_dir=str(self.project_dir), opts=opts)
        except auto.CommandError as e:
            raise StackUnavailable(f"stack {name} could not be selected: {_error_lines(e)}") from None

    def environment_resources(self) -> list[dict[str, Any]]:
        """What the environment stack itself manages: its resources but the stack, its providers and reads."""
        stack = self.environment_stack()
        if stack is None:
            return []
        deployment = self.export_state(stack)
        return [
            r
            for r in deployment.get("resources") or []
            if r.get("type") != STACK_TYPE
            and not str(r.get("type", "")).startswith("pulumi:providers:")
            and r.get("type") != "pulumi:pulumi:StackReference"
        ]

    def check_one_way(self) -> None:
        own = self.environment_resources()
        if own:
            env = self.plan.environment_stack
            fleet = _shown(self.plan.fleet)
            raise OtherWay(
                f"environment {env} is deployed by its own stack ({len(own)} resource(s) in stack {env}: `pulumi "
                f"up -s {env}`); member stacks would manage the same clusters a second time. Keep deploying it "
                f"with `pulumi up -s {env}`, or move it onto member stacks: `mldiag fleet adopt {fleet}`"
            )

    # -- drift ------------------------------------------------------------------------------------------------
    def refresh_preview(self, member: Member) -> dict[str, Any]:
        """`pulumi refresh --preview-only` of the member: {"changes": {op: n}, "resources": [...]}."""
        from pulumi import automation as auto

        name = self.plan.qualified(member.stack)
        stack = self.stack(member, create=False)
        if stack is None:
            raise StackUnavailable(f"stack {name} does not exist (never updated)")
        resources: list[dict[str, Any]] = []
        lock = threading.Lock()

        def on_event(event: Any) -> None:
            # A refresh step's outcome (its op: same, update, delete) and what differs come after the step.
            done = getattr(event, "res_outputs_event", None)
            if done is None or done.metadata is None:
                return
            meta = done.metadata
            op = str(getattr(meta.op, "value", meta.op))
            if op in ("same", "read", "refresh"):
                return
            diffs = sorted(meta.detailed_diff or {}) or list(meta.diffs or [])
            with lock:
                resources.append({"urn": meta.urn, "type": meta.type, "op": op, "diffs": diffs})

        try:
            result = stack.preview_refresh(color="never", on_event=on_event, suppress_progress=True)
        except auto.ConcurrentUpdateError as e:
            raise LockConflict(f"stack {name} is locked by another update ({_lock_text(e)})") from None
        except auto.CommandError as e:
            raise StackUnavailable(f"stack {name} could not be refreshed: {_error_lines(e)}") from None
        changes = {
            str(op): int(n) for op, n in (result.change_summary or {}).items() if str(op) != "same" and n
        }
        return {"changes": changes, "resources": resources}
