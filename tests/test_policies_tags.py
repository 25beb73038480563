"""What each policy rule is about, against the rest of the repository: its kind tags are the program's target
kinds, its cloud tag one of the program's clouds, the Pod Security Standards version the one the e2e tier's API
server runs, and policies/README.md's table shows every rule's tags and framework."""

from __future__ import annotations

import re
from pathlib import Path

from mldiag_policy import common

from dev.gen.policy_levels import pack
from program.kinds.table import KINDS

ROOT = Path(__file__).resolve().parent.parent


def test_the_tags_name_the_programs_kinds_and_clouds():
    clouds = {k.cloud.name for k in KINDS}
    for rule in pack.RULES:
        about = [t for t in rule.policy.tags if t not in common.CONCERNS]
        *kinds, cloud = about
        assert set(kinds) <= {k.key for k in KINDS}, rule.policy.name
        assert cloud in clouds, rule.policy.name
    assert {t for r in pack.RULES for t in r.policy.tags} >= {k.key for k in KINDS}


def test_the_pod_security_standards_are_those_of_the_e2e_tiers_kubernetes():
    kube = re.search(
        r"^KUBE_VERSION=(v\d+\.\d+)\.\d+", (ROOT / "dev" / "e2e" / "toolchain.sh").read_text(), re.M
    )
    assert kube and kube[1] == common.POD_SECURITY_STANDARDS_VERSION


def test_the_readme_table_shows_each_rules_tags_and_framework():
    rows = {
        cells[0].strip("`"): cells
        for line in (ROOT / "policies" / "README.md").read_text().splitlines()
        if line.startswith("| `")
        and len(cells := line.removeprefix("| ").removesuffix(" |").split(" | ")) == 8
    }
    for rule in pack.RULES:
        policy = rule.policy
        tags, framework = rows[policy.name][2:4]
        assert tags == ", ".join(policy.tags), policy.name
        if policy.framework is None:
            assert framework == "none", policy.name
        else:
            assert framework.startswith(f"[{policy.framework.name}]({policy.framework.reference}) v"), (
                policy.name
            )
