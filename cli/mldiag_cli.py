"""The `mldiag` console script: runs the command line of the checkout it is installed from.

The program (program/) and its tools (tools/) are not a package of their own: they work on this
repository's stacks/ and policies/. This launcher is installed editable from cli/ (requirements.txt), so it
finds the checkout beside it and runs `tools.cli` there.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def main() -> int:
    if not (CHECKOUT / "Pulumi.yaml").exists():
        print(f"mldiag: {CHECKOUT} is not an ml-diagnostics checkout (no Pulumi.yaml)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(CHECKOUT))
    from tools.cli import run

    run(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
