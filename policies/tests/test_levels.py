"""Each rule's levels by environment are declared once, beside the rule (levels.py), and the pack is every rule
of every module in rules/, found without a list."""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys

import pytest
from harness import PACK_DIR
from mldiag_policy import common, levels
from mldiag_policy.levels import ADVISORY, MANDATORY, with_options
from mldiag_policy.pack import LEVELS, POLICIES, RULE_MODULES, environment_config
from pulumi_policy import ResourceValidationPolicy, Severity, StackValidationPolicy

RULES_DIR = PACK_DIR / "mldiag_policy" / "rules"
RULE_FILES = sorted(p for p in RULES_DIR.glob("*.py") if p.name != "__init__.py")


def _built_in(path) -> list[str]:
    """The names of the rules a module's source builds (resource_rule / stack_rule calls), read from its text."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("resource_rule", "stack_rule"):
            names.append(node.args[0].value)
    return names


def test_every_rule_module_is_in_the_pack_with_every_rule_it_builds():
    assert [m.__name__.rsplit(".", 1)[1] for m in RULE_MODULES] == [p.stem for p in RULE_FILES]
    built = [name for path in RULE_FILES for name in _built_in(path)]
    assert sorted(built) == [p.name for p in POLICIES]
    for path in RULE_FILES:
        module = importlib.import_module(f"mldiag_policy.rules.{path.stem}")
        policies = [
            v
            for v in vars(module).values()
            if isinstance(v, (ResourceValidationPolicy, StackValidationPolicy))
        ]
        assert all(any(p is q for q in POLICIES) for p in policies), path.name
        assert {p.name for p in policies} >= set(_built_in(path)), path.name


def test_the_pack_is_in_rule_name_order_each_rule_once():
    names = [p.name for p in POLICIES]
    assert names == sorted(set(names)) and list(LEVELS) == names


def test_a_new_rule_module_joins_the_pack_as_it_is(tmp_path):
    copy = tmp_path / "pack"
    shutil.copytree(
        PACK_DIR / "mldiag_policy", copy / "mldiag_policy", ignore=shutil.ignore_patterns("__pycache__")
    )
    (copy / "mldiag_policy" / "rules" / "extra.py").write_text(
        "from pulumi_policy import Severity\n"
        "from ..common import IN_CLUSTER, resource_rule\n"
        "from ..levels import MANDATORY\n"
        "def _check(args, props, options, unknowns, report):\n"
        "    return None\n"
        "extra = resource_rule('zz-extra', 'A rule in a module no list names, for the discovery test of the pack.',"
        " _check, applies={'x:y:Z'}, about=IN_CLUSTER.concern('configuration'), severity=Severity.LOW,"
        " remediation='None.',"
        " levels={'dev': MANDATORY})\n"
    )
    code = (
        "import json; from mldiag_policy import pack; "
        "print(json.dumps([[p.name for p in pack.POLICIES][-1], pack.environment_config('dev')['zz-extra']]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=copy, capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(out.stdout) == ["zz-extra", "mandatory"]


def _rule(**about):
    def check(args, props, options, unknowns, report):
        return None

    return common.resource_rule(
        "test-only-rule",
        "A rule built by the tests only, to see what a declaration of levels may say.",
        check,
        applies={"x:y:Z"},
        about=common.IN_CLUSTER.concern("configuration"),
        severity=Severity.LOW,
        remediation="None.",
        **about,
    )


def test_a_rule_must_declare_its_levels():
    with pytest.raises(TypeError, match="levels"):
        _rule()
    assert "test-only-rule" not in common.DECLARED


@pytest.mark.parametrize(
    ("levels_", "defaults", "message"),
    [
        ({"qa": MANDATORY}, None, "unknown environment 'qa'; environments: dev, staging, prod"),
        ({"dev": "fatal"}, None, "dev: level 'fatal' is not one of advisory, mandatory, remediate, disabled"),
        ({"dev": {"strict": True}}, {"strict": ({"type": "boolean"}, False)}, "names its enforcementLevel"),
        ({"prod": with_options(MANDATORY, strcit=True)}, {"strict": ({"type": "boolean"}, False)}, "strcit"),
        (
            {"prod": with_options(MANDATORY, strict="yes")},
            {"strict": ({"type": "boolean"}, False)},
            "not of type",
        ),
        ({"prod": with_options(MANDATORY, strict=True)}, None, "the rule's options: none"),
    ],
)
def test_a_declaration_that_cannot_be_right_fails_as_the_pack_loads(levels_, defaults, message):
    about = {"defaults": defaults} if defaults is not None else {}
    with pytest.raises(ValueError, match="rule 'test-only-rule': levels: .*" + message.replace("(", r"\(")):
        _rule(levels=levels_, **about)
    assert "test-only-rule" not in common.DECLARED


def test_two_rules_of_one_name_are_refused():
    with pytest.raises(ValueError, match="another rule has this name"):
        common.resource_rule(
            POLICIES[0].name,
            "x" * 61,
            lambda *a: None,
            applies={"x:y:Z"},
            about=common.IN_CLUSTER.concern("configuration"),
            severity=Severity.LOW,
            remediation="None.",
            levels=levels.FOLLOWS_BASE,
        )


def test_an_environment_a_rule_leaves_out_takes_the_base_level():
    declared = {"dev": ADVISORY, "prod": with_options(MANDATORY, x=1)}
    assert [levels.level_in(declared, env) for env in levels.ENVIRONMENTS] == [ADVISORY, MANDATORY, MANDATORY]
    assert levels.options_in(declared, "prod") == {"x": 1} and levels.options_in(declared, "staging") == {}
    assert levels.environment_config("staging", [("b", declared), ("a", levels.everywhere(ADVISORY))]) == {
        "all": levels.BASE_LEVELS["staging"],
        "a": ADVISORY,
    }
    with pytest.raises(ValueError, match="environment 'qa' is unknown; allowed: dev, staging, prod"):
        levels.environment_config("qa", [])


def test_without_a_config_each_rule_runs_at_its_prod_level():
    for p in POLICIES:
        assert p.enforcement_level.value == levels.level_in(LEVELS[p.name], levels.UNCONFIGURED), p.name


@pytest.mark.parametrize("env", levels.ENVIRONMENTS)
def test_the_environment_files_hold_the_declared_levels(env):
    on_disk = json.loads((PACK_DIR / "config" / "environments" / f"{env}.json").read_text())
    assert on_disk == environment_config(env)
    assert list(on_disk) == list(environment_config(env))
