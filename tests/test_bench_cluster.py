"""dev/bench/cluster.py's command line (the benchmark itself needs the e2e cluster and is never a test)."""

from __future__ import annotations

import argparse

import pytest

from dev.bench import cluster


def test_its_json_keys_are_the_ones_the_issue_names() -> None:
    named = "nodes accelerator_nodes up_s floor_up_s verify_s verify_requests floor_list_s verify_peak_mb"
    assert tuple(named.split()) == cluster.KEYS
    assert cluster.SIZES == (100, 1000, 5000)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("100,abc", "--sizes takes whole numbers separated by commas, not '100,abc'"),
        ("100,5", "every size must be at least 10 nodes"),
    ],
)
def test_bad_sizes_are_refused_by_name(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        cluster.sizes_of(text)
    assert cluster.sizes_of("100,1000") == (100, 1000)


def test_the_table_has_one_row_per_size_in_key_order() -> None:
    row = dict(zip(cluster.KEYS, (100, 90, 12.5, 1.2, 3.4, 15, 0.05, 110.0), strict=True))
    lines = cluster.table([row]).splitlines()
    assert lines[0] == "| " + " | ".join(cluster.KEYS) + " |"
    assert lines[2] == "| 100 | 90 | 12.5 | 1.2 | 3.4 | 15 | 0.05 | 110.0 |"
