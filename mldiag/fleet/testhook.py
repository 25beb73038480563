"""A test hook of the e2e tier (tests/e2e/test_fleet_faults.py), not a user option: with
`MLDIAG_FLEET_TEST_KILL=<step>` set, the rollout process kills its own process group with SIGKILL when it
reaches that step, as a dying CI runner would, so a test can stop a real rollout at a chosen point:

    lease               while the coordination stack's update writes the first lease (its lock held)
    leased              right after the lease is taken, before any wave
    update:<stack>      right after the member's `deploying` record is written, before its `pulumi up`
    gate:<stack>        when the member's gate starts (its update done, its record still `deploying`)
    soak:<wave>         when the wave's soak starts (even one its gate's verify already outlasted)
    tag:<stack>         before the member's `verified` or `failed` record is written

Unset (always, outside that test), `stop` does nothing.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "MLDIAG_FLEET_TEST_KILL"


def stop(step: str) -> None:
    if os.environ.get(VARIABLE) == step:
        os.killpg(os.getpgrp(), signal.SIGKILL)
