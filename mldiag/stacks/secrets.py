"""Stack secrets offline, as the Pulumi CLI's passphrase secrets provider writes them.

    mldiag secrets set STACK KEY.PATH [--file FILE] [--raw]   # the value from FILE, else stdin
    mldiag secrets check [STACK ...]                          # decrypt every secure value; prints key paths

`set` is `pulumi config set --secret --path KEY.PATH` without the CLI: the value is encrypted with the
stack's `encryptionsalt` and the passphrase (PULUMI_CONFIG_PASSPHRASE, or the file named by
PULUMI_CONFIG_PASSPHRASE_FILE), and written at the key path, creating the maps and lists on the way; the
rest of the stack file (comments, order) stays as it is. Like the CLI, a trailing newline of the value is
dropped unless --raw. KEY.PATH is the config key (the `ml-diagnostics:` namespace may be left out), then
`.name`, `[index]` or `["quoted.name"]` parts: `kubernetesClusters[0].kubeconfig`.

Exit codes: 0 done; 2 bad input (key path, stack file, passphrase): mldiag/exit_codes.py. Nothing secret
is printed.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mldiag.common import PROJECT, ROOT, command_parser
from mldiag.exit_codes import Exit
from mldiag.stacks.stack_secrets import (
    SecretsError,
    decrypt_stack,
    decrypt_value,
    encrypt_value,
    key_from_state,
)
from program.stack_file import StackFile

STACKS = ROOT / "stacks"
EXIT_OK, EXIT_BAD_INPUT = Exit.OK, Exit.INVALID
_PART = re.compile(r'\.([^.\[\]"]+)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]')


class SecretInputError(Exception):
    """Bad input for a secrets command; the message says what and where."""


def parse_key_path(text: str, project: str = PROJECT) -> tuple[str, list[str | int]]:
    """(full config key, path below it) of `pulumi config set --path` syntax."""
    m = re.match(r'([^.\[\]"]+)', text)
    if not m:
        raise SecretInputError(
            f"{text!r}: a key path starts with the config key, e.g. kubernetesClusters[0].kubeconfig"
        )
    key = m.group(1)
    if ":" not in key:
        key = f"{project}:{key}"
    parts: list[str | int] = []
    pos = m.end()
    while pos < len(text):
        p = _PART.match(text, pos)
        if not p:
            raise SecretInputError(
                f'{text!r}: cannot read the key path at {text[pos : pos + 20]!r}; use .name, [index] or ["quoted.name"]'
            )
        name, index, quoted = p.groups()
        parts.append(
            int(index)
            if index is not None
            else (name if name is not None else re.sub(r"\\(.)", r"\1", quoted))
        )
        pos = p.end()
    return key, parts


def passphrase_from_env() -> tuple[str, str] | None:
    """(passphrase, the variable it came from) as the Pulumi CLI reads it: PULUMI_CONFIG_PASSPHRASE, else the
    file PULUMI_CONFIG_PASSPHRASE_FILE names; None when neither gives one."""
    value = os.environ.get("PULUMI_CONFIG_PASSPHRASE")
    if value:
        return value, "PULUMI_CONFIG_PASSPHRASE"
    if value is None and (file := os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")):
        try:
            value = Path(file).read_text().rstrip("\r\n")
        except OSError as e:
            raise SecretInputError(f"PULUMI_CONFIG_PASSPHRASE_FILE {file}: {e.strerror}") from None
        if value:
            return value, f"the passphrase of PULUMI_CONFIG_PASSPHRASE_FILE ({file})"
    return None


def passphrase() -> str:
    found = passphrase_from_env()
    if found is None:
        raise SecretInputError(
            "no passphrase: set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE), as for the Pulumi CLI"
        )
    return found[0]


PULUMI_STACK = "pass --pulumi-stack ORG/ml-diagnostics/STACK (the Pulumi CLI decrypts it)"


def offline_plaintext(stack: StackFile, where: str) -> tuple[Callable[[str, str], str] | None, str]:
    """How an offline command that needs secrets (`mldiag verify`) reads a stack file's `secure:` values:
    (decrypt, hint). `decrypt` is the passphrase provider's decryption, as `mldiag secrets` does it, when the
    stack is on that provider and a passphrase is set; else None, and `hint` says how to have the secrets
    decrypted. SecretInputError names a wrong passphrase."""
    if stack.secretsprovider and "://" in stack.secretsprovider:
        scheme = stack.secretsprovider.split("://", 1)[0]
        return (
            None,
            f"its secrets provider is {scheme}:// (a cloud KMS key, which mldiag never calls): {PULUMI_STACK}",
        )
    if not stack.encryptionsalt:
        return None, f"its secrets are the Pulumi Cloud secrets provider's: {PULUMI_STACK}"
    hint = (
        "set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) to the stack's passphrase to decrypt it "
        f"offline, or {PULUMI_STACK}"
    )
    found = passphrase_from_env() if stack.secret_paths else None
    if found is None:
        return None, hint
    secret, source = found
    try:
        key = key_from_state(secret, stack.encryptionsalt)
    except SecretsError:
        raise SecretInputError(
            f"{where}: incorrect passphrase: {source} is not the passphrase its secrets were encrypted with"
        ) from None

    def decrypt(ciphertext: str, key_path: str) -> str:
        try:
            return decrypt_value(key, ciphertext)
        except SecretsError as e:
            raise SecretInputError(f"{where}: {key_path}: {e}") from None

    return decrypt, hint


def _yaml() -> Any:
    from ruamel.yaml import YAML

    y = YAML()
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def _where(key: str, parts: list[str | int]) -> str:
    return key + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def set_at(config: Any, key: str, parts: list[str | int], value: Any) -> None:
    """Sets `value` at the path, creating maps and lists as `pulumi config set --path` does."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    steps: list[str | int] = [key, *parts]
    node = config
    for i, step in enumerate(steps):
        container = _where(key, parts[: i - 1]) if i else "config"
        last = i == len(steps) - 1
        fresh = CommentedSeq() if not last and isinstance(steps[i + 1], int) else CommentedMap()
        if isinstance(step, int):
            if not isinstance(node, list):
                raise SecretInputError(f"{container} is not a list, so [{step}] cannot be set in it")
            if step > len(node):
                raise SecretInputError(
                    f"{container}[{step}]: the list has {len(node)} item(s); the next index is {len(node)}"
                )
            if step == len(node):
                node.append(value if last else fresh)
            elif last:
                node[step] = value
        else:
            if not isinstance(node, dict):
                raise SecretInputError(f"{container} is not a map, so .{step} cannot be set in it")
            if last:
                node[step] = value
            elif step not in node or node[step] is None:
                node[step] = fresh
        if not last:
            node = node[step]
            if isinstance(node, dict) and set(node) == {"secure"}:
                raise SecretInputError(f"{_where(key, parts[:i])} is a secret; set the whole value instead")


def set_secret(stack_file: Path, key_path: str, plaintext: str) -> str:
    """Encrypts `plaintext` into `stack_file` at `key_path`; returns the full key path written."""
    y = _yaml()
    try:
        doc = y.load(stack_file.read_text())
    except OSError as e:
        raise SecretInputError(f"{stack_file}: {e.strerror}") from None
    except Exception as e:  # ruamel's parser and scanner errors
        raise SecretInputError(f"{stack_file}: not YAML ({type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise SecretInputError(f"{stack_file}: not a stack file (no mapping at the top)")
    salt = doc.get("encryptionsalt")
    if not salt:
        raise SecretInputError(
            f"{stack_file}: no encryptionsalt, so not a passphrase stack; `mldiag new-stack` makes one "
            "(other secrets providers: `pulumi config set --secret`)"
        )
    try:
        key = key_from_state(passphrase(), str(salt))
    except SecretsError as e:
        raise SecretInputError(f"{stack_file}: {e}") from None
    config_key, parts = parse_key_path(key_path)
    config = doc.setdefault("config", {})
    short = config_key.removeprefix(f"{PROJECT}:")
    if config_key not in config and short in config:
        config_key = short
    set_at(config, config_key, parts, {"secure": encrypt_value(key, plaintext)})
    out = io.StringIO()
    y.dump(doc, out)
    stack_file.write_text(out.getvalue())
    return _where(config_key, parts)


def _stack_file(stack: str) -> Path:
    path = STACKS / f"Pulumi.{stack}.yaml"
    if not path.exists():
        known = sorted(
            p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACKS.glob("Pulumi.*.yaml")
        )
        raise SecretInputError(f"stacks/Pulumi.{stack}.yaml does not exist; stacks: {', '.join(known)}")
    return path


def _shown(path: Path) -> Path:
    resolved = path.resolve()
    return resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else path


def parser() -> argparse.ArgumentParser:
    p = command_parser("secrets", __doc__)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("set", help="encrypt a value into a stack file at a key path")
    s.add_argument("stack")
    s.add_argument("key_path", metavar="KEY.PATH")
    s.add_argument("--file", type=Path, help="read the value from this file (default: stdin)")
    s.add_argument("--raw", action="store_true", help="keep a trailing newline")
    s.add_argument(
        "--config-file", type=Path, metavar="FILE", help="the stack file instead of stacks/Pulumi.STACK.yaml"
    )
    c = sub.add_parser("check", help="decrypt every secure value (prints key paths only)")
    c.add_argument("stacks", nargs="*")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "set":
            path = args.config_file or _stack_file(args.stack)
            if not path.is_file():
                raise SecretInputError(f"{path} does not exist")
            if args.file:
                try:
                    value = args.file.read_text()
                except OSError as e:
                    raise SecretInputError(f"{args.file}: {e.strerror}") from None
            else:
                value = sys.stdin.read()
            if not args.raw:
                value = value.rstrip("\r\n")
            if not value:
                raise SecretInputError("the value is empty")
            where = set_secret(path, args.key_path, value)
            print(f"{_shown(path)}: {where}: encrypted")
        else:
            names = args.stacks or sorted(
                q.name.removeprefix("Pulumi.").removesuffix(".yaml") for q in STACKS.glob("Pulumi.*.yaml")
            )
            secret = passphrase()
            for name in names:
                path = _stack_file(name)
                try:
                    for key_path in decrypt_stack(path.read_text(), secret):
                        print(f"{path.relative_to(ROOT)}: {key_path}: decrypts")
                except SecretsError as e:
                    raise SecretInputError(f"{path.relative_to(ROOT)}: {e}") from None
    except SecretInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
