"""serving.py: with each request's inputs converted once per call, the pack answers exactly as with the
SDK's own per-policy conversions, converts each Struct once, and no rule writes to the shared inputs."""

from __future__ import annotations

import asyncio
import copy
import gc

import pytest
from google.protobuf import json_format, struct_pb2
from mldiag_policy import serving
from mldiag_policy.pack import POLICIES, may_check
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel
from pulumi_policy import policy as sdk
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

LATEST = "docker.io/library/busybox:latest"
DIAGON = "us-docker.pkg.dev/hypercomputediagon-release/daemon/diagon-daemon:v2.1.0"
K8S_PROVIDER = ("pulumi:providers:kubernetes", {"context": "lab"})
AZURE_PROVIDER = ("pulumi:providers:azure-native", {"subscriptionId": "00000000-0000-0000-0000-00000000000a"})


def _pod(*containers: dict, **spec) -> dict:
    return {"template": {"spec": {"containers": list(containers), **spec}}}


# (type, name, inputs, provider): something for every rule, violations and near misses, unknowns, manifests
RESOURCES = [
    ("kubernetes:apps/v1:DaemonSet", "agent", {
        "metadata": {"name": "agent", "labels": {"managed-mldiagnostics-gke": "yes"}},
        "spec": _pod({"name": "a", "image": LATEST, "securityContext": {"privileged": True}}, hostPID=True),
    }, K8S_PROVIDER),
    ("kubernetes:apps/v1:DaemonSet", "diagon", {
        "metadata": {"name": "diagon-daemon", "namespace": "diagon"},
        "spec": _pod(
            {"name": "d", "image": DIAGON, "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            hostNetwork=True,
        ),
    }, K8S_PROVIDER),
    ("kubernetes:apps/v1:DaemonSetPatch", "unknown", {
        "metadata": {"name": "diagon-daemon", "namespace": UNKNOWN_STRING_VALUE},
        "spec": _pod({"name": "d", "image": UNKNOWN_STRING_VALUE}),
    }, K8S_PROVIDER),
    ("kubernetes:core/v1:Namespace", "gke-mldiagnostics", {"metadata": {"name": "gke-mldiagnostics"}}, K8S_PROVIDER),
    ("kubernetes:helm.sh/v3:Release", "cert-manager", {
        "chart": "cert-manager", "version": "v1.16.0", "repositoryOpts": {"repo": "https://charts.jetstack.io"},
        "values": {"installCRDs": True},
    }, K8S_PROVIDER),
    ("kubernetes:helm.sh/v3:Release", "webhook", {
        "chart": "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics/injection-webhook", "version": "0.25.0",
    }, K8S_PROVIDER),
    ("kubernetes:helm.sh/v4:Chart", "operator", {
        "chart": "oci://us-docker.pkg.dev/ai-on-gke/mldiagnostics/connection-operator", "version": "0.23.0",
        "values": {"controller": {"args": ["--x"]}},
    }, K8S_PROVIDER),
    ("kubernetes:yaml/v2:ConfigGroup", "manifests", {
        "yaml": [f"kind: Deployment\nmetadata: {{name: web}}\nspec:\n  template:\n    spec:\n"
                 f"      containers: [{{name: w, image: '{LATEST}'}}]\n"],
        "objs": UNKNOWN_STRING_VALUE,
    }, K8S_PROVIDER),
    ("gcp:container/cluster:Cluster", "gke", {
        "name": "gke", "minMasterVersion": "1.34.0-gke.1",
        "managedMachineLearningDiagnosticsConfig": {"enabled": True},
    }, None),
    ("azure-native:kubernetesconfiguration/v20230501:Extension", "azureml", {
        "extensionType": "Microsoft.AzureML.Kubernetes", "clusterName": "aks", "clusterRp": "Microsoft.ContainerService",
        "configurationSettings": {"enableInference": "True", "InferenceRouterHA": "True",
                                  "sslKeyPemFile": "-----BEGIN PRIVATE KEY-----"},
        "scope": {"namespace": {}},
    }, AZURE_PROVIDER),
    ("azure-native:containerservice:ManagedCluster", "aks", {
        "resourceName": "aks", "agentPoolProfiles": [{"vmSize": "Standard_B2s", "count": 1}],
        "servicePrincipalProfile": {"clientId": "sp"}, "disableLocalAccounts": True,
    }, AZURE_PROVIDER),
    ("pulumi-python:dynamic/vertexai:ModelDevelopmentCluster", "mdc", {
        "node_pools": [{"id": "a"}], "orchestrator_spec": {"slurm_spec": {"login_node_pool_id": "b"}},
    }, None),
]  # fmt: skip


def _struct(value: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(value)
    return s


def _described(type_: str, name: str, props: dict, provider) -> dict:
    urn = f"urn:pulumi:dev::p::{type_}::{name}"
    out = {"type": type_, "name": name, "urn": urn, "properties": _struct(props)}
    if provider is not None:
        out["provider"] = analyzer_pb2.AnalyzerProviderResource(
            type=provider[0],
            properties=_struct(provider[1]),
            urn=f"urn:pulumi:dev::p::{provider[0]}::p",
            name="p",
        )
    return out


REQUESTS = [analyzer_pb2.AnalyzeRequest(**_described(*r)) for r in RESOURCES]
STACK = analyzer_pb2.AnalyzeStackRequest(
    resources=[analyzer_pb2.AnalyzerResource(**_described(*r)) for r in RESOURCES]
)


@pytest.fixture(scope="module")
def servicer():
    assert serving.share_conversions(may_check), "the SDK is not the one serving.py was written against"
    return sdk._PolicyAnalyzerServicer("ml-diagnostics", "0.1.0", POLICIES, EnforcementLevel.MANDATORY)


def _answers(call, request) -> list[dict]:
    return [json_format.MessageToDict(d) for d in call(request, None).diagnostics]


def test_the_answers_are_the_sdks_own(servicer):
    shared = [_answers(servicer.Analyze, r) for r in REQUESTS] + [_answers(servicer.AnalyzeStack, STACK)]
    own = [_answers(lambda r, c: serving._ORIGINAL["Analyze"](servicer, r, c), r) for r in REQUESTS]
    own.append(_answers(lambda r, c: serving._ORIGINAL["AnalyzeStack"](servicer, r, c), STACK))
    assert shared == own
    assert sum(map(len, shared)) > 30  # the resources violate something: the comparison means something


def test_analyze_runs_only_the_policies_that_may_check_the_type(servicer, monkeypatch):
    cls = type(servicer)
    ran: list[str] = []
    report = cls._create_report_violation

    def recording(self, response, name, *args):  # type: ignore[no-untyped-def]
        ran.append(name)
        return report(self, response, name, *args)

    monkeypatch.setattr(cls, "_create_report_violation", recording)
    by_name = {p.name: p for p in POLICIES}
    skipped = 0
    for request in REQUESTS:
        ran.clear()
        serving._ORIGINAL["Analyze"](servicer, request, None)
        everything = list(ran)
        ran.clear()
        servicer.Analyze(request, None)
        assert ran == [n for n in everything if may_check(by_name[n], request.type)]
        skipped += len(everything) - len(ran)
    assert skipped > len(REQUESTS)


def test_each_struct_and_each_requests_options_are_made_once_per_call(servicer, monkeypatch):
    calls = []

    def counting(message, *args, **kwargs):
        calls.append(message)
        return json_format.MessageToDict(message, *args, **kwargs)

    made = []

    class Options(sdk.PolicyResourceOptions):
        def __init__(self, *args):
            made.append(self)
            super().__init__(*args)

    monkeypatch.setattr(serving, "_convert", counting)
    monkeypatch.setattr(sdk, "PolicyResourceOptions", Options)
    for r, (_, _, _, provider) in zip(REQUESTS, RESOURCES, strict=True):
        calls.clear()
        made.clear()
        servicer.Analyze(r, None)
        assert len(calls) == (2 if provider else 1)
        assert len(made) == 1  # the request's options, for every policy of the call
    calls.clear()
    made.clear()
    servicer.AnalyzeStack(STACK, None)
    assert len(calls) == len(RESOURCES) + sum(1 for *_, p in RESOURCES if p)
    assert len(made) == len(RESOURCES)


def test_the_proxy_is_made_only_for_a_policy_that_reads_props(servicer, monkeypatch):
    """The pack's rules read the deserialized dict: serving a request makes no unknown-checking proxy of its
    inputs; a policy that reads `props` gets the SDK's own proxy of them, the same one for every policy."""
    made = []

    def recording(value):
        made.append(value)
        return proxy(value)

    proxy = serving._ORIGINAL["unknown_checking_proxy"]
    monkeypatch.setitem(serving._ORIGINAL, "unknown_checking_proxy", recording)
    for r in REQUESTS:
        servicer.Analyze(r, None)
    servicer.AnalyzeStack(STACK, None)
    assert made == [
        AZURE_PROVIDER[1]
    ]  # the one rule that reads a provider's props, on the one Azure extension
    got = []
    reading = sdk.ResourceValidationPolicy(
        name="reads", description="r.", validate=lambda args, report: got.append(args.props)
    )
    other = sdk._PolicyAnalyzerServicer("edge", "1.2.3", [reading, reading], EnforcementLevel.MANDATORY)
    other.Analyze(REQUESTS[0], None)
    assert len(made) == 2 and got[0] is got[1]
    assert type(got[0]) is type(proxy({})) and serving.plain(got[0]) == json_format.MessageToDict(
        REQUESTS[0].properties
    )


def test_a_struct_reads_as_json_format_reads_it():
    values = [
        {}, {"a": None, "b": True, "c": False, "d": 0, "e": 3, "f": -2.5, "g": 1e300, "h": 2**53 + 1},
        {"s": "", "u": "ünï ✓", "list": [], "mixed": [1, "x", None, [True, {"k": []}], {"n": {"m": {}}}]},
        {"deep": {"a": {"b": {"c": [[[{"d": "e"}]]]}}}}, {UNKNOWN_STRING_VALUE: UNKNOWN_STRING_VALUE},
    ]  # fmt: skip
    for value in values:
        s = _struct(value)
        ours, theirs = serving._convert(s), json_format.MessageToDict(s)
        assert ours == theirs
        assert repr(ours) == repr(theirs)  # key order and number types (3.0, not 3) too
    for number in (float("nan"), float("inf"), -float("inf")):
        s = _struct({"a": [{"b": 1}], "z": 0})
        s["z"] = number
        with pytest.raises(ValueError, match="Fail to serialize"):
            serving._convert(s)


def test_no_rule_writes_to_the_shared_inputs(servicer, monkeypatch):
    made = []

    def recording(props, proxy_secrets=False):
        out = sdk_deserialize(props, proxy_secrets)
        made.append((out, copy.deepcopy(out)))
        return out

    sdk_deserialize = serving._ORIGINAL["deserialize_properties"]
    monkeypatch.setitem(serving._ORIGINAL, "deserialize_properties", recording)
    for r in REQUESTS:
        servicer.Analyze(r, None)
    servicer.AnalyzeStack(STACK, None)
    assert made and all(after == before for after, before in made)


def test_outside_a_call_nothing_is_shared(servicer):
    s = _struct({"a": {"b": 1}})
    assert serving._memo() is None
    assert serving.once("x", s, dict) is not serving.once("x", s, dict)
    proxied = serving._inputs(s).proxied()
    assert serving.plain(proxied) == {"a": {"b": 1}} and serving.plain(proxied) is not serving.plain(proxied)
    servicer.Analyze(REQUESTS[0], None)
    assert serving._memo() is None  # a call leaves nothing behind


def test_analyze_stack_gives_the_collector_back_as_it_found_it(servicer):
    was = gc.isenabled()
    try:
        gc.enable()
        servicer.AnalyzeStack(STACK, None)
        assert gc.isenabled()
        gc.disable()
        servicer.AnalyzeStack(STACK, None)
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_another_sdk_version_gets_the_sdks_own_servicer_untouched():
    """The guard: on any pulumi-policy but the pinned one nothing is replaced (the pack is only slower)."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "from mldiag_policy import serving\n"
        "from pulumi_policy import policy as sdk\n"
        "serving.SDK_VERSION = '0.0.0'\n"
        "before = (sdk._PolicyAnalyzerServicer.Analyze, sdk.deserialize_properties, sdk.json_format)\n"
        "assert serving.share_conversions() is False\n"
        "assert before == (sdk._PolicyAnalyzerServicer.Analyze, sdk.deserialize_properties, sdk.json_format)\n"
        "print('untouched')\n"
    )
    pack = Path(serving.__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=pack, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "untouched", out.stderr


def _stack_graph() -> analyzer_pb2.AnalyzeStackRequest:
    """A stack with what AnalyzeStack links: parents, dependencies and property dependencies (in the request
    and outside it), options, a provider and an unknown value."""
    ns, ds = (
        "urn:pulumi:dev::p::kubernetes:core/v1:Namespace::ns",
        "urn:pulumi:dev::p::kubernetes:apps/v1:DaemonSet::d",
    )
    parent, gone = (
        "urn:pulumi:dev::p::mldiag:index:Diagon::diagon",
        "urn:pulumi:dev::p::kubernetes:core/v1:Secret::gone",
    )
    described = [
        _described("kubernetes:core/v1:Namespace", "ns", {"metadata": {"name": "diagon"}}, K8S_PROVIDER),
        _described(
            "kubernetes:apps/v1:DaemonSet", "d", {"spec": _pod({"name": "d", "image": DIAGON})}, K8S_PROVIDER
        ),
        _described("kubernetes:core/v1:ConfigMap", "c", {"data": {"k": UNKNOWN_STRING_VALUE}}, None),
    ]
    described[0]["parent"] = parent
    described[1].update(
        parent=parent,
        dependencies=[ns, gone],
        propertyDependencies={"metadata": analyzer_pb2.AnalyzerPropertyDependencies(urns=[ns, gone])},
        options=analyzer_pb2.AnalyzerResourceOptions(
            protect=True, ignoreChanges=["spec"], parent=parent,
            customTimeouts=analyzer_pb2.AnalyzerResourceOptions.CustomTimeouts(create=60),
        ),
    )  # fmt: skip
    described[2].update(parent=ns, dependencies=[ds])
    return analyzer_pb2.AnalyzeStackRequest(resources=[analyzer_pb2.AnalyzerResource(**d) for d in described])


def _seen(args) -> list:
    """What a stack policy can read of its arguments, in plain data."""
    urn = lambda r: r.urn if r is not None else None  # noqa: E731
    o = lambda r: (r.opts.protect, list(r.opts.ignore_changes), r.opts.parent,  # noqa: E731
                   r.opts.custom_timeouts.create_seconds)  # fmt: skip
    return [
        (r.resource_type, r.urn, r.name, urn(r.parent), [d.urn for d in r.dependencies],
         {k: [d.urn for d in v] for k, v in r.property_dependencies.items()}, o(r),
         urn(r.provider), r.provider and serving.plain(r.provider.props), list(r.props))
        for r in args.resources
    ] + [args.get_config(), dict(args.stack_tags)]  # fmt: skip


def _edge(policies: list) -> sdk._PolicyAnalyzerServicer:
    """A servicer of `policies` (pack "edge" 1.2.3, advisory by default) with stack tags {"team": "ml"} and
    the policy "looks" configured mandatory with {"limit": 3}."""
    assert serving.share_conversions(may_check)
    servicer = sdk._PolicyAnalyzerServicer("edge", "1.2.3", policies, EnforcementLevel.ADVISORY)
    servicer.ConfigureStack(analyzer_pb2.AnalyzerStackConfigureRequest(tags={"team": "ml"}), None)
    config = {
        "looks": analyzer_pb2.PolicyConfig(
            enforcementLevel=analyzer_pb2.MANDATORY, properties=_struct({"limit": 3})
        )
    }
    servicer.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig=config), None)
    return servicer


def test_analyze_stack_answers_as_the_sdks_own_loop_for_every_kind_of_stack_policy():
    """Levels (remediate reported as mandatory, disabled skipped), config, stack tags, the linked graph, an
    unknown value, not-applicable and async policies: the replaced loop against the SDK's, diagnostics and
    what each policy saw."""
    seen: list = []

    def looking(args, report):
        seen.append(_seen(args))
        report("d is looked at", args.resources[1].urn)

    def reading_unknown(args, report):
        report("never", args.resources[2].props["data"]["k"])

    async def later(args, report):
        await asyncio.sleep(0)
        report("after an await")

    def stack(name, validate, level=EnforcementLevel.MANDATORY, **kw):
        return sdk.StackValidationPolicy(
            name=name, description=f"{name}.", validate=validate, enforcement_level=level, **kw
        )

    policies = [
        stack("looks", looking, config_schema=sdk.PolicyConfigSchema({"limit": {"type": "number"}})),
        stack("unknown", reading_unknown, EnforcementLevel.ADVISORY),
        stack("not-here", lambda args, report: args.not_applicable("no cluster of that kind")),
        stack("async", later),
        stack(
            "remediates",
            lambda args, report: report("remediate is mandatory here"),
            EnforcementLevel.REMEDIATE,
        ),
        stack("off", lambda args, report: report("never"), EnforcementLevel.DISABLED),
        sdk.ResourceValidationPolicy(name="resource", description="r.", validate=lambda a, r: r("never")),
    ]
    servicer = _edge(policies)
    request = _stack_graph()

    ours = servicer.AnalyzeStack(request, None)
    ours_seen = seen[:]
    seen.clear()
    theirs = serving._ORIGINAL["AnalyzeStack"](servicer, request, None)

    assert json_format.MessageToDict(ours) == json_format.MessageToDict(theirs)
    assert ours_seen == seen and len(seen) == 1
    resources = seen[0][:-2]
    assert [r[3] for r in resources] == [None, None, "urn:pulumi:dev::p::kubernetes:core/v1:Namespace::ns"]
    assert resources[1][4:6] == (["urn:pulumi:dev::p::kubernetes:core/v1:Namespace::ns"],
                                 {"metadata": ["urn:pulumi:dev::p::kubernetes:core/v1:Namespace::ns"]})  # fmt: skip
    assert resources[1][6] == (True, ["spec"], "urn:pulumi:dev::p::mldiag:index:Diagon::diagon", 60)
    assert resources[2][4] == ["urn:pulumi:dev::p::kubernetes:apps/v1:DaemonSet::d"]
    assert seen[0][-2:] == [{"limit": 3}, {"team": "ml"}]
    answers = json_format.MessageToDict(ours)
    assert [(d["policyName"], d.get("enforcementLevel", "ADVISORY")) for d in answers["diagnostics"]] == [
        ("looks", "MANDATORY"), ("unknown", "ADVISORY"), ("async", "MANDATORY"), ("remediates", "MANDATORY"),
    ]  # fmt: skip
    assert (
        "can't run policy 'unknown' from policy pack 'edge@v1.2.3' during preview"
        in answers["diagnostics"][1]["message"]
    )
    assert answers["notApplicable"] == [{"policyName": "not-here", "reason": "no cluster of that kind"}]


def _seen_resource(args) -> list:
    """What a resource policy can read of its arguments, in plain data."""
    o = args.opts
    return [args.resource_type, args.urn, args.name, serving.plain(args.props), o.protect, list(o.ignore_changes),
            o.parent, o.custom_timeouts.create_seconds, o.delete_before_replace,
            args.provider and (args.provider.resource_type, args.provider.urn, args.provider.name,
                             serving.plain(args.provider.props)),
            args.get_config(), dict(args.stack_tags)]  # fmt: skip


def test_analyze_answers_as_the_sdks_own_loop_for_every_kind_of_resource_policy():
    """Levels (remediate reported as mandatory, disabled skipped), a remediation-only policy, config, stack tags,
    options, the provider, an unknown value, not-applicable and async policies: the replaced loop against the
    SDK's, diagnostics and what each policy saw."""
    seen: list = []

    def looking(args, report):
        seen.append(_seen_resource(args))
        report("looked at", args.urn)

    def reading_unknown(args, report):
        report("never", args.props["spec"]["image"])

    async def later(args, report):
        await asyncio.sleep(0)
        report("after an await")

    def resource(name, level=EnforcementLevel.MANDATORY, **kw):
        return sdk.ResourceValidationPolicy(name=name, description=f"{name}.", enforcement_level=level, **kw)

    policies = [
        resource(
            "looks", validate=looking, config_schema=sdk.PolicyConfigSchema({"limit": {"type": "number"}})
        ),
        resource("unknown", EnforcementLevel.ADVISORY, validate=reading_unknown),
        resource("not-here", validate=lambda args, report: args.not_applicable("not this kind")),
        resource("async", validate=later),
        resource("remediates", EnforcementLevel.REMEDIATE, validate=lambda args, report: report("still")),
        resource("fixes-only", remediate=lambda args: None),
        resource("off", EnforcementLevel.DISABLED, validate=lambda args, report: report("never")),
        resource("looks-again", validate=looking),
        sdk.StackValidationPolicy(name="stack", description="s.", validate=lambda a, r: r("never")),
    ]
    servicer = _edge(policies)
    described = _described(
        "kubernetes:apps/v1:DaemonSet", "d",
        {"spec": {"image": UNKNOWN_STRING_VALUE, "n": 2, "on": True}}, K8S_PROVIDER,
    )  # fmt: skip
    described["options"] = analyzer_pb2.AnalyzerResourceOptions(
        protect=True, ignoreChanges=["spec"], parent="urn:pulumi:dev::p::mldiag:index:Diagon::diagon",
        deleteBeforeReplaceDefined=True, deleteBeforeReplace=True,
        customTimeouts=analyzer_pb2.AnalyzerResourceOptions.CustomTimeouts(create=60),
    )  # fmt: skip
    request = analyzer_pb2.AnalyzeRequest(**described)

    ours = servicer.Analyze(request, None)
    ours_seen = seen[:]
    seen.clear()
    theirs = serving._ORIGINAL["Analyze"](servicer, request, None)

    assert json_format.MessageToDict(ours) == json_format.MessageToDict(theirs)
    assert ours_seen == seen and len(seen) == 2
    assert seen[0] == [
        "kubernetes:apps/v1:DaemonSet", described["urn"], "d", {"spec": {"image": UNKNOWN_STRING_VALUE, "n": 2.0,
        "on": True}}, True, ["spec"], "urn:pulumi:dev::p::mldiag:index:Diagon::diagon", 60, True,
        ("pulumi:providers:kubernetes", "urn:pulumi:dev::p::pulumi:providers:kubernetes::p", "p", {"context": "lab"}),
        {"limit": 3}, {"team": "ml"},
    ]  # fmt: skip
    assert seen[1][-2:] == [{}, {"team": "ml"}]
    answers = json_format.MessageToDict(ours)
    assert [(d["policyName"], d.get("enforcementLevel", "ADVISORY")) for d in answers["diagnostics"]] == [
        ("looks", "MANDATORY"), ("unknown", "ADVISORY"), ("async", "MANDATORY"), ("remediates", "MANDATORY"),
        ("looks-again", "MANDATORY"),
    ]  # fmt: skip
    assert (
        "can't run policy 'unknown' from policy pack 'edge@v1.2.3' during preview"
        in answers["diagnostics"][1]["message"]
    )
    assert answers["notApplicable"] == [
        {"policyName": "not-here", "reason": "not this kind"},
        {"policyName": "fixes-only", "reason": "Policy does not implement validate"},
    ]
