"""`mldiag`: the project's one command line (installed with the project: mldiag/launcher/pyproject.toml).

`mldiag --help` lists every command and subcommand, read from their parsers (`parsers`), and the exit-code
table (mldiag/exit_codes.py); `mldiag COMMAND --help` describes each.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from types import ModuleType
from typing import NoReturn

from mldiag.exit_codes import Exit, help_table

EXIT_USAGE = Exit.INVALID
INTRO = (
    "mldiag: ML diagnostics infrastructure from one command line: offline plans and diffs (no cloud, no\n"
    "credentials, no Pulumi CLI), verify after a deploy, new stacks and their secrets, fleet rollouts."
)


def _plan() -> ModuleType:
    from mldiag.plan import cli as m

    return m


def _diff() -> ModuleType:
    from mldiag.diff import cli as m

    return m


def _verify() -> ModuleType:
    from mldiag.verify import cli as m

    return m


def _import() -> ModuleType:
    from mldiag.plan import import_file as m

    return m


def _new_stack() -> ModuleType:
    from mldiag.stacks import new_stack as m

    return m


def _secrets() -> ModuleType:
    from mldiag.stacks import secrets as m

    return m


def _policy_config() -> ModuleType:
    from mldiag.stacks import policy_config as m

    return m


def _fleet() -> ModuleType:
    from mldiag.fleet import cli as m

    return m


# Each command: its module (imported when it runs: `main(argv)`, and `parser()` for the help) and what it is for.
COMMANDS: dict[str, tuple[Callable[[], ModuleType], str]] = {
    "plan": (_plan, "the offline plan of a stack, with the policy pack"),
    "diff": (_diff, "offline diff of stacks against a git ref (the pull request comment)"),
    "verify": (_verify, "read-only post-deploy checks of every target of a stack"),
    "import": (_import, "the `pulumi import --file` document of a stack's `adopt: true` parts"),
    "new-stack": (
        _new_stack,
        "a new stack file with a passphrase encryptionsalt and an example of every target kind",
    ),
    "secrets": (_secrets, "a stack file's secrets, offline"),
    "policy-config": (_policy_config, "the policy pack config of a stack (its environment's, plus its own)"),
    "fleet": (_fleet, "rollouts in waves across the clusters of an environment"),
}


def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, by command."""
    out = {}
    for command, (module, _) in COMMANDS.items():
        m = module()
        out[command] = m.parser() if hasattr(m, "parser") else m._parser()  # fleet's is `_parser`
    return out


def subcommands(parser: argparse.ArgumentParser) -> dict[str, str]:
    """A parser's subcommands and their help, in the order it declares them (none: {})."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def help_text() -> str:
    """`mldiag --help`: every command with its subcommands, then the exit-code table."""
    rows: list[tuple[str, str]] = []
    for command, parser in parsers().items():
        subs = subcommands(parser)
        rows.append((f"mldiag {command}" + (" ..." if subs else ""), COMMANDS[command][1]))
        rows += [(f"  mldiag {command} {sub}", text) for sub, text in subs.items()]
    width = max(len(name) for name, _ in rows) + 2
    lines = [f"  {name:<{width}}{text}" for name, text in rows]
    return (
        f"{INTRO}\n\nusage: mldiag COMMAND [ARGS ...]   (`mldiag COMMAND --help` describes each)\n\ncommands:\n"
        + "\n".join(lines)
        + "\n\n"
        + help_table()
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(help_text())
        return 0 if argv else EXIT_USAGE
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        from ml_diagnostics.rules.names import closest

        hint = closest(command, list(COMMANDS))
        print(
            f"mldiag: unknown command {command!r}{f' (did you mean {hint!r}?)' if hint else ''}; "
            f"commands: {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        return int(COMMANDS[command][0]().main(rest))
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
