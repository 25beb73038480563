"""Writes the policy pack's copy of the version rules: policies/mldiag_policy/compat.py := the library's
components/ml_diagnostics/compat.py, byte for byte (the pack must run from a copy of policies/ alone).

    python -m dev.gen.pack_compat           # write the copy
    python -m dev.gen.pack_compat --check   # exit 1 when the copy differs
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "components" / "ml_diagnostics" / "compat.py"
COPY = ROOT / "policies" / "mldiag_policy" / "compat.py"


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        same = COPY.read_bytes() == SOURCE.read_bytes()
        print(
            "compat copy is current"
            if same
            else f"{COPY.relative_to(ROOT)} differs: run python -m dev.gen.pack_compat"
        )
        return 0 if same else 1
    if argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    COPY.write_bytes(SOURCE.read_bytes())
    print(f"wrote {COPY.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
