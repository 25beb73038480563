"""Benchmark: the fleet rollout's own overhead at 10, 100 and 1,000 clusters, with the simulated executor.

For each size N it writes a scratch project (this program, linked; an environment stack file with N self-managed
Kubernetes targets, a fleet file that labels every target and rolls them out in four waves: a canary of one,
then 10 %, 30 % and the rest, at most 20 at a time) and measures:

- plan:    `planner.load`: the fleet file, the environment stack file validated as the program validates it,
           the waves resolved, every member's revision; "of it, stack file" is the environment stack file's
           part (read and validated: program/stack_file/ and program/config.py, not the fleet's code);
- rollout: `Rollout.run` over the simulated executor and clock (dev/fakes/fleet.py): every update and
           gate returns at once, so what is left is the orchestration: threads, records (tags) written and
           read back, the lease;
- rerun:   the same rollout again, everything done: what a resume costs before it reaches unfinished work.

With `--format json` also (one JSON row per size):
- workflow: `mldiag fleet workflow`'s files of the fleet (mldiag/fleet/workflow.py), their jobs, the largest
           job's configurations and the largest file's bytes (GitHub's limits: 256 and 512,000);
- member validate: what one member's update spends on its config (program/config.py `from_raw` of the
           member's config as the engine passes it: the check that the environment is the one validated when
           the member was derived, and its own target validated);
- peak: the largest peak of Python allocations of plan, rollout and workflow.

Time is the fastest of --repeat runs after one warm-up (a run of a figure under 50 ms is as many calls as take
that long, divided by their number); memory is the peak of Python allocations
(tracemalloc) during one more run of each. Prints the figures, per cluster, and the growth from one size to
the next (x10 clusters: about x10 is linear). Asserts nothing.

    .venv/bin/python -m dev.bench.fleet [--sizes 10,100,1000] [--repeat 3] [--format table|json]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZES = (10, 100, 1000)
REPEAT = 3
MAX_PARALLEL = 20


def write_project(root: Path, n: int) -> Path:
    """The scratch project of N clusters; returns its fleet file."""
    import yaml

    (root / "stacks").mkdir(parents=True)
    (root / "fleet").mkdir()
    from mldiag.fleet.planner import PROGRAM_PATHS

    for rel in PROGRAM_PATHS:  # the program the revisions digest: the real one
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).symlink_to(ROOT / rel)
    targets = [
        {
            "name": f"c{i:04d}",
            "context": f"ctx-{i}",
            "mode": "manual",
            "workloadNamespaces": [{"name": "ai-workloads", "create": True}],
            "manualInstall": {"jaxVersion": "0.9"},
            "diagon": {"enabled": False},
        }
        for i in range(n)
    ]
    config = {"ml-diagnostics:environment": "dev", "ml-diagnostics:kubernetesClusters": targets}
    (root / "stacks" / "Pulumi.bench.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    rings = ["canary"] + ["early"] * max(1, n // 10) + ["main"] * max(1, (n * 3) // 10)
    rings += ["rest"] * (n - len(rings))
    fleet = {
        "environment": "bench",
        "labels": {t["name"]: {"ring": ring} for t, ring in zip(targets, rings, strict=False)},
        "defaults": {"maxParallel": MAX_PARALLEL, "failureTolerance": "10%", "gate": {"verifyWait": "1m"}},
        "waves": [{"name": r, "selector": {"ring": r}} for r in dict.fromkeys(rings)],
    }
    path = root / "fleet" / "bench.yaml"
    path.write_text(yaml.safe_dump(fleet, sort_keys=False))
    return path


SAMPLE_SECONDS = 0.05
"""A figure shorter than this is timed over as many calls as make a sample this long (timeit's autorange), so a
sub-millisecond figure is not the timer's and the machine's noise."""


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    """The fastest of `repeat` samples, per call."""
    t0 = time.perf_counter()
    fn()  # warm-up
    calls = max(1, int(SAMPLE_SECONDS / max(time.perf_counter() - t0, 1e-6)))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return min(times)


def peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(n: int, repeat: int, extended: bool = False) -> dict[str, float]:
    from dev.fakes.fleet import SimulatedClock, SimulatedExecutor
    from mldiag.fleet.planner import load, read_environment, settle
    from mldiag.fleet.rollout import EXIT_OK, Options, Rollout

    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        fleet = write_project(Path(tmp), n)
        plan = load(fleet, Path(tmp))
        assert len(plan.members) == n

        def rollout(sim: SimulatedExecutor | None = None) -> SimulatedExecutor:
            sim = sim or SimulatedExecutor(clock=SimulatedClock())
            report = Rollout(
                plan, sim, sim.clock, options=Options(after_wave=settle)
            ).run()  # as `mldiag fleet run`
            assert report.exit_code == EXIT_OK, report.message
            return sim

        settle()  # as `mldiag fleet` does once its plan is made (mldiag/fleet/cli.py)
        done = rollout()
        out = {
            "plan_s": best_of(repeat, lambda: load(fleet, Path(tmp))),
            "env_s": best_of(repeat, lambda: read_environment(Path(tmp), "bench")),
            "rollout_s": best_of(repeat, rollout),
            "rerun_s": best_of(repeat, lambda: rollout(done)),
            "plan_bytes": peak_bytes(lambda: load(fleet, Path(tmp))),
            "rollout_bytes": peak_bytes(rollout),
        }
        if extended:
            out.update(_workflow_and_member(plan, Path(tmp), repeat))
        gc.unfreeze()
        return out


def _workflow_and_member(plan: Any, project: Path, repeat: int) -> dict[str, float]:
    import yaml

    from mldiag.fleet import workflow
    from mldiag.fleet.executor import Workspaces
    from program.config import from_raw

    def generate() -> dict[str, str]:
        return workflow.rollout_files(plan, "fleet/bench.yaml", "bench")

    files = generate()
    jobs = [j for text in files.values() for j in yaml.safe_load(text)["jobs"].values()]
    member = plan.waves[-1].members[-1]
    written = Workspaces(plan, project).member_config_written(member)
    raw = {k: v if isinstance(v, str) else json.dumps(v) for k, v in written.items()}
    return {
        "workflow_s": best_of(repeat, generate),
        "workflow_bytes": peak_bytes(generate),
        "workflow_jobs": len(jobs),
        "workflow_max_configurations": max(
            (len(j["strategy"]["matrix"]["include"]) for j in jobs if "strategy" in j), default=0
        ),
        "workflow_max_file_bytes": max(len(t.encode()) for t in files.values()),
        "member_validate_s": best_of(repeat, lambda: from_raw(raw, [], member.stack, project_dir=project)),
    }


def growth(label: str, values: list[tuple[int, float]]) -> str:
    steps = [
        f"x{b / a:.2f} for x{nb / na:g} clusters ({na}->{nb})"
        for (na, a), (nb, b) in zip(values, values[1:], strict=False)
        if a > 0
    ]
    return f"  {label:<22} " + ", ".join(steps)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dev.bench.fleet",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.epilog = __doc__.split("\n\n", 1)[1]
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="cluster counts (default 10,100,1000)")
    ap.add_argument("--repeat", type=int, default=REPEAT, help="timed runs per figure, the fastest counts")
    ap.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="json: one row per size, with the workflow's",
    )
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes: {args.sizes!r} is not a list of whole numbers like 10,100,1000")
    if any(s < 4 for s in sizes):
        ap.error(f"--sizes: {args.sizes!r}: each size is at least 4 (a cluster per wave)")
    if args.repeat < 1:
        ap.error(f"--repeat: {args.repeat} is less than 1")
    if args.format == "json":
        for n in sizes:
            r = measure(n, args.repeat, extended=True)
            row = {
                "clusters": n,
                "plan_s": round(r["plan_s"], 4),
                "rollout_s": round(r["rollout_s"], 6),
                "rerun_s": round(r["rerun_s"], 6),
                "workflow_s": round(r["workflow_s"], 6),
                "peak_mb": round(max(r["plan_bytes"], r["rollout_bytes"], r["workflow_bytes"]) / 2**20, 2),
                "workflow_jobs": int(r["workflow_jobs"]),
                "workflow_max_configurations": int(r["workflow_max_configurations"]),
                "workflow_max_file_bytes": int(r["workflow_max_file_bytes"]),
                "member_validate_s": round(r["member_validate_s"], 6),
            }
            print(json.dumps(row), flush=True)
        return 0

    print(
        f"fleet orchestration, simulated executor (4 waves, at most {MAX_PARALLEL} at a time), best of {args.repeat}"
    )
    header = (
        f"{'clusters':>8}  {'plan ms':>9} {'per cl':>8} {'of it, stack file':>17}  {'rollout ms':>10} {'per cl':>8}  {'rerun ms':>9} "
        f"{'per cl':>8}  {'plan KiB/cl':>11} {'rollout KiB/cl':>14}"
    )
    print(header)
    rows = []
    for n in sizes:
        r = measure(n, args.repeat)
        rows.append((n, r))
        print(
            f"{n:>8}  {r['plan_s'] * 1e3:>9.1f} {r['plan_s'] * 1e3 / n:>8.3f} {r['env_s'] * 1e3:>17.1f}  "
            f"{r['rollout_s'] * 1e3:>10.1f} "
            f"{r['rollout_s'] * 1e3 / n:>8.3f}  {r['rerun_s'] * 1e3:>9.1f} {r['rerun_s'] * 1e3 / n:>8.3f}  "
            f"{r['plan_bytes'] / 1024 / n:>11.1f} {r['rollout_bytes'] / 1024 / n:>14.1f}",
            flush=True,
        )
    if len(rows) > 1:
        print("growth from one size to the next (as many times as the clusters is linear)")
        for key, label in (
            ("plan_s", "plan time"),
            ("env_s", "of it, stack file"),
            ("rollout_s", "rollout time"),
            ("rerun_s", "rerun time"),
            ("plan_bytes", "plan peak memory"),
            ("rollout_bytes", "rollout peak memory"),
        ):
            print(growth(label, [(n, r[key]) for n, r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
