"""Benchmark: time and peak memory of the offline plan on the worst bad inputs (target: every input of at
most 1 MB under 5 s and 300 MB).

    python tools/bench_input.py          # the worst inputs of tests/bad_input/ plus generated ones
    python tools/bench_input.py --all    # every file of the corpus

Each input runs in its own interpreter: `plan s` is the wall time of `tools.plan.main` on it (interpreter
start and imports excluded), `peak MB` the process's peak resident memory (imports included).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "bad_input"
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
sys.path.insert(0, sys.argv[2])
from tools import plan
err = io.StringIO()
t0 = time.perf_counter()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    code = plan.main(["dev", "--config-file", sys.argv[1], "--format", "json", "-q", "--skip-policies"])
elapsed = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"code": code, "seconds": elapsed, "peak_mb": peak, "error": err.getvalue()[:100]}))
"""


def generated(tmp: Path) -> list[Path]:
    """Inputs too big to keep in the repository: just under 1 MB each."""
    out = []
    many = tmp / "many-bad-targets.yaml"
    body = "".join(f"    - {{name: 'T{i}', context: c{i}}}\n" for i in range(24_000))
    many.write_text(
        "config:\n  ml-diagnostics:environment: dev\n  ml-diagnostics:kubernetesClusters:\n" + body
    )
    out.append(many)
    values = tmp / "huge-free-form-values.yaml"
    rows = "".join(f"          k{i}: [{', '.join(['v'] * 8)}]\n" for i in range(20_000))
    values.write_text(
        "config:\n  ml-diagnostics:environment: dev\n  ml-diagnostics:kubernetesClusters:\n"
        "    - name: lab\n      context: lab\n      manualInstall: {jaxVersion: '0.8'}\n"
        "      certManager:\n        values:\n" + rows
    )
    out.append(values)
    pem = tmp / "pem-header-and-spaces.yaml"
    pem.write_text(
        "config:\n  ml-diagnostics:environment: dev\n  ml-diagnostics:azureMl:\n    - name: a\n      training: true\n"
        "      cluster: {kind: aks, subscriptionId: 3f2b7c1e-8d4a-4b6e-9c0f-1a2b3c4d5e6f, resourceGroup: rg,"
        " name: aks, location: eastus, nodeCount: 3}\n      inference:\n        enabled: true\n"
        "        sslCertPem: '-----BEGIN CERTIFICATE-----" + " " * 1_000_000 + "'\n"
    )
    out.append(pem)
    for p in out:
        assert p.stat().st_size <= 1024 * 1024, p
    return out


def measure(path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(ROOT)], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0:
        return {
            "code": proc.returncode,
            "seconds": float("nan"),
            "peak_mb": float("nan"),
            "error": proc.stderr[-200:],
        }
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        files = (
            sorted(CORPUS.glob("*/*.yaml"))
            if "--all" in argv
            else [CORPUS / f"{w}.yaml" for w in WORST] + generated(Path(tmp))
        )
        print(f"{'input':44} {'KB':>7} {'exit':>4} {'plan s':>7} {'peak MB':>8}")
        worst_s = worst_mb = 0.0
        for f in files:
            r = measure(f)
            name = f"{f.parent.name}/{f.stem}" if f.is_relative_to(CORPUS) else f"generated/{f.stem}"
            kb = f.stat().st_size / 1024
            print(f"{name:44} {kb:7.0f} {r['code']:>4} {r['seconds']:7.2f} {r['peak_mb']:8.0f}")
            worst_s, worst_mb = max(worst_s, r["seconds"]), max(worst_mb, r["peak_mb"])
        print(
            f"worst: {worst_s:.2f} s, {worst_mb:.0f} MB peak (target: < 5 s and < 300 MB per input <= 1 MB)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
