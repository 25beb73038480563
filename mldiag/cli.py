"""`mldiag`: the project's one command line (installed with the project: mldiag/launcher/pyproject.toml).

    mldiag plan STACK [...]            offline plan of a stack, with the policy pack
    mldiag diff [STACK ...] --base REF offline diff of stacks against a git ref (the PR comment)
    mldiag verify STACK [...]          read-only post-deploy checks of every target
    mldiag import STACK [...]          the `pulumi import --file` document of a stack's `adopt: true` parts
    mldiag new-stack NAME --environment ENV    a new stack file with a passphrase encryptionsalt
    mldiag secrets set STACK KEY.PATH [--file FILE]   encrypt a value into a stack file, offline
    mldiag secrets check [STACK ...]   decrypt every secure value of stack files (prints key paths only)
    mldiag policy-config STACK         the policy pack config of a stack (its environment's, plus its own)
    mldiag fleet plan|run|status|drift FLEET   rollouts in waves across many clusters

`mldiag COMMAND --help` describes each. Exit codes (README "Exit codes"):

    command        0                     1                        2                        3
    plan           no mandatory finding  mandatory violation      invalid config or error  -
    diff           no mandatory finding  mandatory violation      invalid config or error  -
    verify         every check passed    a check failed           invalid config           a target unreachable
    import         written               -                        invalid config or error  -
    new-stack      written               -                        bad input                -
    secrets        done                  -                        bad input or passphrase  -
    policy-config  printed               -                        bad input                -
    fleet          see `mldiag fleet --help`
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

from mldiag.exit_codes import Exit

EXIT_USAGE = Exit.INVALID


def _commands() -> dict[str, Callable[[list[str]], int]]:
    def plan(argv: list[str]) -> int:
        from mldiag.plan import cli as m

        return m.main(argv)

    def diff(argv: list[str]) -> int:
        from mldiag.diff import cli as m

        return m.main(argv)

    def verify(argv: list[str]) -> int:
        from mldiag.verify import cli as m

        return m.main(argv)

    def import_(argv: list[str]) -> int:
        from mldiag.plan import import_file as m

        return m.main(argv)

    def new_stack(argv: list[str]) -> int:
        from mldiag.stacks import new_stack as m

        return m.main(argv)

    def secrets(argv: list[str]) -> int:
        from mldiag.stacks import secrets as m

        return m.main(argv)

    def policy_config(argv: list[str]) -> int:
        from mldiag.stacks import policy_config as m

        return m.main(argv)

    def fleet(argv: list[str]) -> int:
        from mldiag.fleet import cli as m

        return m.main(argv)

    return {
        "plan": plan,
        "diff": diff,
        "verify": verify,
        "import": import_,
        "new-stack": new_stack,
        "secrets": secrets,
        "policy-config": policy_config,
        "fleet": fleet,
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = _commands()
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0 if argv else EXIT_USAGE
    command, rest = argv[0], argv[1:]
    if command not in commands:
        from ml_diagnostics.rules.names import closest

        hint = closest(command, list(commands))
        print(
            f"mldiag: unknown command {command!r}{f' (did you mean {hint!r}?)' if hint else ''}; "
            f"commands: {', '.join(commands)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        return commands[command](rest)
    except KeyboardInterrupt:
        return 130


def run(argv: list[str]) -> NoReturn:
    """The process: `main`, then exit with its code; a plan ends as mldiag.plan.cli.run_process ends it."""
    if argv[:1] == ["plan"]:
        from mldiag.plan import cli as plan

        plan.run_process(argv[1:])
    sys.exit(main(argv))


if __name__ == "__main__":
    run(sys.argv[1:])
