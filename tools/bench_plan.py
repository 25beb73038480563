"""Benchmark: offline plan cost vs the SDK floor, for generated stacks of 1, 10, 100 and 500 targets.

For each size N it generates a stack with N self-managed Kubernetes targets (manual install + Diagon +
an opted-in namespace), runs the real program under the plan's mock runtime, and runs a bare program
that registers the same resources (types, names, parents and inputs replayed from the recording) as
plain `CustomResource`/`ComponentResource` objects under the same mocks: the floor any Pulumi program
pays for that many registrations. Each measurement is a fresh subprocess; time covers the program run
(imports excluded), memory is the peak RSS growth during the run. The policy pack pass is reported
separately. Prints figures and ratios; asserts nothing.

    .venv/bin/python tools/bench_plan.py [--sizes 1,10,100,500] [--no-policies]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def target(i: int) -> dict:
    return {
        "name": f"c{i}",
        "context": f"ctx-{i}",
        "mode": "manual",
        "workloadNamespaces": [{"name": "ai-workloads", "create": True}],
        "manualInstall": {"jaxVersion": "0.9"},
        "diagon": {
            "enabled": True,
            "image": "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0",
        },
    }


def stack_config(n: int) -> dict:
    return {
        "ml-diagnostics:environment": "dev",
        "ml-diagnostics:kubernetesClusters": [target(i) for i in range(n)],
    }


BARE_PROGRAM = """
import json, os
import pulumi
shape = json.load(open(os.environ["BENCH_SHAPE"]))
made = {}
for r in shape:
    opts = pulumi.ResourceOptions(parent=made.get(r["parent"]))
    if r["custom"]:
        made[r["urn"]] = pulumi.CustomResource(r["type"], r["name"], dict(r["inputs"]), opts=opts)
    else:
        made[r["urn"]] = c = pulumi.ComponentResource(r["type"], r["name"], None, opts=opts)
        c.register_outputs({})
"""


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(kind: str, n: int, shape: dict | None) -> dict:
    """Runs inside the child process."""
    import os

    from tools.plan_runtime import run_config

    if kind == "real":
        import components.config  # noqa: F401  (import cost is not part of the run)
        import components.kubernetes_cluster  # noqa: F401

        config, program = stack_config(n), None
    else:
        os.environ["BENCH_SHAPE"] = shape["file"]
        tmp = Path(tempfile.mkdtemp()) / "__main__.py"
        tmp.write_text(BARE_PROGRAM)
        config, program = {}, tmp
    # One warm-up run of the same program: first-use imports and schema builds are not per-target cost.
    t0 = time.perf_counter()
    if kind == "real":
        run_config(stack_config(1), (), stack="bench")
    else:
        os.environ["BENCH_SHAPE"] = shape["warmup"]
        run_config({}, (), stack="bench", program=program)
        os.environ["BENCH_SHAPE"] = shape["file"]
    cold = time.perf_counter() - t0
    before = _rss_mb()
    t0 = time.perf_counter()
    result = run_config(config, (), stack="bench", program=program)
    seconds = time.perf_counter() - t0
    out = {
        "seconds": seconds,
        "warmup_seconds": cold,
        "rss_growth_mb": _rss_mb() - before,
        "custom": sum(1 for r in result.resources if r.custom),
        "components": sum(1 for r in result.resources if not r.custom),
    }
    if kind == "real":
        shape_file = Path(tempfile.mkdtemp()) / "shape.json"
        shape_file.write_text(
            json.dumps(
                [
                    {
                        "urn": r.urn,
                        "type": r.type,
                        "name": r.name,
                        "custom": r.custom,
                        "parent": r.parent,
                        "inputs": {k: v for k, v in r.unmasked_inputs.items() if k != "__provider"},
                    }
                    for r in result.resources
                    if not r.type.startswith("pulumi:providers:")
                ]
            )
        )
        out["shape_file"] = str(shape_file)
        warm = run_config(stack_config(1), (), stack="bench")
        warm_file = shape_file.with_name("warmup.json")
        warm_file.write_text(
            json.dumps(
                [
                    {
                        "urn": r.urn,
                        "type": r.type,
                        "name": r.name,
                        "custom": r.custom,
                        "parent": r.parent,
                        "inputs": {k: v for k, v in r.unmasked_inputs.items() if k != "__provider"},
                    }
                    for r in warm.resources
                    if not r.type.startswith("pulumi:providers:")
                ]
            )
        )
        out["warmup_file"] = str(warm_file)
    if kind == "real" and os.environ.get("BENCH_POLICIES") == "1":
        from tools.analyzer import load_pack_config, run_policies

        t1 = time.perf_counter()
        run_policies(
            result.resources, load_pack_config(ROOT / "policies/config/dev.json"), "ml-diagnostics", "bench"
        )
        out["policy_seconds"] = time.perf_counter() - t1
    return out


def child(kind: str, n: int, shape: dict | None, policies: bool) -> dict:
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT), BENCH_POLICIES="1" if policies else "0")
    cmd = [sys.executable, __file__, "--child", kind, str(n), json.dumps(shape or {})]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, kind, n, shape = sys.argv
        print(json.dumps(measure(kind, int(n), json.loads(shape) or None)))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1,10,100,500")
    p.add_argument("--no-policies", action="store_true")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    print(
        f"{'targets':>7} {'resources':>9} {'plan s':>8} {'floor s':>8} {'ratio':>6} "
        f"{'plan MB':>8} {'floor MB':>8} {'ratio':>6} {'s/target':>9} {'policy s':>9}"
    )
    for n in sizes:
        real = child("real", n, None, not args.no_policies)
        bare = child("bare", n, {"file": real["shape_file"], "warmup": real["warmup_file"]}, False)
        t_ratio = real["seconds"] / bare["seconds"]
        m_ratio = real["rss_growth_mb"] / bare["rss_growth_mb"] if bare["rss_growth_mb"] > 0 else float("nan")
        rows.append((n, real, bare))
        print(
            f"{n:>7} {real['custom'] + real['components']:>9} {real['seconds']:>8.2f} {bare['seconds']:>8.2f} "
            f"{t_ratio:>6.2f} {real['rss_growth_mb']:>8.1f} {bare['rss_growth_mb']:>8.1f} {m_ratio:>6.2f} "
            f"{real['seconds'] / n:>9.4f} {real.get('policy_seconds', float('nan')):>9.2f}",
            flush=True,
        )
    if len(rows) >= 2:
        (n0, r0, _), (n1, r1, _) = rows[-2], rows[-1]
        growth = (r1["seconds"] / r0["seconds"]) / (n1 / n0)
        print(
            f"\ngrowth {n0}->{n1} targets: time x{r1['seconds'] / r0['seconds']:.2f} for x{n1 / n0:.0f} targets "
            f"(1.00 = linear; measured {growth:.2f})"
        )


if __name__ == "__main__":
    main()
