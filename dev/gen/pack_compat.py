"""Writes the policy pack's copies of what it shares with the library, byte for byte (the pack must run from
a copy of policies/ alone): the version rules (compat.py), and the cert-manager chart's values schemas with
the module that checks values against them (cert_manager_schema.py, cert_manager_schema.json), from
components/ml_diagnostics/ into policies/mldiag_policy/.

    python -m dev.gen.pack_compat           # write the copies
    python -m dev.gen.pack_compat --check   # exit 1 when a copy is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

from dev.gen import write_or_check

ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIR = ROOT / "components" / "ml_diagnostics"
COPY_DIR = ROOT / "policies" / "mldiag_policy"
SHARED = ("compat.py", "cert_manager_schema.py", "cert_manager_schema.json")


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    wanted = {(COPY_DIR / n).relative_to(ROOT): (SOURCE_DIR / n).read_text() for n in SHARED}
    return write_or_check(
        argv, wanted, ROOT, "python -m dev.gen.pack_compat", "the pack's copies are current"
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
