"""One measurement of `python -m dev.bench.plan`, in a fresh interpreter: the plan, its SDK floors (plain,
typed) or the policy pack (or its no-op floor) over the Analyzer protocol, printed as one line of JSON.

The driver (plan.py) runs this file as a script with the measured checkout first on the path, so it imports
nothing of dev/: what it measures (the program, the runtime, the pack) is that checkout's, how it measures is
this one's.

    python dev/bench/plan_child.py KIND TARGETS SCRATCH_DIR CODE_ROOT   # KIND: plan, plain, typed, pack, floor
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import resource
import sys
import tempfile
import time
from pathlib import Path

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
    # each registration as the plan sent it: its parent, its provider and what it depends on
    opts = pulumi.ResourceOptions(
        parent=made.get(r["parent"]),
        provider=made.get(r["provider"]) if r["custom"] else None,
        depends_on=[made[u] for u in r["dependencies"] if u in made] or None,
    )
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

# The policies of the pack in PACK_DIR with validate functions that do nothing (the protocol's floor).
FLOOR_PACK = """
import sys
sys.path.insert(0, PACK_DIR)
from mldiag_policy.pack import POLICIES
from pulumi_policy import EnforcementLevel, PolicyPack

def nothing(args, report):
    return None

PolicyPack(
    name="ml-diagnostics",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        type(p)(
            name=p.name,
            description=p.description,
            validate=nothing,
            enforcement_level=p.enforcement_level,
            config_schema=p.config_schema,
        )
        for p in POLICIES
    ],
)
"""


def _rss_now_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _shape(result) -> list[dict]:
    return [
        {
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "custom": r.custom,
            "parent": r.parent,
            "provider": r.provider,
            "dependencies": r.dependencies,
            "inputs": {k: v for k, v in r.unmasked_inputs.items() if k != "__provider"},
        }
        for r in result.resources
    ]


class _GcClock:
    """Time spent in garbage collections (gc.callbacks), and how many were full (generation 2)."""

    def __init__(self) -> None:
        self.seconds, self.full, self._t0 = 0.0, 0, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._t0
            self.full += info["generation"] == 2


def _timed(run, tail=None) -> tuple[dict, object]:
    """Runs `run` (then `tail` on its result, timed apart: where a deferred collection may land)."""
    clock = _GcClock()
    before = _rss_now_mb()
    gc.callbacks.append(clock)
    t0 = time.perf_counter()
    try:
        result = run()
        t1 = time.perf_counter()
        if tail is not None:
            tail(result)
    finally:
        t2 = time.perf_counter()
        gc.callbacks.remove(clock)
    figures = {
        "seconds": t1 - t0,
        "tail_seconds": t2 - t1,
        "rss_growth_mb": _rss_peak_mb() - before,
        "gc_seconds": clock.seconds,
        "gc_full": clock.full,
        "resources": len(result.resources),
    }
    return figures, result


def _report(result) -> None:
    """What mldiag.plan.cli does next with a plan (the JSON report), then the collection the run still owes
    (at the latest the interpreter's own at exit): the --gc comparison counts every mode's whole bill."""
    from mldiag.plan import cli as plan

    json.dumps(plan.build_report(result, []))
    gc.collect()


def _treatment(mode: str):
    """A gc_policy for run_config (mldiag.engine.runtime) by name, for --gc. disable: off, then on again
    (whatever collection comes next walks what the run allocated); disable+collect: the product's own;
    enabled: as is; freeze: what is alive at the start (imports, the SDK) is out of the collector's reach
    during the run; threshold: fewer young collections (generation 0 at 50,000 allocations, not 700); off:
    the one-shot plan's. Measured with the collection a run still owes counted: disable and disable+collect
    tie within noise; threshold is about 20% slower at 1,000 targets, freeze and enabled twice as slow."""
    from mldiag.engine import runtime

    if mode == "disable+collect":
        return runtime.collect_after_run
    if mode == "off":
        return runtime.collector_off

    def policy():
        enabled, thresholds = gc.isenabled(), gc.get_threshold()
        if mode == "disable":
            gc.disable()
        if "freeze" in mode:
            gc.freeze()
        if "threshold" in mode:
            gc.set_threshold(50_000, thresholds[1], thresholds[2])

        def restore() -> None:
            gc.set_threshold(*thresholds)
            if "freeze" in mode:
                gc.unfreeze()
            if enabled:
                gc.enable()

        return restore

    return policy


GC_MODES = ("disable", "disable+collect", "enabled", "freeze", "threshold", "freeze+threshold", "off")


def measure_plan(kind: str, n: int, shape_dir: str) -> dict:
    """One warm-up run, then one measured run (plan, plain or typed)."""
    from mldiag.engine import runtime as plan_runtime
    from mldiag.engine.runtime import run_config

    if os.environ.get("BENCH_GC"):  # "" = the checkout's own behaviour
        plan_runtime.gc_policy = _treatment(os.environ["BENCH_GC"])
    shapes = Path(shape_dir)
    if kind == "plan":
        warm = run_config(stack_config(1), (), stack="bench")
        if not (shapes / "warmup.json").exists():
            (shapes / "warmup.json").write_text(json.dumps(_shape(warm)))
        del warm
        tail = _report if os.environ.get("BENCH_GC") is not None else None
        out, result = _timed(lambda: run_config(stack_config(n), (), stack="bench"), tail)
        if not (shapes / "shape.json").exists():
            (shapes / "shape.json").write_text(json.dumps(_shape(result)))
        return out
    program = Path(tempfile.mkdtemp()) / "__main__.py"
    program.write_text(REPLAY_PROGRAM)
    os.environ["BENCH_KIND"] = kind
    os.environ["BENCH_SHAPE"] = str(shapes / "warmup.json")
    run_config({}, (), stack="bench", program=program)
    os.environ["BENCH_SHAPE"] = str(shapes / "shape.json")
    out, _ = _timed(lambda: run_config({}, (), stack="bench", program=program))
    return out


def _peak_of(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def dev_pack_config(pack_dir: Path, load) -> dict:
    """The dev config of a pack: config/environments/dev.json where the pack has one (levels by environment),
    with config/dev.json over it (a rule's entry replaces the level and the options it names); else dev.json."""
    base = load(pack_dir / "config" / "environments" / "dev.json")
    out = dict(base)
    for rule, value in load(pack_dir / "config" / "dev.json").items():
        if rule == "all" or rule not in base:
            out[rule] = value
            continue

        def entry(v):
            return dict(v) if isinstance(v, dict) else {"enforcementLevel": v}

        merged = {**entry(base[rule]), **entry(value)}
        out[rule] = merged["enforcementLevel"] if list(merged) == ["enforcementLevel"] else merged
    return out


def measure_pack(n: int, pack_dir: str, floor: bool, passes: int, scratch: str) -> dict:
    """The pack in `pack_dir` (or its floor) over the protocol on the resources of N targets."""
    from pulumi.runtime.proto import analyzer_pb2

    from mldiag.engine.analyzer import PolicyPackProcess, analyze_requests, load_pack_config

    saved = Path(scratch) / f"requests-{n}.pickle"
    if saved.exists():
        analyzed, total, wire, stack_wire = pickle.loads(saved.read_bytes())
        requests = [analyzer_pb2.AnalyzeRequest.FromString(b) for b in wire]
        stack_request = analyzer_pb2.AnalyzeStackRequest.FromString(stack_wire)
    else:
        from mldiag.engine.runtime import run_config

        resources = run_config(stack_config(n), (), stack="bench").resources
        requests, stack_request = analyze_requests(resources)
        analyzed, total = len(requests), len(resources)
        wire = [r.SerializeToString() for r in requests]
        saved.write_bytes(pickle.dumps((analyzed, total, wire, stack_request.SerializeToString())))
    policy_dir = Path(pack_dir)
    if floor:
        policy_dir = Path(tempfile.mkdtemp())
        (policy_dir / "__main__.py").write_text(FLOOR_PACK.replace("PACK_DIR", repr(pack_dir)))
    with PolicyPackProcess(policy_dir) as pack:
        info = pack.info()
        pack.configure(info, dev_pack_config(Path(pack_dir), load_pack_config))
        loop = stack = float("inf")
        findings = 0
        # this client's own heap (the recorded plan, the requests) does not change during the passes:
        # its collections are not the pack's cost
        gc.collect()
        gc.freeze()
        for _ in range(passes):
            t0 = time.perf_counter()
            found = sum(len(pack.stub.Analyze(r).diagnostics) for r in requests)
            t1 = time.perf_counter()
            found += len(pack.stub.AnalyzeStack(stack_request).diagnostics)
            t2 = time.perf_counter()
            loop, stack, findings = min(loop, t1 - t0), min(stack, t2 - t1), found
        peak = _peak_of(pack.proc.pid)
    return {
        "resources": total,
        "analyzed": analyzed,
        "loop_seconds": loop,
        "stack_seconds": stack,
        "request_mb": stack_request.ByteSize() / 2**20,
        "pack_peak_mb": peak,
        "findings": findings,
    }


def main(argv: list[str]) -> None:
    kind, n, shape_dir, code_root = argv
    sys.path[:0] = [code_root, str(Path(code_root) / "components")]
    if kind in ("pack", "floor"):
        out = measure_pack(
            int(n),
            os.environ["BENCH_PACK_DIR"],
            kind == "floor",
            int(os.environ["BENCH_PASSES"]),
            shape_dir,
        )
    else:
        out = measure_plan(kind, int(n), shape_dir)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
