"""Benchmark: Diagon on simulated clusters of 100, 1,000 and 5,000 nodes (90 % accelerators), the real engine.

For each size it starts the e2e cluster (dev/e2e/control_plane.py: etcd, kube-apiserver, controllers,
kube-scheduler, kwok as every node's kubelet), registers the nodes as GKE makes them (dev/e2e/node_pools.py:
half of the accelerator nodes GPU, half TPU; the rest CPU) and waits until kwok reports them Ready, then:

- up:         `pulumi up` of a small program with the library's Diagon (GKE default placement) until it
              returns, i.e. the DaemonSet is rolled out and ready on every accelerator node;
- floor up:   the same DaemonSet manifest (read back from the cluster) created directly through the API in
              a namespace of its own and awaited (numberReady = desiredNumberScheduled);
- verify:     `mldiag verify --stack` of that program's stack, in a child process that counts its Kubernetes
              API requests and reports its peak memory (maximum resident set size);
- floor list: one paginated list of the nodes and one of the Diagon pods, what verify's reads amount to.

Prints one row per size (or, with --format json, one JSON array of objects with the keys nodes,
accelerator_nodes, up_s, floor_up_s, verify_s, verify_requests, floor_list_s, verify_peak_mb). Asserts
nothing; `make bench` runs it. Needs the e2e toolchain with its kwok and scheduler extras.

    .venv/bin/python -m dev.bench.cluster [--sizes 100,1000,5000] [--format table|json]
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZES = (100, 1000, 5000)
ACCELERATOR_SHARE = 0.9
LEASE_SECONDS = 600  # kwok renews each node's Lease every 150 s: thousands of nodes stay Ready, idle
WAIT_SECONDS = 1800.0
STACK = "organization/diagon-bench/bench"
IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
PROGRAM = f'''\
import pulumi
import pulumi_kubernetes as k8s

from ml_diagnostics import Diagon

cluster = k8s.Provider("gke", kubeconfig=pulumi.Config().require_secret("kubeconfig"))
Diagon("profiler", {{"namespace": "profiler", "image": "{IMAGE}"}}, pulumi.ResourceOptions(providers=[cluster]))
'''
# what a healthy daemon logs: the three signatures verify looks for
DIAGON_LOG = (
    "I1130 10:00:02 stream.go:88] Stream established.\n"
    "I1130 10:00:02 daemon.go:120] Received successful DaemonRegistrationResponse from backend\n"
    "I1130 10:00:32 daemon.go:150] Sending DaemonHeartbeatRequest\n"
)
KEYS = (
    "nodes",
    "accelerator_nodes",
    "up_s",
    "floor_up_s",
    "verify_s",
    "verify_requests",
    "floor_list_s",
    "verify_peak_mb",
)


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {WAIT_SECONDS:.0f}s")
        time.sleep(0.5)


def list_all(cp: Any, path: str) -> list[dict[str, Any]]:
    from program.in_cluster.diagon import PAGE

    items: list[dict[str, Any]] = []
    token = ""
    sep = "&" if "?" in path else "?"
    while True:
        page = cp.get(f"{path}{sep}limit={PAGE}" + (f"&continue={token}" if token else ""))
        items.extend(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            return items


def ready_count(cp: Any) -> int:
    return sum(
        1
        for n in list_all(cp, "/api/v1/nodes")
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
    )


def daemonset_ready(cp: Any, ns: str, name: str) -> bool:
    r = cp.api("GET", f"/apis/apps/v1/namespaces/{ns}/daemonsets/{name}")
    if not r.ok:
        return False
    ds = r.json()
    st = ds.get("status", {})
    return bool(
        st.get("observedGeneration") == ds["metadata"]["generation"]
        and st.get("desiredNumberScheduled", 0) > 0
        and st.get("numberReady") == st.get("desiredNumberScheduled")
        and st.get("updatedNumberScheduled") == st.get("desiredNumberScheduled")
    )


def register_nodes(cp: Any, size: int) -> int:
    from dev.e2e.node_pools import create_pool, gke_cpu, gke_gpu, gke_tpu

    accelerators = round(size * ACCELERATOR_SHARE)
    gpu = accelerators // 2
    batches = [(gke_gpu(), gpu), (gke_tpu(), accelerators - gpu), (gke_cpu(), size - accelerators)]
    jobs = [
        (pool, first, min(100, count - first)) for pool, count in batches for first in range(0, count, 100)
    ]
    with ThreadPoolExecutor(max_workers=4) as workers:
        list(workers.map(lambda job: create_pool(cp, job[0], job[2], first=job[1]), jobs))
    wait_for(f"{size} nodes Ready", lambda: ready_count(cp) == size)
    return accelerators


def floor_up(cp: Any) -> float:
    """The DaemonSet pulumi made, created again through the API in a namespace of its own, and awaited."""
    ds = cp.get("/apis/apps/v1/namespaces/profiler/daemonsets/diagon-daemon")
    ns = cp.get("/api/v1/namespaces/profiler")
    spec = dict(ds["spec"])
    spec["template"]["spec"]["serviceAccountName"] = "default"  # the namespace's own; no other object
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "diagon-daemon", "labels": ds["metadata"].get("labels", {})},
        "spec": spec,
    }
    labels = ns["metadata"].get("labels", {})
    t0 = time.monotonic()
    cp.api(
        "POST", "/api/v1/namespaces", json={"metadata": {"name": "floor", "labels": labels}}
    ).raise_for_status()
    cp.api("POST", "/apis/apps/v1/namespaces/floor/daemonsets", json=body).raise_for_status()
    wait_for("the floor's DaemonSet ready", lambda: daemonset_ready(cp, "floor", "diagon-daemon"))
    return time.monotonic() - t0


def floor_list(cp: Any) -> float:
    t0 = time.monotonic()
    list_all(cp, "/api/v1/nodes")
    list_all(cp, "/api/v1/namespaces/profiler/pods?labelSelector=name%3Ddiagon-daemon")
    return time.monotonic() - t0


def child_verify(argv: list[str]) -> int:
    """`mldiag verify` in this process, counting its Kubernetes API requests (printed last on stderr as JSON
    with the peak resident memory)."""
    from kubernetes.client import rest

    from mldiag.verify import cli

    count = 0
    original = rest.RESTClientObject.request

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        return original(self, *args, **kwargs)

    rest.RESTClientObject.request = counted  # type: ignore[method-assign]
    code = cli.main(argv)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"requests": count, "peak_mb": peak_mb}), file=sys.stderr)
    return code


def one_size(bin_dir: Path, size: int) -> dict[str, Any]:
    from dev.e2e.control_plane import ControlPlane
    from dev.e2e.harness import Project, PulumiError

    with (
        tempfile.TemporaryDirectory(prefix="mldiag-bench-cluster-") as tmp,
        ControlPlane(bin_dir, lease_seconds=LEASE_SECONDS) as cp,
    ):
        cp.set_pod_log(DIAGON_LOG)
        accelerators = register_nodes(cp, size)
        project = Project(Path(tmp) / "project", bin_dir)
        program = project.program("bench", "diagon-bench", PROGRAM)

        def pulumi(*args: str) -> None:
            try:
                project.pulumi(*args, timeout=WAIT_SECONDS, cwd=program)
            except PulumiError as e:
                raise RuntimeError(f"pulumi {args[0]} failed:\n{e}") from None

        pulumi("stack", "init", "bench", "--secrets-provider", "passphrase")
        pulumi("config", "set", "--secret", "kubeconfig", "--", cp.kubeconfig.read_text())
        t0 = time.monotonic()
        pulumi("up", "--yes", "--skip-preview")
        up_s = time.monotonic() - t0

        argv = ["--stack", STACK, "--project", str(program), "--format", "json"]
        t0 = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "dev.bench.cluster", "--child-verify", *argv],
            cwd=ROOT, env=project.env, capture_output=True, text=True, timeout=WAIT_SECONDS,
        )  # fmt: skip
        verify_s = time.monotonic() - t0
        if run.returncode != 0:
            raise RuntimeError(f"verify exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}")
        counted = json.loads(run.stderr.strip().splitlines()[-1])

        floor_list_s = floor_list(cp)
        floor_up_s = floor_up(cp)
        return {
            "nodes": size,
            "accelerator_nodes": accelerators,
            "up_s": round(up_s, 2),
            "floor_up_s": round(floor_up_s, 2),
            "verify_s": round(verify_s, 2),
            "verify_requests": counted["requests"],
            "floor_list_s": round(floor_list_s, 3),
            "verify_peak_mb": round(counted["peak_mb"], 1),
        }


def sizes_of(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--sizes takes whole numbers separated by commas, not {text!r}"
        ) from None
    if not sizes or any(s < 10 for s in sizes):
        raise argparse.ArgumentTypeError("every size must be at least 10 nodes")
    return sizes


def table(rows: list[dict[str, Any]]) -> str:
    head = "| " + " | ".join(KEYS) + " |"
    sep = "| " + " | ".join("---" for _ in KEYS) + " |"
    return "\n".join([head, sep, *("| " + " | ".join(str(r[k]) for k in KEYS) + " |" for r in rows)])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child-verify"]:
        return child_verify(argv[1:])
    p = argparse.ArgumentParser(prog="python -m dev.bench.cluster", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=sizes_of, default=SIZES, help="node counts, e.g. 100,1000")
    p.add_argument("--format", choices=("table", "json"), default="table")
    opts = p.parse_args(argv)
    from dev.e2e.harness import missing_binaries, toolchain_bin

    bin_dir = toolchain_bin()
    if missing := missing_binaries(bin_dir):
        print(
            f"cluster bench: the e2e toolchain lacks {', '.join(missing)}: run dev/e2e/toolchain.sh",
            file=sys.stderr,
        )
        return 2
    for extra in ("kwok", "scheduler"):
        out = subprocess.run(
            ["bash", str(ROOT / "dev/e2e/toolchain.sh"), "--extra", extra], capture_output=True, text=True
        )
        if out.returncode != 0:
            print(
                f"cluster bench: toolchain extra {extra} unavailable: {out.stderr.strip()}", file=sys.stderr
            )
            return 2
    rows = []
    for size in opts.sizes:
        rows.append(one_size(bin_dir, size))
        if opts.format == "table":
            print(f"measured {size} nodes", file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=2) if opts.format == "json" else table(rows))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
