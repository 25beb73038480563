"""The benchmark scripts' own behaviour (their figures are printed by them, never asserted here)."""

from __future__ import annotations

import subprocess
import sys

import yaml

from dev.bench import input as bench_input
from dev.bench import plan as bench_plan
from dev.bench import plan_child


def test_bench_input_help_prints_usage_and_runs_nothing():
    out = subprocess.run(
        [sys.executable, "-m", "dev.bench.input", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0
    assert out.stdout.startswith("usage: ")
    assert "wall s" not in out.stdout and not out.stderr


def test_bench_input_generated_valid_stacks_fit_the_file_limit(tmp_path):
    files = bench_input.valid_generated(tmp_path)
    assert [f.stem for f in files] == list(bench_input.VALID)
    for f in files:
        assert f.stat().st_size <= bench_input.LIMIT_BYTES, f
        assert "ml-diagnostics:kubernetesClusters" in yaml.safe_load(f.read_text())["config"]


def test_growth_compares_consecutive_sizes(capsys):
    bench_plan.growth("cost", [(10, 1.0), (100, 2.0), (1000, 2.0)], "ms")
    line = capsys.readouterr().out
    assert "x2.00 (10->100)" in line and "x1.00 (100->1000)" in line
    assert "(10->1000)" not in line


def test_the_pack_benchmark_reads_the_dev_levels_where_a_pack_keeps_them(tmp_path):
    from mldiag.engine.analyzer import load_pack_config

    (tmp_path / "config" / "environments").mkdir(parents=True)
    (tmp_path / "config" / "dev.json").write_text('{"b": {"opt": 1}, "c": "mandatory"}')
    assert plan_child.dev_pack_config(tmp_path, load_pack_config) == {"b": {"opt": 1}, "c": "mandatory"}
    (tmp_path / "config" / "environments" / "dev.json").write_text(
        '{"all": "advisory", "b": "mandatory", "c": {"enforcementLevel": "advisory", "opt": 2}}'
    )
    assert plan_child.dev_pack_config(tmp_path, load_pack_config) == {
        "all": "advisory",
        "b": {"enforcementLevel": "mandatory", "opt": 1},
        "c": {"enforcementLevel": "mandatory", "opt": 2},
    }
