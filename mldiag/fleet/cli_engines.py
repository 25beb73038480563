"""`mldiag fleet workflow` and `mldiag fleet pko`: the files of the engines beyond one machine, written or checked.

`workflow` writes (or checks) the GitHub Actions workflows of every fleet file (mldiag/fleet/workflow.py); `pko`
the Pulumi Kubernetes Operator's Stack objects of one (mldiag/fleet/pko.py). Both exit 0 when written or
current, 1 when `--check` finds a file that is not the generated one (or one left over), 2 on bad input.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from mldiag.common import ROOT
from mldiag.exit_codes import Exit
from mldiag.fleet.model import FleetError
from mldiag.fleet.planner import EnvironmentError, Plan, load

EXIT_OK, EXIT_GATE, EXIT_INVALID = Exit.OK, Exit.FINDING, Exit.INVALID


def _err(msg: str) -> None:
    import sys

    print(f"error: {msg}", file=sys.stderr)


def pko_parser(sub: Any) -> None:
    p = sub.add_parser("pko", help="the fleet as the Pulumi Kubernetes Operator's Stack objects")
    p.add_argument("fleet", type=Path, help="the fleet file, e.g. fleet/prod.yaml")
    p.add_argument("--output", type=Path, metavar="DIR", help="where the YAML files go")
    p.add_argument(
        "--format",
        choices=("files", "mermaid"),
        default="files",
        help="mermaid: print the prerequisite graph as a picture instead of writing files",
    )
    p.add_argument("--check", action="store_true", help="exit 1 when DIR does not hold what would be written")
    p.add_argument(
        "--project-dir", type=Path, default=ROOT, help="the project (Pulumi.yaml, stacks/, the program)"
    )
    p.add_argument("--repo", help="the program's git repository (default: the checkout's origin)")
    rev = p.add_mutually_exclusive_group()
    rev.add_argument(
        "--commit", help="the commit the stacks run (default: HEAD, which must hold this program)"
    )
    rev.add_argument("--branch", help="a branch the operator follows instead of one commit")
    for flag, metavar, text in _ACCESS:
        p.add_argument(flag, metavar=metavar, help=text)
    p.add_argument(
        "--esc-environment",
        action="append",
        default=[],
        metavar="ENV",
        help="a Pulumi ESC environment to import",
    )


# What the workspaces get besides the program: (flag, metavar, help).
_ACCESS = (
    ("--git-auth-secret", "SECRET", "a Kubernetes Secret with the key accessToken (the repository's token)"),
    ("--service-account", "NAME", "the workspaces' Kubernetes service account (default pulumi)"),
    ("--namespace", "NAME", "the objects' namespace (default: none; `kubectl apply -n`)"),
    ("--access-token-secret", "SECRET", "a Secret with the key accessToken: PULUMI_ACCESS_TOKEN"),
    ("--passphrase-secret", "SECRET", "a Secret with the key passphrase: PULUMI_CONFIG_PASSPHRASE"),
    (
        "--secrets-provider",
        "URL",
        "the stacks' secrets provider (a cloud KMS URL; default: the backend's own)",
    ),
    ("--workspace-image", "IMAGE", "the workspace pods' image (a Pulumi image with Python 3.11)"),
    ("--backend", "URL", "the Pulumi backend URL of the stacks (default: Pulumi Cloud)"),
    (
        "--organization",
        "ORG",
        "the stacks' Pulumi organization when the fleet file names none (`organization`)",
    ),
)


def run_workflow(args: argparse.Namespace) -> int:
    from mldiag.fleet.workflow import WorkflowLimitError, generated, stale_generated

    project = args.project_dir.resolve()
    try:
        files = generated(project)
    except (FleetError, EnvironmentError, WorkflowLimitError) as e:
        _err(str(e))
        return EXIT_INVALID
    stale = []
    for rel, text in files.items():
        path = project / rel
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {rel}")
        elif not path.exists() or path.read_text() != text:
            stale.append(str(rel))
    for rel in stale_generated(project, files):
        if args.write:
            (project / rel).unlink()
            print(f"removed {rel} (no fleet generates it any more)")
        else:
            stale.append(f"{rel} (no fleet generates it any more)")
    if stale:
        _err(f"not the generated workflow(s): {', '.join(stale)}; run `mldiag fleet workflow --write`")
        return EXIT_GATE
    return EXIT_OK


def run_pko(args: argparse.Namespace) -> int:
    from mldiag.fleet import pko

    project = args.project_dir.resolve()
    fleet = args.fleet if args.fleet.is_absolute() else Path.cwd() / args.fleet
    if args.output is None and args.format == "files":
        _err("--output DIR is required (or --format mermaid)")
        return EXIT_INVALID
    try:
        plan = load(fleet, project)
        if args.organization and not plan.organization:
            plan = replace(plan, organization=args.organization)
        rel = (
            str(fleet.resolve().relative_to(project))
            if fleet.resolve().is_relative_to(project)
            else str(fleet)
        )
        if args.format == "mermaid":  # the graph needs no revision: drawn from any checkout, remote or not
            source = pko.Source(args.repo or "origin", branch=args.branch or "HEAD")
        else:
            source = pko.default_source(project, args.repo, args.commit, args.branch)
            if source.commit:
                pko.check_committed(project, source.commit, _program_paths(plan, project))
        source = pko.Source(source.repo, source.commit, source.branch, source.repo_dir, args.git_auth_secret)
        access = pko.Access(
            args.service_account or "pulumi",
            args.namespace,
            args.access_token_secret,
            args.passphrase_secret,
            tuple(args.esc_environment),
            args.backend,
            args.workspace_image,
            args.secrets_provider,
        )
        approvals = pko.read_approvals(project / fleet_gate_approvals(rel))
        made = pko.objects(plan, rel, source, access, approvals)
        files = pko.files(plan, rel, made, source)
    except (FleetError, EnvironmentError, pko.PkoError) as e:
        _err(str(e))
        return EXIT_INVALID
    if args.format == "mermaid":
        print(pko.mermaid(made), end="")
        return EXIT_OK
    out = args.output
    stale = (
        sorted(p.name for p in out.glob("*.yaml") if p.name not in files and _generated(p))
        if out.is_dir()
        else []
    )
    if args.check:
        wrong = [n for n, text in files.items() if not (out / n).is_file() or (out / n).read_text() != text]
        if wrong or stale:
            _err(
                f"{out}: not the generated objects: {', '.join(wrong + stale)}; run `mldiag fleet pko` again"
            )
            return EXIT_GATE
        return EXIT_OK
    out.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (out / name).unlink()
    for name, text in files.items():
        (out / name).write_text(text)
    count = sum(len(o) for _, o in made.waves)
    print(
        f"wrote {len(files)} file(s) to {out}: {count} Stack(s), {len(made.secrets)} member Secret(s) to create"
    )
    return EXIT_OK


def fleet_gate_approvals(fleet_rel: str) -> str:
    from program.fleet_gate import approvals_file

    return approvals_file(fleet_rel)


def _generated(path: Path) -> bool:
    from mldiag.fleet.pko import GENERATED

    return path.read_text(errors="replace").startswith(GENERATED)


def _program_paths(plan: Plan, project: Path) -> list[str]:
    """What the members' digest covers: the program and the environment's stack file."""
    from mldiag.fleet.planner import environment_stack_file
    from program.fleet_member import PROGRAM_PATHS

    env = environment_stack_file(project, plan.environment_stack)
    return [*PROGRAM_PATHS, str(env.relative_to(project))]
