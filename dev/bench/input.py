"""Benchmark: time and peak memory of the offline plan on the worst stack files, bad and valid (target: every
input of at most 1 MiB under 5 s and 300 MB; a larger one, up to the 24 MiB limit, in proportion to its size).

    python -m dev.bench.input            # the worst bad inputs of tests/bad_input/, generated bad ones,
                                           # and generated large valid stacks
    python -m dev.bench.input --all      # every file of the bad-input corpus, plus the generated ones
    python -m dev.bench.input --valid    # only the generated valid stacks
    python -m dev.bench.input --at-limit # bad stack files of the size limit (24 MiB): the bound grows with
                                           # the file's size, and stops there
    python -m dev.bench.input --base 59803d7     # side by side with a commit or a checkout, interleaved
    python -m dev.bench.input --root /tmp/base   # another checkout alone

Each input runs in its own interpreter, the whole `mldiag.plan.cli` (policy pack included; bad inputs stop before
it): `wall s` is the wall time of `mldiag.plan.cli.main` (interpreter start and imports excluded); `plan cpu` and
`pack cpu` the CPU seconds of the plan process (imports included) and of its policy pack subprocess;
`plan MB` the plan process's peak resident memory (imports included), `pack MB` the pack's (its VmHWM just
before it is stopped; none when the input fails before the pack runs). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "bad_input"
LIMIT_BYTES = 1024 * 1024
"""The size of the inputs whose target is 5 s and 300 MB; those of --at-limit are up to the reader's limit."""
WORST = [
    "aliases/billion-laughs",
    "aliases/wide-laughs",
    "aliases/self-reference",
    "depth/deep-list",
    "depth/deep-map",
    "depth/deep-values",
    "output-bounds/huge-value",
    "output-bounds/huge-key",
    "output-bounds/many-problems",
    "output-bounds/long-namespace-key",
    "conflicts/node-pool-names",
]

CHILD = """
import io, contextlib, json, resource, sys, time
sys.path[:0] = [sys.argv[2], sys.argv[2] + '/components']
from mldiag.engine import analyzer
from mldiag.plan import cli as plan
from mldiag.engine import runtime as plan_runtime
# as `mldiag plan` runs (mldiag/cli.py run): one stack, then the process ends (a --base checkout may predate it)
getattr(plan_runtime, "one_shot", lambda: None)()

pack_peak = []
stop = analyzer.PolicyPackProcess.stop

def stop_and_measure(self):
    # the pack's own peak (VmHWM), read before it is stopped
    if self.proc is not None and self.proc.poll() is None:
        with open(f"/proc/{self.proc.pid}/status") as f:
            pack_peak.extend(int(x.split()[1]) / 1024 for x in f if x.startswith("VmHWM:"))
    stop(self)

analyzer.PolicyPackProcess.stop = stop_and_measure
err = io.StringIO()
t0 = time.perf_counter()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    code = plan.main(["dev", "--config-file", sys.argv[1], "--format", "json", "-q"])
elapsed = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "code": code,
    "seconds": elapsed,
    "cpu": me.ru_utime + me.ru_stime,
    "pack_cpu": kids.ru_utime + kids.ru_stime,
    "peak_mb": me.ru_maxrss / 1024,
    "pack_mb": max(pack_peak, default=float("nan")),
    "error": err.getvalue()[-300:],
}))
getattr(plan_runtime, "end_process", sys.exit)(0)
"""

HEAD = "config:\n  ml-diagnostics:environment: dev\n"
EXAMPLE_SALT = "v1:uQ/QM0swBh8=:v1:fNx/QDErlXcTcnx7:5z6yxV+Lm9a5dF60WjPYlor4SX8PEA=="
DIAGON_IMAGE = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"


def bad_generated(tmp: Path) -> list[Path]:
    """Bad inputs too big to keep in the repository: just under 1 MiB each."""
    many = tmp / "many-bad-targets.yaml"
    body = "".join(f"    - {{name: 'T{i}', context: c{i}}}\n" for i in range(24_000))
    many.write_text(HEAD + "  ml-diagnostics:kubernetesClusters:\n" + body)
    values = tmp / "huge-free-form-values.yaml"
    rows = "".join(f"          k{i}: [{', '.join(['v'] * 8)}]\n" for i in range(20_000))
    values.write_text(
        HEAD + "  ml-diagnostics:kubernetesClusters:\n"
        "    - name: lab\n      context: lab\n      manualInstall: {jaxVersion: '0.8'}\n"
        "      certManager:\n        values:\n" + rows
    )
    pem = tmp / "pem-header-and-spaces.yaml"
    pem.write_text(
        HEAD + "  ml-diagnostics:azureMl:\n    - name: a\n      training: true\n"
        "      cluster: {kind: aks, subscriptionId: 3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f, resourceGroup: rg,"
        " name: aks, location: eastus, nodeCount: 3}\n      inference:\n        enabled: true\n"
        "        sslCertPem: '-----BEGIN CERTIFICATE-----" + " " * 1_000_000 + "'\n"
    )
    return [many, values, pem]


def at_limit(tmp: Path) -> list[Path]:
    """Bad inputs just under the reader's size limit, each as costly as a file that size may be: values as
    dense as YAML writes them (the composer stops at the budget), anchors expanded to the whole budget, and
    valid-looking targets up to the budget, every one of them wrong."""
    from program.stack_file import MAX_FILE_BYTES

    room = MAX_FILE_BYTES - 4096
    dense = tmp / "dense-values-at-the-limit.yaml"
    dense.write_text(HEAD + "  ml-diagnostics:googleApi:\n    k:\n" + "      - a\n" * (room // 10))
    laughs = tmp / "aliases-to-the-budget-at-the-limit.yaml"
    anchors = (
        "a0: &a0 ["
        + ", ".join(["x"] * 10)
        + "]\n"
        + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 7))
    )
    laughs.write_text("#" * (room - 200) + "\n" + anchors + "config: {}\n")
    bad = tmp / "bad-targets-to-the-budget-at-the-limit.yaml"
    row = "    - {name: 'T', context: c}\n"
    bad.write_text(HEAD + "  ml-diagnostics:kubernetesClusters:\n" + row * (room // len(row)))
    return [dense, laughs, bad]


def _self_managed(i: int, namespaces: str = "[{name: ai-workloads, create: true}]") -> str:
    return (
        f"    - name: c{i}\n      context: ctx-{i}\n      mode: manual\n"
        f"      workloadNamespaces: {namespaces}\n"
        "      manualInstall: {jaxVersion: '0.9'}\n"
        f"      diagon: {{enabled: true, image: '{DIAGON_IMAGE}'}}\n"
    )


def _many_namespaces(n: int) -> str:
    rows = "".join(
        f"        - {{name: ns-{i}, create: true, labels: {{team: t{i % 50}}}}}\n" for i in range(n)
    )
    return (
        HEAD + "  ml-diagnostics:kubernetesClusters:\n"
        "    - name: lab\n      context: lab\n      mode: manual\n"
        "      manualInstall: {jaxVersion: '0.9'}\n"
        f"      diagon: {{enabled: true, image: '{DIAGON_IMAGE}'}}\n"
        "      workloadNamespaces:\n" + rows
    )


def _many_targets(n: int) -> str:
    return HEAD + "  ml-diagnostics:kubernetesClusters:\n" + "".join(_self_managed(i) for i in range(n))


def _ciphertext(i: int) -> str:
    """A value shaped as the passphrase provider's (`v1:<nonce>:<ciphertext>`); the offline plan never
    decrypts it (a placeholder stands in for every secret)."""
    nonce = base64.b64encode(i.to_bytes(12, "big")).decode()
    sealed = base64.b64encode(hashlib.sha256(str(i).encode()).digest()[:16]).decode()
    return f"{{secure: v1:{nonce}:{sealed}}}"


def _chart_values(keys: int, secret: bool = False) -> str:
    # nested two levels (groups of 100), as chart values are: tens of thousands of leaves; secret ones a
    # group per line (flow style), to stay under 1 MiB
    if secret:
        groups = "".join(
            f"          g{g}: {{{', '.join(f'k{i}: {_ciphertext(g * 100 + i)}' for i in range(100))}}}\n"
            for g in range(keys // 100)
        )
    else:
        groups = "".join(
            f"          g{g}:\n" + "".join(f"            k{g}x{i}: v{i}\n" for i in range(100))
            for g in range(keys // 100)
        )
    # a passphrase stack's salt (the example stacks'), so `secure:` values are read as that provider's
    head = f"encryptionsalt: {EXAMPLE_SALT}\n{HEAD}" if secret else HEAD
    return (
        head + "  ml-diagnostics:kubernetesClusters:\n"
        "    - name: lab\n      context: lab\n      mode: manual\n"
        "      manualInstall: {jaxVersion: '0.9'}\n"
        "      certManager:\n        values:\n" + groups
    )


# name -> stack text: valid stacks at the size limits (each plans with exit 0 or 1, never 2)
VALID: dict[str, Callable[[], str]] = {
    "2000-namespaces": lambda: _many_namespaces(2000),
    "400-self-managed-targets": lambda: _many_targets(400),
    "30000-chart-value-keys": lambda: _chart_values(30_000),
    "15000-secret-chart-values": lambda: _chart_values(15_000, secret=True),
}


def valid_generated(tmp: Path) -> list[Path]:
    out = []
    for name, make in VALID.items():
        path = tmp / f"{name}.yaml"
        path.write_text(make())
        out.append(path)
    return out


def measure(path: Path, root: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(root)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
    )
    if proc.returncode != 0:
        nan = float("nan")
        return {
            "code": proc.returncode,
            "seconds": nan,
            "cpu": nan,
            "pack_cpu": nan,
            "peak_mb": nan,
            "pack_mb": nan,
            "error": proc.stderr[-200:],
        }
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dev.bench.input", description=__doc__.split("\n\n")[0])
    which = p.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="every file of the bad-input corpus")
    which.add_argument("--valid", action="store_true", help="only the generated valid stacks")
    which.add_argument(
        "--at-limit", action="store_true", help="bad stack files of the reader's size limit (24 MiB)"
    )
    p.add_argument("--root", type=Path, default=ROOT, help="checkout whose plan and policy pack run")
    p.add_argument(
        "--base",
        help="another checkout (a directory) or a commit (checked out in a temporary worktree), measured "
        "side by side, runs interleaved",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs per input and checkout; the fastest counts")
    args = p.parse_args(argv)
    from dev.bench.worktree import checkout

    checkouts = {"this": args.root.resolve()}
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        if args.base:
            checkouts = {"base": stack.enter_context(checkout(args.base)), "this": args.root.resolve()}
        files: list[tuple[str, Path]] = []
        if args.at_limit:
            files += [(f"at-limit/{f.stem}", f) for f in at_limit(Path(tmp))]
        elif not args.valid:
            corpus = sorted(CORPUS.glob("*/*.yaml")) if args.all else [CORPUS / f"{w}.yaml" for w in WORST]
            files += [(f"{f.parent.name}/{f.stem}", f) for f in corpus]
            files += [(f"generated/{f.stem}", f) for f in bad_generated(Path(tmp))]
        if not args.at_limit:
            files += [(f"valid/{f.stem}", f) for f in valid_generated(Path(tmp))]
        for name, f in files:
            assert name.startswith("at-limit/") or f.stat().st_size <= LIMIT_BYTES, f
        print(
            f"{'input':44} {'code':>4} {'KB':>7} {'exit':>4} {'wall s':>7} {'plan cpu':>8} {'pack cpu':>8} "
            f"{'plan MB':>8} {'pack MB':>8}"
        )
        worst = {label: [0.0, 0.0] for label in checkouts}
        for name, f in files:
            runs: dict[str, list[dict]] = {label: [] for label in checkouts}
            for _ in range(max(1, args.repeat)):
                for label, root in checkouts.items():  # taking turns: load changes fall on both
                    runs[label].append(measure(f, root))
            kb = f.stat().st_size / 1024
            for label, found in runs.items():
                r = min(found, key=lambda r: r["seconds"])
                print(
                    f"{name:44} {label:>4} {kb:7.0f} {r['code']:>4} {r['seconds']:7.2f} {r['cpu']:8.2f} "
                    f"{r['pack_cpu']:8.2f} {r['peak_mb']:8.0f} {r['pack_mb']:8.0f}",
                    flush=True,
                )
                if name.startswith("valid/") and r["code"] not in (0, 1):
                    print(f"  {name} did not plan: {r['error']}")
                w = worst[label]
                w[0] = max(w[0], r["seconds"], r["cpu"] + r["pack_cpu"])
                w[1] = max(w[1], r["peak_mb"], r["pack_mb"])
        for label, (worst_s, worst_mb) in worst.items():
            print(
                f"worst ({label}): {worst_s:.2f} s (wall, or plan and pack CPU together), {worst_mb:.0f} MB "
                "peak per process (target: < 5 s and < 300 MB per input <= 1 MiB; --at-limit: in proportion)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
