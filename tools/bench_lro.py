"""Long-running operation polling: our backoff vs Terraform's fixed interval.

For operations lasting 5 s, 60 s and 600 s (simulated clock, against the loopback Vertex fake over real
HTTP), counts the polling requests and how late completion is noticed:

- ours: `GoogleRestClient.wait_operation` (first poll after ~1 s, interval x1.5 up to 20 s, 10 % jitter)
- fixed: first poll after 2 s, then every 10 s (how the Terraform provider polls operations)

Table 1 uses the exact durations. Durations that are whole multiples of 10 s favour the fixed poller
(it polls at 2 s + 10k s), so table 2 spreads each duration uniformly over [D - 5 s, D + 5 s).

Run: .venv/bin/python tools/bench_lro.py [--trials N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ml_diagnostics.providers import google_rest  # noqa: E402
from ml_diagnostics.providers.google_rest import VERTEX  # noqa: E402
from tests.fakes.vertex_api import FakeVertexApi, SimulatedClock  # noqa: E402

DURATIONS = (5.0, 60.0, 600.0)


class JitterClock(SimulatedClock):
    def __init__(self, seed: int):
        super().__init__()
        self._rnd = random.Random(seed)

    def random(self) -> float:
        return self._rnd.random()


def _run(api: FakeVertexApi, duration: float, strategy: str, seed: int) -> tuple[int, float]:
    """One operation of `duration` simulated seconds; returns (polls, seconds between done and noticed)."""
    clock = JitterClock(seed)
    api.clock, api.operation_seconds = clock, duration
    cluster = f"projects/p/locations/us-central1/modelDevelopmentClusters/b{len(api.operations)}"
    api.put_cluster(cluster, {})
    client = google_rest.client(f"{api.endpoint}/v1beta1", {"emulator": True}, clock=clock)
    op = client.request("DELETE", cluster)
    if strategy == "ours":
        client.wait_operation(op, 7200, style=VERTEX)
    else:
        clock.sleep(2.0)
        while not client.request("GET", op["name"]).get("done"):
            clock.sleep(10.0)
    client.close()
    rec = api.operations[op["name"]]
    assert rec.noticed_at is not None
    return rec.polls, rec.noticed_at - rec.done_at


def _table(api: FakeVertexApi, trials: int, spread: float) -> None:
    hdr = (
        f"{'operation':>9} | {'ours polls':>10} | {'ours late s':>15} | {'fixed polls':>11} | "
        f"{'fixed late s':>15} | {'polls ratio':>11} | {'late ratio':>10}"
    )
    print(hdr)
    print("-" * len(hdr))
    for d in DURATIONS:
        rnd = random.Random(int(d))
        durations = [d + (rnd.random() - 0.5) * spread for _ in range(trials)]
        ours = [_run(api, x, "ours", i) for i, x in enumerate(durations)]
        fixed = [_run(api, x, "fixed", i) for i, x in enumerate(durations)]
        op, ol = statistics.mean(p for p, _ in ours), statistics.mean(lat for _, lat in ours)
        fp, fl = statistics.mean(p for p, _ in fixed), statistics.mean(lat for _, lat in fixed)
        print(
            f"{d:>8.0f}s | {op:>10.1f} | {ol:>6.2f} [{max(lat for _, lat in ours):>6.2f}] | {fp:>11.1f} | "
            f"{fl:>6.2f} [{max(lat for _, lat in fixed):>6.2f}] | {op / fp:>10.2f}x | {ol / fl:>9.2f}x"
        )
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="runs per case (jitter seeds; default 20)")
    args = ap.parse_args()
    with FakeVertexApi(SimulatedClock()) as api:
        print(f"LRO polling on a simulated clock, {args.trials} runs per case: mean [max]")
        print()
        print("1. exact durations")
        _table(api, args.trials, 0.0)
        print("2. durations spread uniformly over [D - 5 s, D + 5 s)")
        _table(api, args.trials, 10.0)
    print(
        "ratios are ours / fixed: below 1 means fewer requests or earlier notice than the fixed 2 s + 10 s poller"
    )


if __name__ == "__main__":
    main()
