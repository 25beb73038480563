"""Writes the policy pack's copies of what it shares with the library, byte for byte (the pack must run from
a copy of policies/ alone): the version rules (compat.py), and the cert-manager chart's values schemas with
the module that checks values against them (cert_manager_schema.py, cert_manager_schema.json), from
components/ml_diagnostics/ into policies/mldiag_policy/.

    python -m dev.gen.pack_compat           # write the copies
    python -m dev.gen.pack_compat --check   # exit 1 when a copy differs
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIR = ROOT / "components" / "ml_diagnostics"
COPY_DIR = ROOT / "policies" / "mldiag_policy"
SHARED = ("compat.py", "cert_manager_schema.py", "cert_manager_schema.json")


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = [
            n
            for n in SHARED
            if not (COPY_DIR / n).exists() or (COPY_DIR / n).read_bytes() != (SOURCE_DIR / n).read_bytes()
        ]
        for name in stale:
            print(f"{(COPY_DIR / name).relative_to(ROOT)} differs: run python -m dev.gen.pack_compat")
        if not stale:
            print("the pack's copies are current")
        return 1 if stale else 0
    if argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for name in SHARED:
        (COPY_DIR / name).write_bytes((SOURCE_DIR / name).read_bytes())
        print(f"wrote {(COPY_DIR / name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
