"""Benchmark: offline plan cost vs the SDK floor, for generated stacks of 1, 10, 100 and 500 targets.

For each size N it generates a stack with N self-managed Kubernetes targets (manual install + Diagon +
an opted-in namespace) and runs, each in a fresh subprocess under the plan's mock runtime:

- plan:  the real program (config validation, components, typed SDK resources);
- plain: a bare program registering the same resources (types, names, parents and inputs replayed from
         the plan's recording) as plain `CustomResource`/`ComponentResource` objects: the SDK floor for
         that many registrations;
- typed: the same replay through the typed SDK classes (`DaemonSet`, `Release`, ...) from a flat loop:
         what the SDK costs for these resource types with none of our code around it.

Time is the fastest of --repeat runs after one warm-up run (imports and first-use schema builds
excluded); memory is the peak RSS growth during the first measured run. The policy pack pass is reported separately.
Prints figures and ratios; asserts nothing.

    .venv/bin/python tools/bench_plan.py [--sizes 1,10,100,500] [--no-policies]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REPEAT = 3
DIAGON_IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"


def target(i: int) -> dict:
    return {
        "name": f"c{i}",
        "context": f"ctx-{i}",
        "mode": "manual",
        "workloadNamespaces": [{"name": "ai-workloads", "create": True}],
        "manualInstall": {"jaxVersion": "0.9"},
        "diagon": {"enabled": True, "image": DIAGON_IMAGE},
    }


def stack_config(n: int) -> dict:
    return {
        "ml-diagnostics:environment": "dev",
        "ml-diagnostics:kubernetesClusters": [target(i) for i in range(n)],
    }


REPLAY_PROGRAM = """
import json, os, re
import pulumi

typed = os.environ["BENCH_KIND"] == "typed"
if typed:
    from pulumi_kubernetes.apps.v1 import DaemonSet
    from pulumi_kubernetes.core.v1 import Namespace, NamespacePatch, ServiceAccount
    from pulumi_kubernetes.helm.v3 import Release
    from pulumi_kubernetes.provider import Provider

    CLASSES = {
        "kubernetes:apps/v1:DaemonSet": DaemonSet,
        "kubernetes:core/v1:Namespace": Namespace,
        "kubernetes:core/v1:NamespacePatch": NamespacePatch,
        "kubernetes:core/v1:ServiceAccount": ServiceAccount,
        "kubernetes:helm.sh/v3:Release": Release,
        "pulumi:providers:kubernetes": Provider,
    }

def snake(key):
    return re.sub(r"(?<!^)([A-Z])", r"_\\1", key).lower()

made = {}
for r in json.load(open(os.environ["BENCH_SHAPE"])):
    opts = pulumi.ResourceOptions(parent=made.get(r["parent"]))
    if not r["custom"]:
        made[r["urn"]] = c = pulumi.ComponentResource(r["type"], r["name"], None, opts=opts)
        c.register_outputs({})
    elif typed:
        args = {snake(k): v for k, v in r["inputs"].items() if k not in ("apiVersion", "kind")}
        made[r["urn"]] = CLASSES[r["type"]](r["name"], opts=opts, **args)
    elif r["type"].startswith("pulumi:providers:"):
        made[r["urn"]] = pulumi.ProviderResource(r["type"].split(":")[-1], r["name"], dict(r["inputs"]), opts)
    else:
        made[r["urn"]] = pulumi.CustomResource(r["type"], r["name"], dict(r["inputs"]), opts=opts)
"""


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _shape(result) -> list[dict]:
    return [
        {
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "custom": r.custom,
            "parent": r.parent,
            "inputs": {k: v for k, v in r.unmasked_inputs.items() if k != "__provider"},
        }
        for r in result.resources
    ]


def _best(run) -> tuple[float, object]:
    """Fastest of BENCH_REPEAT runs (the machine's noise only ever adds time); peak RSS is the first run's."""
    best, result = float("inf"), None
    for _ in range(int(os.environ.get("BENCH_REPEAT", "3"))):
        t0 = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - t0)
    return best, result


def measure(kind: str, n: int, shape_dir: str) -> dict:
    """Runs inside the child process: one warm-up run, then the measured run."""
    from tools.plan_runtime import run_config

    shapes = Path(shape_dir)
    if kind == "plan":
        run_config(stack_config(1), (), stack="bench")
        before = _rss_mb()
        seconds, result = _best(lambda: run_config(stack_config(n), (), stack="bench"))
        out = {"seconds": seconds, "rss_growth_mb": _rss_mb() - before}
        out["resources"] = len(result.resources)
        (shapes / "shape.json").write_text(json.dumps(_shape(result)))
        (shapes / "warmup.json").write_text(
            json.dumps(_shape(run_config(stack_config(1), (), stack="bench")))
        )
        if os.environ.get("BENCH_POLICIES") == "1":
            from tools.analyzer import load_pack_config, run_policies

            t1 = time.perf_counter()
            pack_config = load_pack_config(ROOT / "policies" / "config" / "dev.json")
            run_policies(result.resources, pack_config, "ml-diagnostics", "bench")
            out["policy_seconds"] = time.perf_counter() - t1
        return out
    program = Path(tempfile.mkdtemp()) / "__main__.py"
    program.write_text(REPLAY_PROGRAM)
    os.environ["BENCH_KIND"] = kind
    os.environ["BENCH_SHAPE"] = str(shapes / "warmup.json")
    run_config({}, (), stack="bench", program=program)
    os.environ["BENCH_SHAPE"] = str(shapes / "shape.json")
    before = _rss_mb()
    seconds, result = _best(lambda: run_config({}, (), stack="bench", program=program))
    return {
        "seconds": seconds,
        "rss_growth_mb": _rss_mb() - before,
        "resources": len(result.resources),
    }


def child(kind: str, n: int, shape_dir: str, policies: bool) -> dict:
    env = dict(
        os.environ, PYTHONPATH=str(ROOT), BENCH_POLICIES="1" if policies else "0", BENCH_REPEAT=str(REPEAT)
    )
    cmd = [sys.executable, __file__, "--child", kind, str(n), shape_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child ({kind}, {n}) failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, kind, n, shape_dir = sys.argv
        print(json.dumps(measure(kind, int(n), shape_dir)))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1,10,100,500")
    p.add_argument("--no-policies", action="store_true")
    p.add_argument("--repeat", type=int, default=3, help="measured runs per figure; the fastest counts")
    args = p.parse_args()
    global REPEAT
    REPEAT = max(1, args.repeat)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"{'targets':>7} {'resources':>9} | {'plan s':>7} {'plain s':>7} {'typed s':>7} | "
        f"{'/plain':>6} {'/typed':>6} | {'plan MB':>7} {'plain MB':>8} {'typed MB':>8} | "
        f"{'/plain':>6} {'/typed':>6} | {'ms/target':>9} {'policy s':>8}"
    )
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as shape_dir:
            plan = child("plan", n, shape_dir, not args.no_policies)
            plain = child("plain", n, shape_dir, False)
            typed = child("typed", n, shape_dir, False)
        rows.append((n, plan))
        print(
            f"{n:>7} {plan['resources']:>9} | {plan['seconds']:>7.2f} {plain['seconds']:>7.2f} "
            f"{typed['seconds']:>7.2f} | {_ratio(plan['seconds'], plain['seconds']):>6.2f} "
            f"{_ratio(plan['seconds'], typed['seconds']):>6.2f} | {plan['rss_growth_mb']:>7.1f} "
            f"{plain['rss_growth_mb']:>8.1f} {typed['rss_growth_mb']:>8.1f} | "
            f"{_ratio(plan['rss_growth_mb'], plain['rss_growth_mb']):>6.2f} "
            f"{_ratio(plan['rss_growth_mb'], typed['rss_growth_mb']):>6.2f} | "
            f"{1000 * plan['seconds'] / n:>9.1f} {plan.get('policy_seconds', float('nan')):>8.2f}",
            flush=True,
        )
    if len(rows) >= 2:
        (n0, r0), (n1, r1) = rows[0], rows[-1]
        per0, per1 = r0["seconds"] / n0, r1["seconds"] / n1
        print(
            f"\ncost per target {1000 * per0:.1f} ms at {n0} vs {1000 * per1:.1f} ms at {n1} "
            f"(x{per1 / per0:.2f}; 1.00 = linear)"
        )


if __name__ == "__main__":
    main()
