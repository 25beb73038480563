"""Per-environment enforcement levels: the config files, what Configure yields, and the README table agree,
and all of them are generated from the rules' own declarations (dev/gen/policy_levels.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from dev.gen import policy_levels
from mldiag.engine.runtime import ROOT
from tests.fixtures.policies import env_config
from tests.fixtures.policy_levels import ENVS, EXPECTED, A, M


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


def test_the_generated_files_are_current():
    assert policy_levels.stale() == [], "run: python -m dev.gen.policy_levels --write"


def test_the_generated_files_repeat_the_declarations():
    from mldiag_policy import levels, pack

    assert ENVS == levels.ENVIRONMENTS
    declared = {name: tuple(levels.level_in(lv, env) for env in ENVS) for name, lv in pack.LEVELS.items()}
    assert declared == EXPECTED
    for env in ENVS:
        assert env_config(env)["all"] == levels.BASE_LEVELS[env]


def _generated_tree(tmp_path: Path) -> Path:
    """A directory holding the generated files as they are in the repository."""
    for rel in policy_levels.outputs():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp_path / rel)
    return tmp_path


def _row(text: str, rule: str) -> str | None:
    return next((line for line in text.splitlines() if line.startswith(f"| `{rule}` |")), None)


def test_the_generator_rewrites_levels_and_rows_and_keeps_the_prose(tmp_path, capsys):
    root = _generated_tree(tmp_path)
    readme = root / policy_levels.README
    text = readme.read_text()
    pinned, crds = _row(text, "k8s-images-pinned"), _row(text, "helm-cert-manager-crds")
    edited = pinned.replace("workload images have a tag", "images carry a tag").replace(
        "| advisory | mandatory | mandatory |", "| mandatory | advisory | advisory |"
    )
    text = text.replace(pinned, edited).replace(crds + "\n", "")
    text = text.replace(
        edited, edited + "\n| `k8s-gone` | removed | long ago | advisory | advisory | advisory |"
    )
    readme.write_text(text)
    (root / policy_levels.environment_path("staging")).write_text("{}\n")

    assert policy_levels.main(["--check"], root) == 1
    out = capsys.readouterr().out
    assert (
        "policies/README.md is stale" in out and "policies/config/environments/staging.json is stale" in out
    )
    assert policy_levels.main(["--write"], root) == 0
    assert capsys.readouterr().out.splitlines() == [
        "wrote policies/config/environments/staging.json",
        "wrote policies/README.md",
    ]
    text = readme.read_text()
    assert _row(text, "k8s-images-pinned") == pinned.replace(
        "workload images have a tag", "images carry a tag"
    )
    assert _row(text, "k8s-gone") is None
    # a rule without a row gets one from its description and documentation link
    assert _row(text, "helm-cert-manager-crds").startswith(
        "| `helm-cert-manager-crds` | cert-manager releases install"
    )
    assert _row(text, "helm-cert-manager-crds").endswith(
        "| https://docs.cloud.google.com/tpu/docs/ml-diagnostics/gke | mandatory | mandatory | mandatory |"
    )
    assert (root / policy_levels.environment_path("staging")).read_bytes() == (
        ROOT / policy_levels.environment_path("staging")
    ).read_bytes()
    assert policy_levels.main(["--check"], root) == 0


def test_the_generator_needs_its_markers_and_says_how_it_is_run(tmp_path, capsys):
    root = _generated_tree(tmp_path)
    readme = root / policy_levels.README
    readme.write_text(readme.read_text().replace(policy_levels.OPTIONS_END, ""))
    assert policy_levels.main(["--write"], root) == 2
    assert "needs the markers" in capsys.readouterr().err
    assert policy_levels.main([], root) == 2
    assert "--check" in capsys.readouterr().err


def test_the_generator_runs_as_a_module():
    run = subprocess.run(
        [sys.executable, "-m", "dev.gen.policy_levels", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert (run.returncode, run.stdout) == (0, "the policy levels' generated files are current\n")
