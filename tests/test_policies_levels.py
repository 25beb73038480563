"""Per-environment enforcement levels: the config files, what Configure yields, and the README table agree."""

from __future__ import annotations

import re
import subprocess
import sys

from mldiag.engine.runtime import ROOT
from tests.fixtures.policies import ENVS, EXPECTED, A, M, env_config


def test_pack_declares_every_rule_with_description_and_schema_defaults(pack):
    names = [p.name for p in pack.info.policies]
    assert names == list(EXPECTED)
    for p in pack.info.policies:
        assert len(p.description) > 60, p.name
        for prop, spec in p.configSchema.properties.items():
            assert "default" in spec, (p.name, prop)


def test_each_environment_yields_the_expected_levels(pack):
    for i, env in enumerate(ENVS):
        levels = pack.configure(env)
        assert levels == {name: lv[i] for name, lv in EXPECTED.items()}, env


def test_prod_is_stricter_than_staging_and_staging_than_dev():
    for name, (dev, staging, prod) in EXPECTED.items():
        order = {A: 0, M: 1}
        assert order[dev] <= order[staging] <= order[prod], name
    assert env_config("prod")["azureml-inference-https"]["allowInsecureConnections"] is False
    assert env_config("prod")["mdc-deletion-policy"]["allowedDeletionPolicies"] == ["PREVENT", "ABANDON"]


def test_readme_table_lists_every_rule_with_its_levels():
    text = (ROOT / "policies" / "README.md").read_text()
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*`([a-z0-9-]+)`\s*\|(.*)\|\s*$", line)
        if m:
            cells = [c.strip() for c in m.group(2).split("|")]
            rows[m.group(1)] = tuple(cells[-3:])
    assert rows == {name: lv for name, lv in EXPECTED.items()}


def test_pack_imports_no_cloud_sdk():
    code = (
        "import sys; sys.path[:0] = [sys.argv[1] + '/policies']; import mldiag_policy.pack; "
        "print(sorted(m for m in sys.modules if m.startswith(('pulumi_gcp', 'pulumi_azure', 'pulumi_kubernetes', "
        "'google.cloud', 'azure'))))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
