"""Offline plan: run a stack with no cloud, no credentials and no Pulumi CLI, then its policy pack.

    mldiag plan STACK [--config-file FILE] [--policy-config FILE] [--esc-values FILE]
                      [--format table|json|markdown|dot] [--out DIR] [--diff-base GITREF]
    mldiag plan --from-json FILE [--format ...]     (render a saved plan or diff JSON)

It is a review and CI tool; where the Pulumi CLI and credentials exist, `pulumi preview` is the authority.
Exit codes: mldiag/exit_codes.py (4: the stack imports Pulumi ESC environments whose values were not
supplied, mldiag/esc.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import pulumi

from mldiag import esc
from mldiag.common import EXIT_ERROR, EXIT_INCOMPLETE, EXIT_MANDATORY, EXIT_OK, PROJECT, ROOT, command_parser
from mldiag.engine import runtime as plan_runtime
from mldiag.engine.analyzer import PolicyConfigError, Violation, load_pack_config, run_policies
from mldiag.engine.runtime import PlanResult, RecordedResource, run_config
from mldiag.exit_codes import worst
from mldiag.report import render as plan_render
from mldiag.stacks.policy_config import PolicyConfigInputError
from mldiag.stacks.policy_config import effective as policy_config_of
from program import config as stack_config
from program import stack_file
from program.config import ConfigError
from program.stack_file import StackFileError


def read_stack_file(path: Path) -> tuple[dict[str, Any], list[str]]:
    """(config map with `secure:` values replaced by placeholders, keys holding a secret): the hardened reader."""
    return stack_file.offline_config(path, PROJECT)


def critical_path(resources: list[RecordedResource]) -> dict[str, Any]:
    """Longest chain of custom resources that must be deployed one after another."""
    by_urn = {r.urn: r for r in resources}
    children: dict[str, list[str]] = {}
    for r in resources:
        if r.parent:
            children.setdefault(r.parent, []).append(r.urn)

    def custom_under(urn: str) -> list[str]:
        out, stack = [], list(children.get(urn, []))
        while stack:
            u = stack.pop()
            if by_urn[u].custom:
                out.append(u)
            stack += children.get(u, [])
        return out

    preds: dict[str, set[str]] = {}
    for r in resources:
        if not r.custom:
            continue
        deps: set[str] = set()
        links = list(r.dependencies)
        if r.provider:
            links.append(r.provider)
        if r.parent and r.parent in by_urn and by_urn[r.parent].custom:
            links.append(r.parent)
        for d in links:
            dep = by_urn.get(d)
            if dep is None:
                continue
            if dep.custom:
                deps.add(d)
            else:
                deps.update(custom_under(d))
        deps.discard(r.urn)
        preds[r.urn] = deps

    best: dict[str, tuple[int, str | None]] = {}

    def depth(urn: str, seen: frozenset[str] = frozenset()) -> int:
        if urn in best:
            return best[urn][0]
        choice, value = None, 0
        for p in sorted(preds.get(urn, ())):  # sorted: ties resolve the same way in every run
            if p in seen:
                continue
            d = depth(p, seen | {urn})
            if d > value:
                choice, value = p, d
        best[urn] = (value + 1, choice)
        return value + 1

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    if not preds:
        return {"depth": 0, "urns": []}
    end = max(preds, key=lambda u: (depth(u), u))
    chain: list[str] = []
    cur: str | None = end
    while cur is not None:
        chain.append(cur)
        cur = best[cur][1]
    return {"depth": len(chain), "urns": list(reversed(chain))}


def _finding_order(resources: list[RecordedResource]) -> Any:
    """Findings in resource order, then by policy; stack-level findings last."""
    position = {r.urn: i for i, r in enumerate(resources)}

    def key(v: Violation) -> tuple[int, str, str, str]:
        return (position.get(v.urn, len(position)), v.policy, v.enforcement_level, v.message)

    return key


def build_report(result: PlanResult, violations: list[Violation]) -> dict[str, Any]:
    return {
        "project": PROJECT,
        "stack": result.stack,
        "resources": [r.to_json() for r in result.resources],
        "outputs": result.outputs,
        "inventedOutputs": result.invented_outputs,
        "policyViolations": [v.to_json() for v in sorted(violations, key=_finding_order(result.resources))],
        "criticalPath": critical_path(result.resources),
    }


class Progress:
    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.t0 = time.monotonic()

    def __call__(self, msg: str) -> None:
        if not self.quiet:
            print(f"[plan {time.monotonic() - self.t0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def plan_stack(
    stack: str,
    config_file: Path | None = None,
    policy_config: Path | None = None,
    skip_policies: bool = False,
    progress: Progress | None = None,
    previous_outputs: dict[str, Any] | None = None,
    esc_values: Sequence[Path] = (),
) -> dict[str, Any]:
    """Runs the program and the policy pack; returns the JSON report. Raises ConfigError and friends.

    `previous_outputs`: the last deployment's stack outputs (None: plan a first deployment). `esc_values`:
    the opened ESC environments the stack file imports (mldiag/esc.py); without them a stack that imports
    any is planned without their values, says so on stderr and in `unopenedEnvironments`."""
    progress = progress or Progress(True)
    path = config_file or ROOT / "stacks" / f"Pulumi.{stack}.yaml"
    progress(f"reading {path}")
    read = stack_config.read_stack_file(path)  # the file's own problems with its config's
    environments = read.environments
    config, secret_keys = esc.supply(
        str(path), stack_file.offline_values(read, path), read.secret_keys, environments, esc_values, PROJECT
    )
    progress("running the program under the mock runtime")
    result = run_config(config, secret_keys, stack=stack, previous_outputs=previous_outputs)
    progress(f"{len(result.resources)} resources registered")
    violations: list[Violation] = []
    if not skip_policies:
        if policy_config is not None:
            pack_config, sources = load_pack_config(policy_config), [policy_config]
        else:
            # The stack's environment's levels, then policies/config/<stack>.json when the stack has one.
            pack_config, sources = policy_config_of(stack, environment=str(config[f"{PROJECT}:environment"]))
        progress(
            f"starting the policy pack ({' + '.join(p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else str(p) for p in sources)})"
        )
        plain_config = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
        for k in secret_keys:
            plain_config[k] = "[secret]"
        violations, _ = run_policies(result.resources, pack_config, PROJECT, stack, plain_config)
        progress(f"policy pack done: {len(violations)} finding(s)")
    report = build_report(result, violations)
    if environments and not esc_values:
        report["unopenedEnvironments"] = list(environments)
    return report


def has_mandatory(report: dict[str, Any]) -> bool:
    return any(v["enforcementLevel"] == "mandatory" for v in report["policyViolations"])


def exit_code(report: dict[str, Any]) -> int:
    if has_mandatory(report):
        return EXIT_MANDATORY
    return EXIT_INCOMPLETE if report.get("unopenedEnvironments") else EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = command_parser("plan", __doc__)
    p.add_argument(
        "stack",
        nargs="?",
        help="stack name: reads stacks/Pulumi.STACK.yaml; policy levels of its environment plus policies/config/STACK.json",
    )
    p.add_argument(
        "--config-file", type=Path, help="stack config file to use instead of stacks/Pulumi.STACK.yaml"
    )
    p.add_argument(
        "--policy-config",
        type=Path,
        help="policy pack config instead of the stack's (mldiag policy-config STACK)",
    )
    esc.add_argument(p)
    p.add_argument("--format", choices=plan_render.FORMATS, default="table")
    p.add_argument(
        "--from-json",
        type=Path,
        metavar="FILE",
        help="render a saved plan or diff JSON (this tool's or mldiag.diff.cli's --format json) instead of planning",
    )
    p.add_argument("--out", type=Path, help="write what each resource would apply (manifests, values, JSON)")
    p.add_argument("--diff-base", metavar="GITREF", help="diff this stack's plan against its plan at GITREF")
    p.add_argument(
        "--previous-outputs",
        type=Path,
        metavar="FILE",
        help="the last deployment's outputs (`pulumi stack output --json`, or a plan's outputs): plan the "
        "next update after it instead of a first deployment",
    )
    p.add_argument("--skip-policies", action="store_true", help="do not run the policy pack")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return p


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = parser()
    args = p.parse_args(argv)
    if not args.stack and not args.from_json:
        p.error("give a STACK to plan or --from-json FILE to render")
    return args


def read_previous_outputs(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A JSON object of stack outputs, or a plan report (its `outputs`); returns (outputs, problem)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"--previous-outputs: {path} does not exist"
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return None, f"--previous-outputs: {path}: not valid JSON ({e})"
    if (
        isinstance(data, dict)
        and isinstance(data.get("resources"), list)
        and isinstance(data.get("outputs"), dict)
    ):
        data = data["outputs"]
    if not isinstance(data, dict):
        return None, (
            f"--previous-outputs: {path}: expected a JSON object of stack outputs "
            "(`pulumi stack output --json`) or a plan report, got " + type(data).__name__
        )
    return data, None


def render_saved(path: Path, fmt: str) -> tuple[str, int]:
    """Renders a saved plan report, diff, or list of diffs; returns (text, exit code)."""
    from mldiag import diff as plan_diff

    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return f"error: {path} does not exist", EXIT_ERROR
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return f"error: {path}: not valid JSON ({e})", EXIT_ERROR
    docs = data if isinstance(data, list) else [data]
    out, code = [], EXIT_OK
    for i, doc in enumerate(docs):
        where = f"{path}[{i}]" if isinstance(data, list) else str(path)
        if isinstance(doc, dict) and isinstance(doc.get("summary"), dict) and "resources" in doc:
            out.append(plan_diff.render(doc, fmt))
            code = worst(code, plan_diff.exit_code(doc))
        elif isinstance(doc, dict) and isinstance(doc.get("resources"), list) and "policyViolations" in doc:
            out.append(plan_render.render(doc, fmt))
            code = worst(code, exit_code(doc))
        else:
            return (
                f"error: {where}: not a plan report (keys resources, policyViolations) "
                "nor a diff (keys summary, resources)",
                EXIT_ERROR,
            )
    return "\n".join(out), code


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    progress = Progress(args.quiet)
    if args.from_json:
        text, code = render_saved(args.from_json, args.format)
        stream = sys.stderr if code == EXIT_ERROR else sys.stdout
        stream.write(text if text.endswith("\n") else text + "\n")
        return code
    if args.diff_base:
        from mldiag.diff import run_diff

        text, code = run_diff(
            args.stack,
            args.diff_base,
            args.format,
            args.config_file,
            args.policy_config,
            esc_values=args.esc_values,
        )
        stream = sys.stderr if code == EXIT_ERROR else sys.stdout
        stream.write(text if text.endswith("\n") else text + "\n")
        return code
    previous = None
    if args.previous_outputs:
        previous, problem = read_previous_outputs(args.previous_outputs)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return EXIT_ERROR
    try:
        report = plan_stack(
            args.stack,
            args.config_file,
            args.policy_config,
            args.skip_policies,
            progress,
            previous,
            args.esc_values,
        )
    except (
        ConfigError,
        pulumi.RunError,
    ) as e:  # a user's mistake the program names: no traceback, as the engine
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except (StackFileError, PolicyConfigError, PolicyConfigInputError, esc.EscValuesError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # a bug in the program or a component: keep the traceback
        traceback.print_exc()
        print(f"error: the program failed: {e}", file=sys.stderr)
        return EXIT_ERROR
    if args.out:
        written = plan_render.write_out(report, args.out)
        progress(f"wrote {written} file(s) under {args.out}")
    sys.stdout.write(plan_render.render(report, args.format))
    return exit_code(report)


def run_process(argv: list[str]) -> NoReturn:
    """A process that plans and ends. A plan of one stack runs with the collector off and ends without
    walking its heap (plan_runtime.one_shot); --diff-base plans twice in one process, so it collects."""
    if "--diff-base" in argv:
        sys.exit(main(argv))
    plan_runtime.one_shot()
    plan_runtime.end_process(main(argv))


if __name__ == "__main__":
    run_process(sys.argv[1:])
