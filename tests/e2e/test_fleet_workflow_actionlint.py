"""actionlint over the rollout workflows of large fleets (docs/fleet.md, "GitHub's limits"): the 1,000-cluster
benchmark shape in one file, and 10,000 clusters in a file that calls its legs' reusable workflows, checked
from a git checkout so that actionlint reads every workflow a file calls."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from mldiag.fleet import workflow
from tests.fixtures.e2e import E2E_ENABLED, SKIP_REASON
from tests.fixtures.fleet_shapes import bench_plan
from tests.fixtures.tools import actionlint

pytestmark = pytest.mark.skipif(not E2E_ENABLED, reason=SKIP_REASON)


@pytest.mark.parametrize("clusters", [1_000, 10_000])
def test_actionlint_accepts_the_rollout_workflows_of_a_large_fleet(
    tmp_path: Path, clusters: int, capsys: pytest.CaptureFixture[str]
) -> None:
    exe = actionlint()
    files = workflow.rollout_files(bench_plan(tmp_path, clusters), "fleet/bench.yaml", "bench")
    checkout = tmp_path / "checkout"
    folder = checkout / ".github" / "workflows"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    subprocess.run(
        ["git", "init", "-q", str(checkout)], check=True
    )  # actionlint resolves `uses: ./...` there
    t0 = time.monotonic()
    res = subprocess.run([exe, "-no-color"], capture_output=True, text=True, timeout=300, cwd=checkout)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), res.stdout[:3000]
    with capsys.disabled():
        print(
            f"\nactionlint over {clusters} clusters: {len(files)} file(s), "
            f"{sum(len(t.encode()) for t in files.values()):,} bytes, {time.monotonic() - t0:.1f}s"
        )
    # a call of a part that is not there is found (the check reads the files a workflow calls)
    if len(files) > 1:
        main = folder / "fleet-bench.yml"
        main.write_text(main.read_text().replace("fleet-bench-part-2.yml", "fleet-bench-part-99.yml"))
        res = subprocess.run([exe, "-no-color"], capture_output=True, text=True, timeout=300, cwd=checkout)
        assert res.returncode == 1 and "fleet-bench-part-99.yml" in res.stdout
