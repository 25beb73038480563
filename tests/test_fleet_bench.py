"""dev/bench/fleet.py's own behaviour (its figures are printed, never asserted)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dev.bench import fleet as bench_fleet
from mldiag.common import ROOT


def test_help_prints_usage_and_runs_nothing() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "dev.bench.fleet", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.startswith("usage: python -m dev.bench.fleet [-h] [--sizes SIZES] [--repeat REPEAT]\n")
    assert "rollout ms" not in out.stdout


def test_small_sizes_print_a_row_each_and_the_growth(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_fleet.main(["--sizes", "4,8", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["clusters", "plan", "ms"]
    assert [ln.split()[0] for ln in lines[2:4]] == ["4", "8"]
    assert lines[5].startswith("  plan time") and "for x2 clusters (4->8)" in lines[5]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--sizes", "ten"], "--sizes: 'ten' is not a list of whole numbers like 10,100,1000"),
        (["--sizes", "2"], "--sizes: '2': each size is at least 4 (a cluster per wave)"),
        (["--repeat", "0"], "--repeat: 0 is less than 1"),
    ],
)
def test_bad_arguments_are_exit_2_and_say_what_is_allowed(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        bench_fleet.main(argv)
    out = capsys.readouterr()
    assert e.value.code == 2 and out.out == ""
    assert out.err.rstrip().endswith(f"error: {says}")
