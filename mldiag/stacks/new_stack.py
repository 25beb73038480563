"""A new stack of your own, offline: `stacks/Pulumi.<name>.yaml` with a passphrase `encryptionsalt` made as
`pulumi stack init --secrets-provider passphrase` makes it, the environment, and a commented example of
every target kind.

    PULUMI_CONFIG_PASSPHRASE=... mldiag new-stack team-a --environment dev

Then add targets, put secrets in with `mldiag secrets set team-a KEY.PATH < file`, and check it with
`mldiag plan team-a`. The policy pack's strictness follows the environment; a `policies/config/team-a.json`
is needed only for what this stack sets differently. For the real CLI: `pulumi stack init team-a
--secrets-provider passphrase` keeps the salt this file holds.

Exit codes: 0 written; 2 bad input (name, environment, existing file, passphrase): mldiag/exit_codes.py.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from mldiag.common import PROJECT, ROOT, command_parser
from mldiag.exit_codes import Exit
from mldiag.stacks.secrets import SecretInputError, passphrase
from mldiag.stacks.stack_secrets import EXAMPLE_PASSPHRASE, new_salt_state
from program.kinds.table import KINDS

STACKS = ROOT / "stacks"
EXIT_OK, EXIT_BAD_INPUT = Exit.OK, Exit.INVALID
# Pulumi stack names: letters, digits, '-', '_' and '.', at most 100 characters.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")

HEADER = """\
# Stack {name} ({environment}), made by `mldiag new-stack`. Each target kind is one list under config;
# the examples below are commented out: README "What each target does", docs/configuration.md for every key.
# Secrets: `mldiag secrets set {name} KEY.PATH < file` (or `pulumi config set --secret --path ...`).
encryptionsalt: {salt}
config:
  {project}:environment: {environment}
"""


def examples(project: str = PROJECT) -> str:
    """Every kind's commented example (its entry's `docs.example`), in the table's order."""
    lines = [line for kind in KINDS for line in kind.docs.example.replace("{project}", project).splitlines()]
    return "".join(f"  # {line}\n" for line in lines)


class NewStackError(Exception):
    pass


def render(name: str, environment: str, secret: str) -> str:
    salt, _ = new_salt_state(secret)
    return HEADER.format(name=name, environment=environment, salt=salt, project=PROJECT) + examples()


def create(
    name: str,
    environment: str,
    *,
    stacks_dir: Path = STACKS,
    force: bool = False,
    config_file: Path | None = None,
) -> Path:
    from ml_diagnostics.rules.names import closest
    from program.config_base import ENVIRONMENTS

    if not _NAME.fullmatch(name):
        raise NewStackError(
            f"stack name {name[:60]!r}: letters, digits, '-', '_' and '.', starting with a letter or digit"
        )
    if environment not in ENVIRONMENTS:
        hint = closest(environment, ENVIRONMENTS)
        raise NewStackError(
            f"--environment {environment[:30]!r}{f' (did you mean {hint!r}?)' if hint else ''}; "
            f"allowed: {', '.join(ENVIRONMENTS)}"
        )
    path = config_file or stacks_dir / f"Pulumi.{name}.yaml"
    if path.exists() and not force:
        raise NewStackError(f"{path.name} exists already (--force replaces it, and its secrets with it)")
    if not path.parent.is_dir():
        raise NewStackError(f"{path.parent} is not a directory")
    secret = passphrase()
    if secret == EXAMPLE_PASSPHRASE:
        raise NewStackError(
            "PULUMI_CONFIG_PASSPHRASE is the example stacks' published passphrase; choose your own for a real stack"
        )
    path.write_text(render(name, environment, secret))
    return path


def parser() -> argparse.ArgumentParser:
    p = command_parser("new-stack", __doc__)
    p.add_argument("name", help="the stack's name: stacks/Pulumi.NAME.yaml")
    p.add_argument(
        "--environment", required=True, help="dev, staging or prod: strictness and deletion defaults"
    )
    p.add_argument("--force", action="store_true", help="replace an existing stack file")
    p.add_argument(
        "--config-file",
        type=Path,
        metavar="FILE",
        help="write the stack file here instead of stacks/Pulumi.NAME.yaml",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        path = create(args.name, args.environment, force=args.force, config_file=args.config_file)
    except (NewStackError, SecretInputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    where = f" --config-file {args.config_file}" if args.config_file else ""
    print(f"next: add targets, then `mldiag plan {args.name}{where}`")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
