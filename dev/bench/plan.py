"""Benchmark: offline plan cost vs the SDK floor, and the policy pack's cost, for generated stacks.

For each size N it generates a stack with N self-managed Kubernetes targets (manual install + Diagon +
an opted-in namespace) and measures, every figure in fresh subprocesses:

- plan:  the real program (config validation, components, typed SDK resources);
- plain: a bare program registering the same resources (types, names, parents, providers, dependencies
         and inputs replayed from the plan's recording) as plain `CustomResource`/`ComponentResource`
         objects: the SDK floor for that many registrations;
- typed: the same replay through the typed SDK classes (`DaemonSet`, `Release`, ...) from a flat loop:
         what the SDK costs for these resource types with none of our code around it;
- pack:  the policy pack over the Analyzer protocol, as the CLI drives it: Analyze once per analyzed
         (custom) resource, then one AnalyzeStack; ms per analyzed resource for the loop, AnalyzeStack
         seconds and request size, ms per resource for both, the pack process's peak memory;
- floor: the same policies (names, levels, option schemas) with validate functions that do nothing, over
         the same protocol: what pulumi-policy and gRPC cost before any rule runs.

Each figure is the fastest of --repeat fresh processes (noise only ever adds time), the jobs of one size
taking turns so that a change in the machine's load falls on all of them alike. A plan/plain/typed process
does one warm-up run (imports and first-use schema builds excluded) and one measured run; memory is that
run's peak RSS over the process's RSS before it (so no earlier run is alive). A pack process starts the
pack and makes two passes over the same requests (the first warms it), its client's own heap frozen.
Growth compares the cost per unit between consecutive sizes (1.00 = linear). Prints figures and ratios;
asserts nothing.

    .venv/bin/python -m dev.bench.plan [--sizes 10,100,500,1000] [--repeat 3] [--no-policies] [--no-floor]
    .venv/bin/python -m dev.bench.plan --gc [--sizes ...]   # run_config's garbage-collection modes
    .venv/bin/python -m dev.bench.plan --base 59803d7      # side by side with a commit (checked out in a
                                                              # temporary worktree) or a checkout, interleaved
    .venv/bin/python -m dev.bench.plan --root /tmp/base     # another checkout alone

A checkout's plan rows run its program and runtime; its pack rows run its `policies/` on the requests this
checkout's program records, through this checkout's analyzer client, so packs are compared on identical
requests. The floors (plain, typed, no-op pack) are this checkout's. This module runs the measurements and
prints the tables; each measurement is plan_child.py, in a fresh process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from itertools import pairwise
from pathlib import Path

from dev.bench.plan_child import GC_MODES

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("plan_child.py")


def child(kind: str, n: int, shape_dir: str, code_root: Path, extra: dict | None = None) -> dict:
    """One measurement in a fresh interpreter. `code_root`: whose program and runtime are imported."""
    from dev.bench.worktree import python_path

    env = dict(os.environ, PYTHONPATH=python_path(code_root), **(extra or {}))
    cmd = [sys.executable, str(CHILD), kind, str(n), shape_dir, str(code_root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=code_root, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child ({kind}, {n}) failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


Job = tuple[str, int, str, Path, dict | None]  # kind, targets, scratch dir, code root, extra environment


def interleaved(jobs: dict[str, Job], repeat: int) -> dict[str, dict]:
    """Each job `repeat` times in fresh processes, the jobs taking turns (a change in the machine's load
    falls on all of them alike). Per job the fastest run counts (noise only ever adds time); memory is the
    lowest peak."""
    runs: dict[str, list[dict]] = {label: [] for label in jobs}
    for _ in range(repeat):
        for label, job in jobs.items():
            runs[label].append(child(*job))
    return {label: _fastest(found) for label, found in runs.items()}


def _fastest(runs: list[dict]) -> dict:
    if "loop_seconds" in runs[0]:  # pack runs: the fastest Analyze loop and the fastest AnalyzeStack
        best = dict(min(runs, key=lambda r: r["loop_seconds"]))
        best["stack_seconds"] = min(r["stack_seconds"] for r in runs)
        best["pack_peak_mb"] = min(r["pack_peak_mb"] for r in runs)
        return best
    best = dict(min(runs, key=lambda r: r["seconds"] + r.get("tail_seconds", 0.0)))
    best["rss_growth_mb"] = min(r["rss_growth_mb"] for r in runs)
    return best


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def growth(label: str, rows: list[tuple[int, float]], unit: str) -> None:
    """Cost per unit at each size, and its factor between consecutive sizes (1.00 = linear)."""
    parts = [f"{v:.3f} {unit} at {n}" for n, v in rows]
    steps = [f"x{_ratio(b, a):.2f} ({n0}->{n1})" for (n0, a), (n1, b) in pairwise(rows)]
    print(f"{label}: {', '.join(parts)}; growth {', '.join(steps)} (1.00 = linear)")


def run_plan_table(sizes: list[int], repeat: int, checkouts: dict[str, Path]) -> None:
    """Plan vs the SDK floors; one row per checkout (the floors replay this checkout's first plan's shape)."""
    print(
        f"{'code':>5} {'targets':>7} {'resources':>9} | {'plan s':>7} {'plain s':>7} {'typed s':>7} | "
        f"{'/plain':>6} {'/typed':>6} | {'plan MB':>7} {'plain MB':>8} {'typed MB':>8} | "
        f"{'/plain':>6} {'/typed':>6} | {'ms/target':>9} {'gc s':>5}"
    )
    own = list(checkouts.values())[-1]
    rows: dict[str, list[tuple[int, float]]] = {label: [] for label in checkouts}
    for n in sizes:
        with tempfile.TemporaryDirectory() as shape_dir:
            # a first plan writes the shape the floors replay
            child("plan", n, shape_dir, own)
            jobs = {label: ("plan", n, shape_dir, root, None) for label, root in checkouts.items()}
            jobs |= {"plain": ("plain", n, shape_dir, own, None), "typed": ("typed", n, shape_dir, own, None)}
            found = interleaved(jobs, repeat)
        plain, typed = found["plain"], found["typed"]
        for label in checkouts:
            plan = found[label]
            rows[label].append((n, 1000 * plan["seconds"] / n))
            print(
                f"{label:>5} {n:>7} {plan['resources']:>9} | {plan['seconds']:>7.2f} {plain['seconds']:>7.2f} "
                f"{typed['seconds']:>7.2f} | {_ratio(plan['seconds'], plain['seconds']):>6.2f} "
                f"{_ratio(plan['seconds'], typed['seconds']):>6.2f} | {plan['rss_growth_mb']:>7.1f} "
                f"{plain['rss_growth_mb']:>8.1f} {typed['rss_growth_mb']:>8.1f} | "
                f"{_ratio(plan['rss_growth_mb'], plain['rss_growth_mb']):>6.2f} "
                f"{_ratio(plan['rss_growth_mb'], typed['rss_growth_mb']):>6.2f} | "
                f"{rows[label][-1][1]:>9.1f} {plan['gc_seconds']:>5.2f}",
                flush=True,
            )
        if "base" in found:
            this, base = found["this"], found["base"]
            print(
                f"{'':>5} {n:>7} this/base: plan time x{_ratio(this['seconds'], base['seconds']):.2f}, "
                f"memory x{_ratio(this['rss_growth_mb'], base['rss_growth_mb']):.2f}",
                flush=True,
            )
    if len(sizes) >= 2:
        for label, found_rows in rows.items():
            growth(f"plan cost per target ({label})", found_rows, "ms")


def run_pack_table(sizes: list[int], repeat: int, checkouts: dict[str, Path], floor: bool) -> None:
    """Each checkout's policies/ over the protocol on the same requests (this checkout's program)."""
    print("\npolicy pack over the Analyzer protocol (dev levels and options); floor: no-op rules")
    for label, root in checkouts.items():
        print(f"  {label}: {root / 'policies'}")
    print(
        f"{'code':>5} {'targets':>7} {'resources':>9} {'analyzed':>8} | {'ms/analyzed':>11} {'stack s':>7} "
        f"{'req MB':>6} {'ms/resource':>11} {'pack MB':>7} | {'floor ms/an':>11} {'floor st s':>10} | "
        f"{'findings':>8}"
    )
    per_analyzed: dict[str, list] = {label: [] for label in checkouts}
    per_stack: dict[str, list] = {label: [] for label in checkouts}
    own = list(checkouts.values())[-1] / "policies"
    with tempfile.TemporaryDirectory() as scratch:
        for n in sizes:
            # two passes per pack process (the first warms its caches), `repeat` processes each
            jobs: dict[str, Job] = {
                label: (
                    "pack",
                    n,
                    scratch,
                    ROOT,
                    {"BENCH_PACK_DIR": str(root / "policies"), "BENCH_PASSES": "2"},
                )
                for label, root in checkouts.items()
            }
            if floor:
                jobs["floor"] = ("floor", n, scratch, ROOT, {"BENCH_PACK_DIR": str(own), "BENCH_PASSES": "2"})
            found = interleaved(jobs, repeat)
            low = found.get("floor")
            fl_an = 1000 * low["loop_seconds"] / low["analyzed"] if low else float("nan")
            fl_st = low["stack_seconds"] if low else float("nan")
            for label in checkouts:
                pack = found[label]
                ms_an = 1000 * pack["loop_seconds"] / pack["analyzed"]
                ms_res = 1000 * (pack["loop_seconds"] + pack["stack_seconds"]) / pack["resources"]
                per_analyzed[label].append((n, ms_an))
                per_stack[label].append((n, 1000 * pack["stack_seconds"] / pack["resources"]))
                print(
                    f"{label:>5} {n:>7} {pack['resources']:>9} {pack['analyzed']:>8} | {ms_an:>11.3f} "
                    f"{pack['stack_seconds']:>7.2f} {pack['request_mb']:>6.1f} {ms_res:>11.3f} "
                    f"{pack['pack_peak_mb']:>7.0f} | {fl_an:>11.3f} {fl_st:>10.2f} | {pack['findings']:>8}",
                    flush=True,
                )
            if "base" in checkouts:
                (n0, this_an), (_, base_an) = per_analyzed["this"][-1], per_analyzed["base"][-1]
                this_st, base_st = per_stack["this"][-1][1], per_stack["base"][-1][1]
                print(
                    f"{'':>5} {n0:>7} this/base: ms/analyzed x{_ratio(this_an, base_an):.2f}, "
                    f"AnalyzeStack x{_ratio(this_st, base_st):.2f}",
                    flush=True,
                )
    if len(sizes) >= 2:
        for label in checkouts:
            growth(f"pack Analyze per analyzed resource ({label})", per_analyzed[label], "ms")
            growth(f"pack AnalyzeStack per resource ({label})", per_stack[label], "ms")


def run_gc_table(sizes: list[int], repeat: int, checkouts: dict[str, Path]) -> None:
    """This checkout's run_config under each of GC_MODES; another checkout's as it is built."""
    own = list(checkouts.values())[-1]
    modes = list(GC_MODES)
    print(f"plan under each garbage-collection mode of run_config ({own})")
    print("run: run_config; after: the JSON report built next, then the full collection the run still owes")
    print(
        f"{'targets':>7} {'mode':>22} | {'run s':>6} {'after s':>8} {'total s':>7} {'ms/target':>9} "
        f"{'gc s':>6} {'full gcs':>8} | {'MB':>7}"
    )
    for n in sizes:
        with tempfile.TemporaryDirectory() as shape_dir:
            jobs: dict[str, Job] = {
                f"{label} (as built)": ("plan", n, shape_dir, root, {"BENCH_GC": ""})
                for label, root in checkouts.items()
                if root != own
            }
            jobs |= {mode: ("plan", n, shape_dir, own, {"BENCH_GC": mode}) for mode in modes}
            found = interleaved(jobs, repeat)
        totals = {}
        for mode, r in found.items():
            totals[mode] = total = r["seconds"] + r["tail_seconds"]
            print(
                f"{n:>7} {mode or '(as built)':>22} | {r['seconds']:>6.2f} {r['tail_seconds']:>8.2f} "
                f"{total:>7.2f} {1000 * total / n:>9.1f} {r['gc_seconds']:>6.2f} {r['gc_full']:>8} | "
                f"{r['rss_growth_mb']:>7.1f}",
                flush=True,
            )
        print(f"{'':>7} fastest at {n}: {min(totals, key=totals.__getitem__) or '(as built)'}")


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m dev.bench.plan", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10,100,500,1000", help="numbers of targets, comma-separated")
    p.add_argument("--repeat", type=int, default=3, help="measured runs per figure; the fastest counts")
    p.add_argument("--no-policies", action="store_true", help="skip the policy pack figures")
    p.add_argument("--no-floor", action="store_true", help="skip the no-op pack (protocol floor)")
    p.add_argument("--no-plan", action="store_true", help="only the policy pack figures")
    p.add_argument("--gc", action="store_true", help="compare run_config's garbage-collection modes")
    p.add_argument("--root", type=Path, default=ROOT, help="checkout whose program, runtime and pack run")
    p.add_argument(
        "--base",
        help="another checkout (a directory), or a commit checked out in a temporary worktree, measured "
        "side by side with --root, runs interleaved; ratios this/base are printed after the tables",
    )
    args = p.parse_args()
    from dev.bench.worktree import checkout

    with contextlib.ExitStack() as stack:
        checkouts = {"this": args.root.resolve()}
        if args.base:
            checkouts = {"base": stack.enter_context(checkout(args.base)), "this": args.root.resolve()}
        run(args, checkouts)


def run(args: argparse.Namespace, checkouts: dict[str, Path]) -> None:
    repeat = max(1, args.repeat)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.gc:
        run_gc_table(sizes, repeat, checkouts)
        return
    if not args.no_plan:
        run_plan_table(sizes, repeat, checkouts)
    if not args.no_policies:
        run_pack_table(sizes, repeat, checkouts, not args.no_floor)


if __name__ == "__main__":
    main()
