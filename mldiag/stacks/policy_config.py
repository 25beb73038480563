"""The policy pack config of a stack: its environment's levels, then its own file over them.

- `policies/config/environments/<environment>.json`: every rule's level (and options) in that environment,
  the data the policy pack publishes, written from its own declarations (each rule's `levels=`, the pack's
  `BASE_LEVELS` for `all`: policies/mldiag_policy/levels.py) by `python -m dev.gen.policy_levels --write`
  (which also writes the pack README's tables and the tests' expected levels); a test fails when they are
  stale. The product reads these files, never the pack's Python.
- `policies/config/<stack>.json` (optional): what this stack sets differently, e.g. the Azure subscriptions
  `azureml-allowed-subscriptions` allows. A rule's entry there replaces the level and the options it names.

The environment is the stack file's `ml-diagnostics:environment`, so a new stack gets its environment's
strictness without a file of its own.

    mldiag policy-config STACK [--output FILE]     # the effective config: pass it to --policy-pack-config
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mldiag.common import PROJECT, ROOT, PolicyConfigInputError, command_parser, read_json
from mldiag.exit_codes import Exit
from program import stack_file as stack_file_reader
from program.config_base import ENVIRONMENTS
from program.stack_file import StackFileError

CONFIG_DIR = ROOT / "policies" / "config"
ENVIRONMENTS_DIR = CONFIG_DIR / "environments"
STACKS_DIR = ROOT / "stacks"
EXIT_OK, EXIT_BAD_INPUT = Exit.OK, Exit.INVALID


def environment_defaults(environment: str, config_dir: Path = CONFIG_DIR) -> dict[str, Any]:
    """Every rule's level and options in an environment, as the policy pack publishes them."""
    if environment not in ENVIRONMENTS:
        raise PolicyConfigInputError(
            f"environment {environment!r} is unknown; allowed: {', '.join(ENVIRONMENTS)}"
        )
    path = config_dir / "environments" / f"{environment}.json"
    if not path.exists():
        raise PolicyConfigInputError(
            f"{path} does not exist: the policy pack publishes it (python -m dev.gen.policy_levels --write)"
        )
    return read_json(path)


def _entry(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {"enforcementLevel": value}


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override`'s rules over `base`'s: a rule's level and each option it names replace the base's."""
    out = dict(base)
    for rule, value in override.items():
        if rule == "all" or rule not in out:
            out[rule] = value
            continue
        merged = {**_entry(out[rule]), **_entry(value)}
        out[rule] = merged["enforcementLevel"] if list(merged) == ["enforcementLevel"] else merged
    return out


def stack_environment(stack_file: Path) -> str:
    try:
        env = stack_file_reader.read(stack_file, PROJECT).config.get(f"{PROJECT}:environment")
    except StackFileError as e:
        raise PolicyConfigInputError(str(e)) from None
    if not isinstance(env, str):
        raise PolicyConfigInputError(
            f"{stack_file}: {PROJECT}:environment is not set; allowed: dev, staging, prod"
        )
    return env


def effective(
    stack: str,
    *,
    stack_file: Path | None = None,
    environment: str | None = None,
    config_dir: Path = CONFIG_DIR,
) -> tuple[dict[str, Any], list[Path]]:
    """(the stack's effective pack config, the files it was made from). The environment is the stack file's
    unless given."""
    env = environment or stack_environment(stack_file or STACKS_DIR / f"Pulumi.{stack}.yaml")
    env_file = config_dir / "environments" / f"{env}.json"
    config = environment_defaults(env, config_dir)
    sources = [env_file]
    own = config_dir / f"{stack}.json"
    if own.exists():
        config = merge(config, read_json(own))
        sources.append(own)
    # An entry that names options only takes the environment's level, written out for the CLI.
    for rule, value in config.items():
        if isinstance(value, dict) and "enforcementLevel" not in value:
            config[rule] = {"enforcementLevel": config.get("all", "advisory"), **value}
    return config, sources


def parser() -> argparse.ArgumentParser:
    p = command_parser("policy-config", __doc__)
    p.add_argument(
        "stack", nargs="?", help="stack name: stacks/Pulumi.STACK.yaml and policies/config/STACK.json"
    )
    p.add_argument("--output", type=Path, help="write the config here instead of stdout")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        if not args.stack:
            p.error("name a stack")
        stack_file = STACKS_DIR / f"Pulumi.{args.stack}.yaml"
        if not stack_file.exists():
            raise PolicyConfigInputError(f"{stack_file.relative_to(ROOT)} does not exist")
        config, _ = effective(args.stack)
    except PolicyConfigInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    text = json.dumps(config, indent=2) + "\n"
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
