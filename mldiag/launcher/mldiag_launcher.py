"""The `mldiag` console script: runs the command line (mldiag/) of the checkout it is installed from.

The product CLI works on its checkout's stacks/, fleet/ and policies/, so it is not installed as a package of
its own: this launcher, installed editable from mldiag/launcher (requirements.txt), puts the checkout on the
path and runs `mldiag.cli` there.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def main() -> int:
    if not (CHECKOUT / "Pulumi.yaml").exists():
        print(f"mldiag: {CHECKOUT} is not an ml-diagnostics checkout (no Pulumi.yaml)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(CHECKOUT))
    from mldiag.cli import run

    run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
