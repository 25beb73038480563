"""Writes the `pulumi import --file` JSON equivalent to a stack's `adopt: true` settings.

For users who prefer the CLI's bulk import to the `import_` resource option: the same resources, the same ids.
The stack is run under the offline plan's mock runtime with a stack transformation (an SDK hook that sees
every resource and its options); each resource declared with `import_` becomes an entry, its parents become
`component` entries (the engine creates them empty), and explicit providers are named in `nameTable`.

    mldiag import staging -o import.json
    mldiag import staging --targets > targets   # the providers it names, and their parents
    # remove `adopt: true` from the Kubernetes parts (with `import_` in the program a targeted `up` imports
    # untargeted resources too, and the engine rejects the snapshot); the import puts them in the state
    pulumi up -s staging $(cat targets)
    pulumi import --file import.json --protect=false --generate-code=false -s staging

The providers the entries name must exist in the stack first, and the engine refuses a target whose parent
is not targeted too: `--targets` prints both. The `import_` option in the program needs no such step.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from mldiag.common import command_parser
from mldiag.engine.runtime import ROOT, PlanResult, run_config
from mldiag.exit_codes import Exit

PROGRAM = Path(__file__).resolve().parent / "options_program.py"
_SEEN: list[tuple[str, str, pulumi.ResourceOptions]] = []


@dataclass(frozen=True)
class Registered:
    """A resource's lifecycle options as the program declared them."""

    type: str
    name: str
    protect: bool
    retain_on_delete: bool
    import_id: str | None
    alias_names: tuple[str, ...]


def record(args: pulumi.ResourceTransformationArgs) -> None:
    """Stack transformation (see options_program.py): keeps each resource's declared options."""
    _SEEN.append((args.type_, args.name, args.opts))


def run_with_options(
    config: dict[str, Any], secret_keys: list[str] | tuple[str, ...] = (), stack: str = "dev"
) -> tuple[PlanResult, dict[str, Registered]]:
    """Runs the program like `run_config`; also returns each resource's options by resource name."""
    _SEEN.clear()
    try:
        result = run_config(config, secret_keys, stack=stack, program=PROGRAM)
        # protect as the engine got it (after parent inheritance), from the recorded registrations
        protected = {(r.type, r.name): r.protect for r in result.resources}
        out: dict[str, Registered] = {}
        for type_, name, opts in _SEEN:
            out[name] = Registered(
                type=type_,
                name=name,
                protect=bool(protected.get((type_, name))),
                retain_on_delete=bool(opts.retain_on_delete),
                import_id=opts.import_,
                # Name aliases only (SDKs add type aliases of older API versions on their own).
                alias_names=tuple(
                    a.name
                    for a in opts.aliases or ()
                    if isinstance(a, pulumi.Alias) and isinstance(a.name, str)
                ),
            )
        return result, out
    finally:
        _SEEN.clear()


def import_file(result: PlanResult, registered: dict[str, Registered]) -> dict[str, Any]:
    """The `pulumi import --file` document for every resource declared with `import_`."""
    by_urn = {r.urn: r for r in result.resources}
    entries: dict[str, dict[str, Any]] = {}
    name_table: dict[str, str] = {}

    def add_parents(urn: str | None) -> str | None:
        parent = by_urn.get(urn or "")
        if parent is None:
            return None
        if parent.name not in entries:
            grand = add_parents(parent.parent)
            entry: dict[str, Any] = {"type": parent.type, "name": parent.name, "component": True}
            if grand:
                entry["parent"] = grand
            entries[parent.name] = entry
        return parent.name

    for r in result.resources:
        reg = registered.get(r.name)
        if reg is None or not reg.import_id or not r.custom:
            continue
        entry = {"type": r.type, "name": r.name, "id": reg.import_id}
        if parent := add_parents(r.parent):
            entry["parent"] = parent
        if r.provider:
            provider = by_urn[r.provider]
            name_table[provider.name] = provider.urn
            entry["provider"] = provider.name
        entries[r.name] = entry
    return {"nameTable": dict(sorted(name_table.items())), "resources": list(entries.values())}


def provider_targets(result: PlanResult, doc: dict[str, Any]) -> list[str]:
    """The URNs `pulumi up --target` needs to create the providers of `doc`: each provider and its parents
    (the root stack excepted), parents first."""
    by_urn = {r.urn: r for r in result.resources}
    out: list[str] = []
    for urn in doc["nameTable"].values():
        chain = []
        while urn in by_urn:
            chain.append(urn)
            urn = by_urn[urn].parent or ""
        out += [u for u in reversed(chain) if u not in out]
    return out


def parser() -> argparse.ArgumentParser:
    ap = command_parser("import", __doc__)
    ap.add_argument("stack", help="stack name (stacks/Pulumi.<stack>.yaml)")
    ap.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    ap.add_argument(
        "--targets",
        action="store_true",
        help="print the `--target URN` flags of `pulumi up` that create the providers the document names",
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    from mldiag.plan.cli import read_stack_file
    from program.config import ConfigError
    from program.stack_file import StackFileError

    args = parser().parse_args(argv)
    try:
        config, secrets = read_stack_file(ROOT / "stacks" / f"Pulumi.{args.stack}.yaml")
        result, registered = run_with_options(config, secrets, stack=args.stack)
    except (StackFileError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return Exit.INVALID
    doc = import_file(result, registered)
    if args.targets:
        sys.stdout.write("".join(f"--target {urn}\n" for urn in provider_targets(result, doc)))
        return Exit.OK
    text = json.dumps(doc, indent=2) + "\n"
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return Exit.OK


if __name__ == "__main__":
    # Run through the importable module: the recording hook (options_program.py) imports it by name, and
    # `python -m` would otherwise hold a second copy of `_SEEN` as `__main__`.
    from mldiag.plan import import_file as _module

    sys.exit(_module.main())
