"""`mldiag fleet`: rollouts in waves across the clusters of an environment (docs/fleet.md).

    mldiag fleet plan FLEET [--format table|json|markdown|mermaid|dot]
    mldiag fleet run FLEET [--approve WAVE ...] [--take-over] [--cluster TARGET] [--format ...] [--output FILE]
    mldiag fleet gate FLEET --wave WAVE [--approve] [--max-wait DURATION]
    mldiag fleet status FLEET [--format table|json|markdown|mermaid|dot]
    mldiag fleet drift FLEET [--format table|json|markdown] [--parallel N]
    mldiag fleet adopt FLEET [--take-over]
    mldiag fleet recover FLEET [--take-over]
    mldiag fleet workflow (--write | --check)
    mldiag fleet pko FLEET (--output DIR [--check] | --format mermaid) [--repo URL] [--commit SHA | --branch NAME] [...]

FLEET is a fleet file (fleet/prod.yaml). `plan` is offline: which clusters run in which wave, behind which
gate. `run` rolls out through the Pulumi Automation API, one per-cluster stack each (`<env>.<kind>-<target>`),
and resumes a stopped rollout; `--cluster` runs one cluster (the GitHub workflow's legs) and `gate` one
wave's gate. `status` reads the progress recorded in the stacks; `drift` runs `pulumi refresh --preview-only`
on every member stack. `adopt` moves an environment deployed by its own stack (`pulumi up -s <env>`) onto its
member stacks; `recover` settles what a killed `pulumi up -s <env>` left in the environment stack (a rollout
settles its member stacks by itself). `workflow` writes (or checks) the GitHub workflows generated from
fleet/*.yaml; `pko` writes (or checks) the fleet as the Pulumi Kubernetes Operator's Stack objects, each wave's
gate a stack of the program in gate mode (docs/fleet.md, "On Kubernetes").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mldiag.common import ROOT
from mldiag.exit_codes import help_table
from mldiag.fleet import cli_engines as engines
from mldiag.fleet.model import DURATION_RULE, FleetError, parse_duration
from mldiag.fleet.planner import EnvironmentError, Plan
from mldiag.fleet.rollout import EXIT_GATE, EXIT_INVALID, EXIT_OK, EXIT_STACK

FORMATS = ("table", "json", "markdown")
PICTURES = ("mermaid", "dot")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mldiag fleet",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.epilog = __doc__.split("\n\n", 1)[1] + "\n" + help_table("fleet")
    sub = p.add_subparsers(
        dest="command", required=True, metavar="plan|run|gate|status|drift|adopt|recover|workflow|pko"
    )

    def common(sp: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
        sp.add_argument("fleet", type=Path, help="the fleet file, e.g. fleet/prod.yaml")
        sp.add_argument("--format", choices=formats, default="table")
        sp.add_argument("--output", type=Path, help="write the report here instead of stdout")
        sp.add_argument(
            "--project-dir", type=Path, default=ROOT, help="the project (Pulumi.yaml, stacks/, the program)"
        )
        sp.add_argument(
            "--work-dir", type=Path, help="where the member stacks' workspaces go (default .fleet-work/)"
        )

    common(sub.add_parser("plan", help="the waves, clusters and gates (offline)"), FORMATS + PICTURES)
    run = sub.add_parser("run", help="roll out, or resume a stopped rollout")
    common(run, FORMATS)
    run.add_argument(
        "--approve", action="append", default=[], metavar="WAVE", help="approve this wave's gate"
    )
    run.add_argument("--take-over", action="store_true", help="take the lease of a rollout that is gone")
    run.add_argument(
        "--cluster",
        metavar="TARGET",
        help="only this cluster (name or kind/name), once earlier waves are complete",
    )
    run.add_argument(
        "--policy-pack-config", type=Path, help="the policy pack config instead of the environment's"
    )
    gate = sub.add_parser("gate", help="one wave's gate: tolerance, soak, verify again, approval")
    common(gate, FORMATS)
    gate.add_argument("--wave", required=True)
    gate.add_argument("--approve", action="store_true", help="record the wave's approval")
    gate.add_argument(
        "--max-wait",
        metavar="DURATION",
        help="the longest the soak is waited out here (a CI job's time, e.g. 4h30m); a longer one stops the gate "
        "(exit 1), saying when the soak ends",
    )
    common(sub.add_parser("status", help="where each cluster is, from the stacks' tags"), FORMATS + PICTURES)
    drift = sub.add_parser("drift", help="pulumi refresh --preview-only of every member stack")
    common(drift, FORMATS)
    drift.add_argument("--parallel", type=int, default=4, help="stacks refreshed at once (default 4)")
    adopt = sub.add_parser(
        "adopt", help="move an environment deployed by `pulumi up -s <env>` onto member stacks"
    )
    common(adopt, ("table", "json"))
    adopt.add_argument("--take-over", action="store_true", help="take the lease of a rollout that is gone")
    recover = sub.add_parser(
        "recover", help="settle what a killed `pulumi up -s <env>` left in the environment stack"
    )
    common(recover, ("table", "json"))
    recover.add_argument(
        "--take-over", action="store_true", help="clear a lock of another host: that update is gone"
    )
    wf = sub.add_parser("workflow", help="the generated GitHub workflows")
    mode = wf.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    wf.add_argument("--project-dir", type=Path, default=ROOT, help=argparse.SUPPRESS)
    engines.pko_parser(sub)
    return p


def _emit(text: str, output: Path | None) -> None:
    if output:
        output.write_text(text)
    else:
        sys.stdout.write(text)


def _err(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def load_plan(args: argparse.Namespace) -> Plan:
    from mldiag.fleet.planner import load, settle

    fleet = args.fleet if args.fleet.is_absolute() else Path.cwd() / args.fleet
    plan = load(fleet, args.project_dir.resolve())
    settle()
    return plan


def _executor(plan: Plan, args: argparse.Namespace) -> Any:
    from mldiag.fleet.executor import AutomationExecutor

    return AutomationExecutor(
        plan,
        args.project_dir,
        work_root=args.work_dir,
        # absolute: the CLI runs in each member's work directory
        policy_config=args.policy_pack_config.resolve()
        if getattr(args, "policy_pack_config", None)
        else None,
        log=_log,
    )


class _BadArgument(Exception):
    pass


def _member(plan: Plan, ref: str) -> Any:
    from ml_diagnostics.rules.names import closest

    found = [m for m in plan.members if ref in (m.ref, m.name, m.stack)]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise _BadArgument(f"--cluster: {ref!r} is ambiguous: {', '.join(m.ref for m in found)}")
    refs = [m.ref for m in plan.members]
    hint = closest(ref, refs + [m.name for m in plan.members])
    mean = f" (did you mean {hint!r}?)" if hint else ""
    raise _BadArgument(f"--cluster: no cluster {ref!r} in this fleet{mean}; clusters: {', '.join(refs)}")


def _approver(wave: Any) -> bool:
    if not sys.stdin.isatty():
        return False
    print(
        f"wave {wave.name} passed its gate ({wave.describe_gate()}). Approve the next wave? [y/N] ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _status(plan: Plan, executor: Any) -> tuple[int, list[Any], dict[str, str]]:
    from concurrent.futures import ThreadPoolExecutor

    from mldiag.fleet import progress
    from mldiag.fleet.report import MemberStatus, member_state
    from mldiag.fleet.rollout import Rollout, StackUnavailable

    waves_of = {m: w.name for w in plan.waves for m in w.members}

    def one(m: Any) -> MemberStatus:
        try:
            rec = progress.Record.decode(executor.read_record(m))
        except StackUnavailable as e:
            return MemberStatus(m, waves_of[m], "unreadable", None, str(e))
        return MemberStatus(m, waves_of[m], member_state(rec, m.revision), rec)

    with ThreadPoolExecutor(max_workers=4) as pool:
        statuses = list(pool.map(one, plan.members))
    rollout = Rollout(plan, executor)
    by_member = {s.member: s for s in statuses}
    code = EXIT_OK
    waves: dict[str, str] = {}
    blocked = False
    for w in plan.waves:
        recs = {m: progress.current(by_member[m].record, m.revision) for m in w.members}
        failed = sum(1 for r in recs.values() if r is not None and r.state == "failed")
        if any(by_member[m].state == "unreadable" for m in w.members):
            waves[w.name], code = "unreadable", EXIT_STACK
        elif blocked:
            waves[w.name] = "not started" if all(r is None for r in recs.values()) else "waiting"
        elif rollout.complete(w, recs):
            waves[w.name] = "complete"
        elif failed > w.tolerance:
            waves[w.name], blocked = "failed its gate", True
            code = max(code, EXIT_GATE) if code != EXIT_STACK else code
        else:
            waves[w.name] = "not started" if all(r is None for r in recs.values()) else "in progress"
            blocked = True
    return code, statuses, waves


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "workflow":
        return engines.run_workflow(args)
    if args.command == "pko":
        return engines.run_pko(args)
    try:
        plan = load_plan(args)
    except (FleetError, EnvironmentError) as e:
        _err(str(e))
        return EXIT_INVALID
    from mldiag.fleet import picture, report

    if args.command == "plan":
        if args.format in PICTURES:
            _emit(picture.mermaid(plan) if args.format == "mermaid" else picture.dot(plan), args.output)
        else:
            _emit(report.plan_text(plan, args.format), args.output)
        return EXIT_OK
    pack_config = getattr(args, "policy_pack_config", None)
    if pack_config is not None and not pack_config.is_file():
        _err(f"--policy-pack-config: {pack_config} is not a file (a policy pack config, JSON)")
        return EXIT_INVALID
    try:
        executor = _executor(plan, args)
    except EnvironmentError as e:
        _err(str(e))
        return EXIT_INVALID
    if args.command == "drift":
        from mldiag.fleet import drift

        if args.parallel < 1:
            _err("--parallel must be at least 1")
            return EXIT_INVALID
        results = drift.run(plan, executor, args.parallel)
        _emit(drift.render(plan, results, args.format), args.output)
        return drift.exit_code(results)
    if args.command == "adopt":
        return _adopt(plan, executor, args)
    if args.command == "recover":
        return _recover(plan, executor, args)
    if args.command == "status":
        code, statuses, waves = _status(plan, executor)
        if args.format in PICTURES:
            states = {s.member.stack: s.state for s in statuses}
            _emit(
                picture.mermaid(plan, states) if args.format == "mermaid" else picture.dot(plan, states),
                args.output,
            )
        else:
            _emit(report.status_text(plan, statuses, waves, args.format), args.output)
        return code
    from mldiag.fleet.planner import settle
    from mldiag.fleet.rollout import Options, Rollout

    if args.command == "gate":
        wave = next((w for w in plan.waves if w.name == args.wave), None)
        if wave is None:
            _err(f"--wave: no wave {args.wave!r}; waves: {', '.join(w.name for w in plan.waves)}")
            return EXIT_INVALID
        max_wait = None
        if args.max_wait is not None:
            max_wait = parse_duration(args.max_wait)
            if max_wait is None:
                _err(f"--max-wait: {args.max_wait!r} is not {DURATION_RULE}")
                return EXIT_INVALID
        options = Options(max_wait=max_wait)
        result = Rollout(plan, executor, options=options, log=_log).run_gate(wave, approve=args.approve)
        if result.waves and result.waves[0].status == "soaking":
            from mldiag.fleet.workflow import soak_environment

            result.message += (
                f" (on GitHub Actions the soak waits in the environment {soak_environment(plan.environment_stack, wave)}: "
                f"give it a wait timer of {wave.soak // 60} minutes, docs/fleet.md)"
            )
    else:
        unknown = [w for w in args.approve if w not in {x.name for x in plan.waves}]
        if unknown:
            _err(f"--approve: no wave {unknown[0]!r}; waves: {', '.join(w.name for w in plan.waves)}")
            return EXIT_INVALID
        options = Options(
            approve=frozenset(args.approve), approver=_approver, take_over=args.take_over, after_wave=settle
        )
        rollout = Rollout(plan, executor, options=options, log=_log)
        if args.cluster:
            try:
                member = _member(plan, args.cluster)
            except _BadArgument as e:
                _err(str(e))
                return EXIT_INVALID
            result = rollout.run_one(member)
        else:
            result = rollout.run()
    _emit(report.run_text(result, args.format), args.output)
    if result.exit_code != EXIT_OK:
        _err(result.message)
    return int(result.exit_code)


def _outcome(args: argparse.Namespace, code: int, message: str, lines: list[str]) -> int:
    import json

    if args.format == "json":
        _emit(
            json.dumps({"exitCode": int(code), "message": message, "done": lines}, indent=2) + "\n",
            args.output,
        )
    else:
        _emit("".join(f"{line}\n" for line in lines) + f"exit {int(code)}: {message}\n", args.output)
    if code != EXIT_OK:
        _err(message)
    return int(code)


def _adopt(plan: Plan, executor: Any, args: argparse.Namespace) -> int:
    from mldiag.fleet import adopt
    from mldiag.fleet.progress import LeaseHeld
    from mldiag.fleet.rollout import LEASE_TTL, Lease, LockConflict, StackUnavailable, SystemClock

    lease = Lease(executor, SystemClock(), LEASE_TTL, args.take_over, _log)
    try:
        lines = adopt.run(plan, executor, lease, _log)
    except adopt.AdoptRefused as e:
        return _outcome(args, EXIT_INVALID, f"{e}; nothing was moved", [])
    except (LeaseHeld, LockConflict, StackUnavailable) as e:
        return _outcome(args, EXIT_STACK, str(e), [])
    changed = [line for line in lines if not line.endswith("no changes")]
    if changed:
        return _outcome(
            args,
            EXIT_GATE,
            f"moved onto {len(lines)} member stack(s); {len(changed)} preview(s) show changes: check them before "
            f"`mldiag fleet run {args.fleet}`",
            lines,
        )
    return _outcome(
        args,
        EXIT_OK,
        f"moved onto {len(lines)} member stack(s), nothing to change; roll it out with `mldiag fleet run "
        f"{args.fleet}` from now on (`pulumi up -s {plan.environment_stack}` refuses)",
        lines,
    )


def _recover(plan: Plan, executor: Any, args: argparse.Namespace) -> int:
    from mldiag.fleet import progress
    from mldiag.fleet.recovery import RecoveryRefused
    from mldiag.fleet.rollout import DeployFailed, LockConflict, StackUnavailable

    env = plan.environment_stack
    try:
        stack = executor.environment_stack()
        if stack is None:
            return _outcome(args, EXIT_OK, f"stack {env} does not exist: nothing to recover", [])
        cleared: set[Any] = set()
        lines: list[str] = []
        since: float | None = None
        while True:
            try:
                lines += executor.reconcile_stack(stack, since, probe=True)
                break
            except LockConflict as e:
                gone = [lock for lock in e.locks if args.take_over or progress.gone_here(lock.host, lock.pid)]
                if not e.locks or len(gone) < len(e.locks) or cleared.issuperset(e.locks):
                    raise
                executor.cancel_stack(stack)
                cleared |= set(e.locks)
                stamps = [lock.since for lock in e.locks if lock.since is not None]
                since = min(stamps) if stamps else None
                why = "--take-over" if args.take_over else "its process is gone from this host"
                lines += [f"cleared the lock of {lock.text()}: {why}" for lock in e.locks]
    except LockConflict as e:
        return _outcome(
            args,
            EXIT_STACK,
            f"{e}: an update of {env} may still run; if it is gone, rerun with --take-over (or `pulumi cancel -s "
            f"{env}`)",
            [],
        )
    except (RecoveryRefused, StackUnavailable, DeployFailed) as e:
        return _outcome(args, EXIT_STACK, str(e), [])
    if not lines:
        return _outcome(args, EXIT_OK, f"stack {env}: no lock, nothing pending: nothing to recover", [])
    return _outcome(args, EXIT_OK, f"stack {env} settled: `pulumi up -s {env}` can run", lines)
