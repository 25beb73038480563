"""docs/constraints.md (dev/gen/constraints.py): every field of every component's Args with its rule and the
document the rule comes from, or why it is free; current, and no field unaudited."""

from __future__ import annotations

import pytest

from dev.gen import constraints
from ml_diagnostics.rules import sources


def test_the_document_is_current() -> None:
    assert constraints.OUT.read_text() == constraints.render(), "run python -m dev.gen.constraints --write"


def test_every_field_has_a_rule_with_its_source_or_a_reason() -> None:
    table = dict(constraints.rows())
    pool = {f: (r, s) for f, r, s in table["GkeNodePoolArgs"]}
    assert pool["node_locations"] == ("zones of the cluster's region", sources.GKE_POOLS)
    assert pool["spot"] == ("true or false", sources.GKE_POOLS)
    assert dict((f, r) for f, r, _ in table["GkeTaintArgs"])["effect"] == (
        "one of `NO_SCHEDULE`, `PREFER_NO_SCHEDULE`, `NO_EXECUTE`"
    )
    timeout = {f: r for f, r, _ in table["ModelDevelopmentClusterArgs"]}["operation_timeout_minutes"]
    assert timeout == "an integer >= 1, <= 1440"
    for args, rows in table.items():
        for field, rule, source in rows:
            assert rule and source, (args, field)
            assert source != "-" or rule.startswith("free: "), (args, field)


def test_a_field_with_no_rule_and_no_reason_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sources.FREE, "NodePool.startup_script")
    with pytest.raises(constraints.Unaudited, match=r"^no rule and no reason for NodePool.startup_script$"):
        constraints.rows()
    assert constraints.main(["--check"]) == 2


def test_an_entry_that_names_no_field_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sources.FIELD_RULES, "GkeNodePoolSpec.colour", ("blue", ""))
    with pytest.raises(
        constraints.Unaudited, match=r"sources.py names no such field: GkeNodePoolSpec.colour"
    ):
        constraints.rows()
