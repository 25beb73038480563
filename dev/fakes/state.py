"""A stack's state as `pulumi stack export --show-secrets` prints it, from an offline plan, and a `pulumi` on
PATH that prints it: what `mldiag verify --stack` reads, without an engine (the e2e tier reads real ones).

Each recorded registration becomes a resource of the export: its URN, type, parent, inputs (secrets as the
export shows them decrypted: the secret signature with the plaintext JSON), outputs (a component's
registered outputs, a custom resource's mock answer) and its provider reference (`<urn>::<id>`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mldiag.engine.runtime import PlanResult

SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270"
PROVIDER_ID = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def secret(value: Any) -> dict[str, Any]:
    return {SECRET_SIG: SECRET_VALUE, "plaintext": json.dumps(value)}


def export_of(plan: PlanResult, *, drop_records: bool = False) -> dict[str, Any]:
    """The deployment of a stack deployed as planned (`drop_records`: as before components recorded
    verifyRecord)."""
    resources = []
    for r in plan.resources:
        inputs = {k: secret(v) if k in r.secret_digests else v for k, v in r.unmasked_inputs.items()}
        outputs = dict(r.outputs) if not r.custom else {**r.unmasked_inputs, **r.outputs}
        if drop_records:
            outputs.pop("verifyRecord", None)
        entry: dict[str, Any] = {
            "urn": r.urn,
            "custom": r.custom,
            "type": r.type,
            "inputs": inputs,
            "outputs": outputs,
        }
        if r.parent:
            entry["parent"] = r.parent
        if r.provider:
            entry["provider"] = f"{r.provider}::{PROVIDER_ID}"
        resources.append(entry)
    return {"version": 3, "deployment": {"manifest": {}, "resources": resources}}


def fake_pulumi(bin_dir: Path, exports: dict[str, dict[str, Any]]) -> Path:
    """A `pulumi` executable in bin_dir answering `stack export --show-secrets --stack NAME` with the export
    given for NAME (and an error naming the stack otherwise); put bin_dir first on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    data = bin_dir / "exports.json"
    data.write_text(json.dumps(exports))
    exe = bin_dir / "pulumi"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        "if args[:2] != ['stack', 'export'] or '--show-secrets' not in args or '--stack' not in args:\n"
        "    sys.exit('unexpected: pulumi ' + ' '.join(args))\n"
        "name = args[args.index('--stack') + 1]\n"
        f"exports = json.load(open({str(data)!r}))\n"
        "if name not in exports:\n"
        "    sys.exit(f\"error: no stack named '{name}' found\")\n"
        "print(json.dumps(exports[name]))\n"
    )
    exe.chmod(0o755)
    return exe
