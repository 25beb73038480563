"""Read-only post-deploy checks of every target of a stack.

    mldiag verify STACK [--config-file FILE | --pulumi-stack ORG/ml-diagnostics/STACK]
    mldiag verify --stack ORG/PROJECT/STACK [--project DIR]
                  [--format table|json|markdown] [--output FILE]
                  [--wait SECONDS] [--interval SECONDS] [--log-lines N] [--all-logs] [--arm-endpoint URL]

STACK reads this program's stack file (its passphrase secrets decrypted offline with PULUMI_CONFIG_PASSPHRASE
or PULUMI_CONFIG_PASSPHRASE_FILE, as `mldiag secrets` does; other secrets providers: --pulumi-stack); --stack
reads any stack's state (any program, any language that uses the components: program/verify_stack.py). Both
run the same checks. It never changes anything and never prints a secret.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mldiag import esc
from mldiag.common import command_parser
from mldiag.stacks.secrets import PULUMI_STACK
from mldiag.verify import report
from mldiag.verify.report import TargetResult, Unreachable
from program.clock import Clock, MonotonicClock
from program.config import ConfigError, StackConfig
from program.kinds.context import ENCRYPTED_HINT
from program.verify_stack import cloud_options, default_options

ROOT = Path(__file__).resolve().parents[2]


class StackConfigUnavailable(Exception):
    """The stack's config cannot be read (missing file, the Pulumi CLI failed)."""


def read_config(
    stack: str,
    config_file: Path | None,
    pulumi_stack: str | None,
    project: Path | None = None,
    esc_values: Sequence[Path] = (),
) -> tuple[StackConfig, tuple[str, ...], str]:
    """The stack config (`program.config.from_raw`, the program's one route), from the stack file or the
    Pulumi CLI; the ESC environments it imports that were not supplied; and how a secret left encrypted
    gets decrypted (the reason a kind's check gives when it needs one).

    From the stack file, `secure:` values are decrypted as `mldiag secrets` does when the stack is on the
    passphrase secrets provider and PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) is set; else
    they become placeholders (secrets are not needed to verify, except a kubeconfig). With `pulumi_stack`, the
    Pulumi CLI reads the stack's config with its secrets decrypted (`pulumi config --json --show-secrets`);
    the values stay in memory, and the CLI opens the stack's ESC environments itself. From the stack file
    they come from `esc_values` (mldiag/esc.py).
    """
    from mldiag.common import PROJECT
    from mldiag.stacks.secrets import SecretInputError, offline_plaintext
    from program import config as stack_config
    from program import stack_file

    if pulumi_stack:
        raw, secret_keys = pulumi_cli_config(pulumi_stack, project or ROOT)
        return stack_config.from_raw(raw, list(secret_keys), stack), (), PULUMI_STACK
    path = config_file or ROOT / "stacks" / f"Pulumi.{stack}.yaml"
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    try:
        read = stack_config.read_stack_file(path)
        plaintext, hint = offline_plaintext(read, str(shown))
        raw = stack_file.offline_values(read, path, plaintext)
        raw, secret_keys = esc.supply(
            str(path), raw, read.secret_keys, read.environments, esc_values, PROJECT
        )
    except (stack_file.StackFileError, esc.EscValuesError, SecretInputError) as e:
        raise StackConfigUnavailable(str(e)) from None
    cfg = stack_config.from_raw(
        raw, secret_keys, stack, secret_paths=read.secret_paths if plaintext else None
    )
    return cfg, (() if esc_values else read.environments), hint


def pulumi_cli_config(pulumi_stack: str, project: Path = ROOT) -> tuple[dict[str, Any], list[str]]:
    cmd = ["pulumi", "config", "--json", "--show-secrets", "--stack", pulumi_stack]
    try:
        run = subprocess.run(
            cmd, cwd=project, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise StackConfigUnavailable(
            "--pulumi-stack needs the Pulumi CLI on PATH (`pulumi login` done)"
        ) from None
    except subprocess.TimeoutExpired:
        raise StackConfigUnavailable(f"`{' '.join(cmd)}` did not answer within 300 s") from None
    if run.returncode != 0:  # stderr only: stdout would carry decrypted values
        raise StackConfigUnavailable(f"`{' '.join(cmd)}` failed: {run.stderr.strip()[:500]}")
    try:
        entries = json.loads(run.stdout)
    except ValueError:
        raise StackConfigUnavailable(f"`{' '.join(cmd)}` did not print JSON") from None
    raw = {k: e["objectValue"] if "objectValue" in e else e.get("value") for k, e in entries.items()}
    return raw, [k for k, e in entries.items() if e.get("secret")]


class Options(argparse.Namespace):
    stack: str | None
    state_stack: str | None
    config_file: Path | None
    pulumi_stack: str | None
    project: Path | None
    format: str
    output: Path | None
    wait: float
    interval: float
    log_lines: int
    esc_values: list[Path]
    all_logs: bool


def run_once(cfg: StackConfig, options: dict[str, Any]) -> list[TargetResult]:
    """Every target's checks, kind by kind in the table's order; an unreachable target is reported, not raised."""
    from program.kinds.context import VerifyContext
    from program.kinds.table import KINDS

    ctx = VerifyContext(cfg, options=options)
    results: list[TargetResult] = []
    for kind in KINDS:
        check = kind.verify.load()
        for target in cfg.targets(kind):
            result = TargetResult(kind.key, target.name)
            results.append(result)
            try:
                check(target, ctx, result)
            except Unreachable as e:
                result.unreachable = str(e)
    return results


def parser() -> argparse.ArgumentParser:
    p = command_parser("verify", __doc__)
    p.add_argument("stack", nargs="?", help="stack name: reads stacks/Pulumi.STACK.yaml")
    p.add_argument(
        "--stack",
        dest="state_stack",
        metavar="ORG/PROJECT/STACK",
        help="verify from the stack's state instead: every ml-diagnostics component in it, from any program",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--config-file", type=Path, help="stack config file instead of stacks/Pulumi.STACK.yaml")
    src.add_argument(
        "--pulumi-stack",
        metavar="ORG/PROJECT/STACK",
        help="read the config through the Pulumi CLI with secrets decrypted (needed for a secret kubeconfig)",
    )
    p.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        help="the Pulumi project whose stack --pulumi-stack or --stack reads (default: this repository; --stack: "
        "the current directory)",
    )
    esc.add_argument(p)
    p.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    p.add_argument("--output", type=Path, help="write the report to this file instead of stdout")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS", help="poll until every check passes")
    p.add_argument("--interval", type=float, default=10.0, metavar="SECONDS", help="pause between polls")
    p.add_argument("--log-lines", type=int, default=500, help="recent log lines read per Diagon pod")
    p.add_argument(
        "--all-logs",
        action="store_true",
        help="read every Diagon pod's log (default: a sample of the ready pods and every pod not ready)",
    )
    for option in cloud_options():
        p.add_argument(option.flag, dest=option.dest, default=option.default, help=option.help)
    return p


def parse_args(argv: list[str] | None) -> Options:
    p = parser()
    opts = p.parse_args(argv, namespace=Options())
    if (opts.stack is None) == (opts.state_stack is None):
        p.error("give a stack name (its stack file) or --stack ORG/PROJECT/STACK (its state), one of them")
    if opts.state_stack is not None and (opts.config_file or opts.pulumi_stack):
        p.error(
            "--stack reads the stack's state: --config-file and --pulumi-stack read a stack file's config"
        )
    if opts.esc_values and (opts.state_stack is not None or opts.pulumi_stack):
        p.error("--esc-values supplies a stack file's ESC environments: --stack and --pulumi-stack need none")
    return opts


def checks_of(opts: Options) -> tuple[Callable[[dict[str, Any]], list[TargetResult]], tuple[str, ...]]:
    """One verification pass with the given options: of the config, or of the state (read once here); and
    the stack file's ESC environments left unopened."""
    if opts.state_stack is not None:
        from program import verify_stack as state

        deployment = state.export(opts.state_stack, opts.project or Path.cwd())
        found = state.targets(state.resources(deployment))
        if not found:
            raise state.StateUnavailable(
                f"stack {opts.state_stack} holds no ml-diagnostics component ({state.TOKEN}*)"
            )
        return (lambda options: state.run_once(found, options)), ()
    cfg, unopened, hint = read_config(
        opts.stack or "", opts.config_file, opts.pulumi_stack, opts.project, opts.esc_values
    )
    return (lambda options: run_once(cfg, {**options, ENCRYPTED_HINT: hint})), unopened


def main(argv: list[str] | None = None, clock: Clock | None = None) -> int:
    """`clock` paces --wait (tests pass a simulated one, so no outcome depends on how long a pass takes)."""
    from program.verify_stack import StateUnavailable

    clock = clock or MonotonicClock()

    opts = parse_args(argv)
    try:
        passes, unopened = checks_of(opts)
    except (ConfigError, StackConfigUnavailable, StateUnavailable) as e:
        print(f"error: {e}", file=sys.stderr)
        return report.EXIT_CONFIG
    start = clock.now()
    while True:
        results = passes(
            {**default_options(), **{k: v for k, v in vars(opts).items() if k in default_options()}}
        )
        code = report.exit_code(results)
        left = opts.wait - (clock.now() - start)
        if code == report.EXIT_OK or left <= 0:
            break
        failing = [f"{r.label} {c.name}" for r in results for c in r.failed]
        failing += [f"{r.label} unreachable" for r in results if r.unreachable]
        print(
            f"[verify {clock.now() - start:5.0f}s] waiting ({left:.0f}s left): {', '.join(failing)}",
            file=sys.stderr,
            flush=True,
        )
        clock.sleep(min(opts.interval, left))
    text = report.render(opts.state_stack or opts.stack or "", results, opts.format, unopened)
    if opts.output:
        opts.output.write_text(text)
    else:
        sys.stdout.write(text)
    return report.final_code(results, unopened)
