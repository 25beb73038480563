"""Fuzz: no rule raises on arbitrary input shapes (an exception would fail the whole Analyze call).

Runs the rule functions in-process with arbitrary JSON-like properties (including the SDK's unknown
sentinels) for every type token the pack matches; the only exception allowed is the SDK's UnknownValueError,
which it reports as an advisory "can't run policy during preview" diagnostic.
"""

from __future__ import annotations

import contextlib
import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mldiag_policy.pack import POLICIES
from pulumi_policy import ResourceValidationArgs, ResourceValidationPolicy, StackValidationArgs
from pulumi_policy.policy import PolicyResource, PolicyResourceOptions
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from tests.fixtures.policies import UNKNOWN_STRING
from tests.test_policies_azure_ml import PEMS, extension
from tests.test_policies_gke import adopted, cluster
from tests.test_policies_kubernetes import JAX08_ARGS, cert_manager, diagon, operator, webhook
from tests.test_policies_model_development import spec

TYPES = [
    "kubernetes:apps/v1:DaemonSet",
    "kubernetes:batch/v1:CronJob",
    "kubernetes:core/v1:Pod",
    "kubernetes:core/v1:Namespace",
    "kubernetes:helm.sh/v3:Release",
    "pulumi:providers:kubernetes",
    "gcp:container/cluster:Cluster",
    "pulumi-python:dynamic/gke:ManagedMlDiagnostics",
    "azure-native:kubernetesconfiguration:Extension",
    "azure-native:containerservice:ManagedCluster",
    "pulumi-python:dynamic/vertexai:ModelDevelopmentCluster",
    "kubernetes:apps/v1:DaemonSetPatch",
    "kubernetes:yaml/v2:ConfigGroup",
    "kubernetes:helm.sh/v4:Chart",
    "azure-native:kubernetesconfiguration/v20230501:Extension",
    "azure-native:containerservice:AgentPool",
]
KEYS = [
    "objs",
    "yaml",
    "agentPoolProfiles",
    "vmSize",
    "count",
    "podIdentityProfile",
    "apiServerAccessProfile",
    "authorizedIPRanges",
    "dnsPolicy",
    "update_mode",
    "spec",
    "template",
    "containers",
    "initContainers",
    "image",
    "metadata",
    "name",
    "namespace",
    "labels",
    "securityContext",
    "privileged",
    "hostNetwork",
    "resources",
    "limits",
    "memory",
    "chart",
    "version",
    "values",
    "repositoryOpts",
    "repo",
    "installCRDs",
    "crds",
    "enabled",
    "mldiagnosticsConnectionOperator",
    "controller",
    "args",
    "managedMachineLearningDiagnosticsConfig",
    "minMasterVersion",
    "clusterVersion",
    "extensionType",
    "configurationSettings",
    "configurationProtectedSettings",
    "scope",
    "cluster",
    "releaseNamespace",
    "clusterRp",
    "clusterResourceName",
    "identity",
    "type",
    "disableLocalAccounts",
    "node_pools",
    "id",
    "node_image",
    "orchestrator_spec",
    "slurm_spec",
    "partitions",
    "node_pool_ids",
    "login_node_pool_id",
    "default_partition_id",
    "config",
    "scheduling",
    "deletion_policy",
    "annotations",
    "enableInference",
    "enableTraining",
    "allowInsecureConnections",
    "sslCname",
    "clusterId",
    "jobTemplate",
]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(
        [
            "",
            "latest",
            "v1.13.0",
            "0.24.0",
            "1.35.0-gke.3065000",
            "True",
            "Microsoft.AzureML.Kubernetes",
            "diagon",
            "cert-manager",
            "256Mi",
            "oci://x/y",
            UNKNOWN_STRING,
        ]
    ),
    st.text(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=20,
)
PROPS = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6)
OPTS = PolicyResourceOptions(False, [], None, [], None, [], None)


def _run(policy, args) -> None:
    with contextlib.suppress(UnknownValueError):
        policy.validate(args, lambda msg, urn=None: None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(type_=st.sampled_from(TYPES), props=PROPS)
def test_resource_rules_never_raise(type_, props):
    for policy in POLICIES:
        if isinstance(policy, ResourceValidationPolicy):
            args = ResourceValidationArgs(type_, unknown_checking_proxy(props), "urn:x", "x", OPTS, None, {})
            _run(policy, args)


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resources=st.lists(st.tuples(st.sampled_from(TYPES), PROPS), max_size=5))
def test_stack_rules_never_raise(resources):
    objs = [
        PolicyResource(t, unknown_checking_proxy(p), f"urn:{i}", str(i), OPTS, None, None, [], {})
        for i, (t, p) in enumerate(resources)
    ]
    for i, r in enumerate(objs):
        r.dependencies = objs[:i]
    for policy in POLICIES:
        if not isinstance(policy, ResourceValidationPolicy):
            _run(policy, StackValidationArgs(objs, {}))


TEMPLATES = [
    ("kubernetes:apps/v1:DaemonSet", diagon()),
    ("kubernetes:helm.sh/v3:Release", cert_manager()),
    ("kubernetes:helm.sh/v3:Release", webhook()),
    ("kubernetes:helm.sh/v3:Release", operator("0.24.0", JAX08_ARGS)),
    ("kubernetes:core/v1:Namespace", {"metadata": {"name": "gke-mldiagnostics", "annotations": {"a": "b"}}}),
    ("gcp:container/cluster:Cluster", cluster()),
    ("pulumi-python:dynamic/gke:ManagedMlDiagnostics", adopted()),
    (
        "azure-native:kubernetesconfiguration:Extension",
        extension({"enableInference": "True"}, PEMS, kind="arc"),
    ),
    ("azure-native:containerservice:ManagedCluster", {"identity": {"type": "SystemAssigned"}}),
    ("pulumi-python:dynamic/vertexai:ModelDevelopmentCluster", spec(config={"A": "1"})),
]


def mutate(data, obj):
    """Replaces, drops or keeps each part of a realistic resource: shapes a rule may meet half-right."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            choice = data.draw(st.sampled_from(["keep"] * 6 + ["replace", "drop"]))
            if choice == "replace":
                out[k] = data.draw(VALUES)
            elif choice == "keep":
                out[k] = mutate(data, v)
        return out
    if isinstance(obj, list):
        return [mutate(data, v) for v in obj]
    return obj if data.draw(st.booleans()) else data.draw(SCALARS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rules_never_raise_on_mutated_realistic_resources(data):
    picked = data.draw(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=4))
    objs = []
    for i, (type_, template) in enumerate(picked):
        props = mutate(data, copy.deepcopy(template))
        objs.append(
            PolicyResource(type_, unknown_checking_proxy(props), f"urn:{i}", str(i), OPTS, None, None, [], {})
        )
        for policy in POLICIES:
            if isinstance(policy, ResourceValidationPolicy):
                _run(
                    policy,
                    ResourceValidationArgs(
                        type_, unknown_checking_proxy(props), "urn:x", "x", OPTS, None, {}
                    ),
                )
    for i, r in enumerate(objs):
        r.dependencies = objs[:i]
    for policy in POLICIES:
        if not isinstance(policy, ResourceValidationPolicy):
            _run(policy, StackValidationArgs(objs, {}))
