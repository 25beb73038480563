"""The pack's own tests: they run from a copy of policies/ with only policies/requirements-dev.txt installed
(the repository runs them that way in tests/test_policies_selfcontained.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import grpc
import jsonschema
import pytest
from google.protobuf import empty_pb2, struct_pb2
from harness import BY_NAME, PACK_DIR, check
from mldiag_policy import common, compat
from mldiag_policy.common import AZUREML_DOCS, CONCERNS, GKE_DOCS, MDC_DOCS
from mldiag_policy.pack import POLICIES
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import Severity

DS = "kubernetes:apps/v1:DaemonSet"


def test_every_policy_carries_its_metadata():
    assert len(BY_NAME) == len(POLICIES)
    for p in POLICIES:
        assert p.url in (GKE_DOCS, AZUREML_DOCS, MDC_DOCS), p.name
        assert isinstance(p.severity, Severity), p.name
        assert p.remediation_steps and len(p.description) > 60, p.name
        assert "seed" not in p.description.lower(), p.name


# The rules whose framework is the Kubernetes Pod Security Standards: they check what its profiles define.
POD_SECURITY = {"k8s-diagon-pod-security", "k8s-privileged-only-diagon"}


def test_every_rule_is_tagged_with_its_kind_its_cloud_and_its_concern():
    """(tests/test_policies_tags.py holds the kinds and clouds against the program's.)"""
    for p in POLICIES:
        *kinds, cloud, concern = p.tags
        assert kinds and all(re.fullmatch(r"[a-z][A-Za-z]*", k) for k in kinds), p.name
        assert re.fullmatch(r"[a-z][a-z0-9-]*", cloud) and concern in CONCERNS, p.name
    by_concern = {p.name for p in POLICIES if p.tags[-1] == "pod-security"}
    assert by_concern == POD_SECURITY


def test_the_pod_security_rules_name_the_pod_security_standards_as_their_framework():
    frameworks = {p.name: p.framework for p in POLICIES if p.framework is not None}
    assert set(frameworks) == POD_SECURITY
    for name, f in frameworks.items():
        assert (f.name, f.version, f.reference) == (
            "Kubernetes Pod Security Standards",
            common.POD_SECURITY_STANDARDS_VERSION,
            "https://kubernetes.io/docs/concepts/security/pod-security-standards/",
        ), name
        assert "Privileged" in f.specification and "Baseline" in f.specification, name


@pytest.mark.parametrize(
    ("about", "message"),
    [
        (common.IN_CLUSTER.concern("safety"), "concern 'safety' is not one of accounts, availability, "),
        (common.Subject((), "kubernetes", GKE_DOCS).concern("network"), "names no target kind"),
        (
            common.Subject(("k8s-clusters",), "kubernetes", GKE_DOCS).concern("network"),
            "is not a stack file key",
        ),
        (
            common.IN_CLUSTER.concern("pod-security", common.PolicyComplianceFramework(name="PSS")),
            "its framework needs a name, version, reference and specification",
        ),
    ],
)
def test_a_rule_that_does_not_say_what_it_is_about_fails_as_the_pack_loads(about, message):
    with pytest.raises(ValueError, match=r"^rule 'test-only-about': about: .*" + message):
        common.resource_rule(
            "test-only-about",
            "A rule built by the tests only, to see what a declaration of what it is about may say.",
            lambda *a: None,
            applies={"x:y:Z"},
            about=about,
            severity=Severity.LOW,
            remediation="None.",
            levels={},
        )
    assert "test-only-about" not in common.DECLARED


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
def test_environment_configs_validate_against_the_policies_schemas(env):
    cfg = json.loads((PACK_DIR / "config" / "environments" / f"{env}.json").read_text())
    level = {"enum": ["advisory", "mandatory", "remediate", "disabled"]}
    props = {"all": level}
    for p in POLICIES:
        options = p.config_schema.properties if p.config_schema else {}
        props[p.name] = {
            "anyOf": [
                level,
                {
                    "type": "object",
                    "properties": {"enforcementLevel": level, **options},
                    "additionalProperties": False,
                },
            ]
        }
    jsonschema.validate(cfg, {"type": "object", "properties": props, "additionalProperties": False})


def test_invalid_options_are_one_violation_naming_the_option():
    msgs = check("k8s-images-pinned", DS, {"spec": {}}, {"requireDigest": "yes"})
    assert msgs == [
        "this policy's options in the policy pack config are invalid: requireDigest: 'yes' is not of type "
        "'boolean'. Remediation: fix them in policies/config/<stack>.json (each option's schema is in `pulumi "
        "policy` output and policies/README.md)."
    ]


def test_compat_prerelease_semantics():
    assert compat.connection_operator_chart_problem("0.8.1", "0.24.0") is None
    assert compat.connection_operator_chart_problem("0.8.1", "0.24.0-rc.1")
    assert compat.connection_operator_chart_problem("0.9", "0.24.0-alpha")
    assert compat.connection_operator_chart_problem("0.9", "0.24.1") is None


def test_pack_serves_the_analyzer_protocol_from_its_own_directory():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sys.executable, str(PACK_DIR / "__main__.py")],
        cwd=PACK_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        port = int(proc.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = analyzer_pb2_grpc.AnalyzerStub(channel)
            info = stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
            assert [p.name for p in info.policies] == [p.name for p in POLICIES]
            # what each rule is about reaches the engine: its tags, and the framework of the pod-security ones
            assert [list(p.tags) for p in info.policies] == [p.tags for p in POLICIES]
            served = {
                p.name: (
                    p.framework.name,
                    p.framework.version,
                    p.framework.reference,
                    p.framework.specification,
                )
                for p in info.policies
                if p.HasField("framework")
            }
            assert served == {
                p.name: (
                    p.framework.name,
                    p.framework.version,
                    p.framework.reference,
                    p.framework.specification,
                )
                for p in POLICIES
                if p.framework is not None
            }
            assert set(served) == POD_SECURITY
            props = struct_pb2.Struct()
            props.update(
                {
                    "metadata": {"name": "agent"},
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [{"name": "app", "image": "docker.io/library/busybox:latest"}]
                            }
                        }
                    },
                }
            )
            resp = stub.Analyze(
                analyzer_pb2.AnalyzeRequest(
                    type=DS, properties=props, urn="urn:pulumi:t::p::ds::agent", name="a"
                ),
                timeout=30,
            )
            pinned = [d for d in resp.diagnostics if d.policyName == "k8s-images-pinned"]
            assert len(pinned) == 1 and pinned[0].message.endswith(f"\nSee {GKE_DOCS}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


# serving.py wraps the pinned SDK's servicer and replaces its AnalyzeStack loop, which answers a policy's
# not-applicable error as the SDK does (guarded by version; without it the pack works, only slower)
PRIVATE_SDK_USE = {"serving.py": {"_PolicyAnalyzerServicer", "_NotApplicableError"}}


def _private_sdk_names(tree) -> set[str]:
    """Private names a module reaches in pulumi_policy: imported, as an attribute, or through getattr."""
    import ast

    aliases, found = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name.startswith("pulumi_policy")}
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pulumi_policy"):
            found |= {p for p in node.module.split(".") if p.startswith("_")}
            found |= {a.name for a in node.names if a.name.startswith("_")}
            aliases |= {a.asname or a.name for a in node.names}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
        ):
            found.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
            and len(node.args) > 1
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in aliases
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
        ):
            found.add(node.args[1].value)
        if isinstance(node, ast.Constant) and node.value == "__target":
            found.add("__target")  # the proxy's private target
    return found


def test_the_pack_reads_no_private_pulumi_policy_names_but_the_one_it_declares():
    import ast

    seen = {}
    for path in (PACK_DIR / "mldiag_policy").rglob("*.py"):
        if names := _private_sdk_names(ast.parse(path.read_text())):
            seen[path.name] = names
    assert seen == PRIVATE_SDK_USE
