"""The pack as the analyzer serves it: each request's inputs converted once for all policies.

pulumi-policy (1.21.0, pinned) converts a request's properties for every policy it runs: protobuf Struct
-> dict (`json_format.MessageToDict`) -> `deserialize_properties` -> `unknown_checking_proxy`, and the
provider's properties the same way; AnalyzeStack converts every resource of the stack once per stack
policy. With 29 resource policies that is 29 conversions of each resource, most of an Analyze call.

`share_conversions()` (called by `__main__.py` before it builds the PolicyPack) installs this module's
Analyze and AnalyzeStack: the SDK's loops (same policies, levels, config, diagnostics and order) with each
Struct converted once per call, every policy of the call getting the same deserialized dict, and an
Analyze call's policies the same resource options and provider (each policy still gets its own
`ResourceValidationArgs`). AnalyzeStack builds the stack's `PolicyResource` graph once for all stack
policies, where the SDK rebuilt it per policy. The unknown-checking proxy, the SDK's `props`, is made the
first time a policy reads `props`: the pack's rules read the deserialized dict (`inputs()`), so they never
pay for it. `plain(proxy)` during a call is the dict the proxy was made from, and `once()` keeps other
per-resource work (the forms expansion) for the call's other policies. Outside a call (the pack's tests
call rules directly) everything works as without it. With `may_check`, an Analyze call runs only the
policies that may check the request's resource type: a policy of another type would return at once, but
the SDK's work around each policy (its arguments, report callback) was most of what a call cost.

This is the one place the pack relies on pulumi-policy's internals: the private servicer
(`pulumi_policy.policy._PolicyAnalyzerServicer`), its name-mangled attributes and `_NotApplicableError`.
`share_conversions()` installs nothing unless pulumi-policy is the pinned version. tests/test_serving.py
checks that the answers are the SDK's own loops' (diagnostics, not-applicable entries and what each policy
saw), that each Struct is converted once per call, and that no rule writes to the inputs it shares with
the other policies.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import math
import threading
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import (
    EnforcementLevel,
    PolicyProviderResource,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import policy as _sdk
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy
from pulumi_policy.version import VERSION

from .values import plain as _copy

_PRIVATE = "_PolicyAnalyzerServicer__"  # the servicer's name-mangled attributes
_POLICIES = _PRIVATE + "policies"

MayCheck = Callable[[Any, str], bool]
SDK_VERSION = "1.21.0"  # the pulumi-policy whose servicer this was written against (requirements.txt)
_call = threading.local()  # gRPC serves calls on a thread pool: one memo per thread
_ORIGINAL: dict[str, Callable[..., Any]] = {
    "MessageToDict": json_format.MessageToDict,
    "deserialize_properties": deserialize_properties,
    "unknown_checking_proxy": unknown_checking_proxy,
}


class _Memo:
    """What one call converted, by the identity of the object it came from. Every key is kept alive with
    its value, so no id is reused during the call."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, int], tuple[Any, Any]] = {}

    def get(self, stage: str, key: Any) -> Any:
        hit = self.values.get((stage, id(key)))
        return hit[1] if hit is not None and hit[0] is key else None

    def put(self, stage: str, key: Any, value: Any) -> Any:
        self.values[(stage, id(key))] = (key, value)
        return value


def _memo() -> _Memo | None:
    return getattr(_call, "memo", None)


def once(stage: str, key: Any, make: Callable[[], Any]) -> Any:
    """`make()` once per call and `key` object (every call when no call is being served)."""
    memo = _memo()
    if memo is None:
        return make()
    found = memo.get(stage, key)
    return found if found is not None else memo.put(stage, key, make())


def plain(props: Any) -> Any:
    """A plain copy of (possibly proxied) properties; during a call, the shared deserialized dict."""
    memo = _memo()
    shared = memo.get("plain", props) if memo is not None else None
    return shared if shared is not None else _copy(props)


class _NotFinite(Exception):
    pass


def _value(v: Any) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "string_value":
        return v.string_value
    if kind == "struct_value":
        fields = v.struct_value.fields
        return {key: _value(fields[key]) for key in fields}  # a map's items() is a Python-level view
    if kind == "list_value":
        return [_value(item) for item in v.list_value.values]
    if kind == "bool_value":
        return v.bool_value
    if kind == "number_value":
        number = v.number_value
        if not math.isfinite(number):
            raise _NotFinite
        return number
    return None  # null_value, or no kind set


def _convert(message: Any) -> Any:
    """`json_format.MessageToDict(message)`; a Struct (every request's properties) read directly, without
    json_format's walk through each field's descriptor (a third of a conversion). A NaN or infinite number
    goes to json_format, which refuses it as before."""
    if isinstance(message, struct_pb2.Struct):
        try:
            fields = message.fields
            return {key: _value(fields[key]) for key in fields}
        except _NotFinite:
            pass
    return _ORIGINAL["MessageToDict"](message)


class _Inputs:
    """A request's properties deserialized (Struct -> dict -> `deserialize_properties`), and the SDK's
    `unknown_checking_proxy` of them, made the first time a policy reads `props`: the pack's own rules read
    the deserialized dict (`inputs()`), so most calls never need the proxy."""

    __slots__ = ("value", "_proxied")

    def __init__(self, value: Any, proxied: Any = None) -> None:
        self.value, self._proxied = value, proxied

    def proxied(self) -> Any:
        if self._proxied is None:
            self._proxied = _ORIGINAL["unknown_checking_proxy"](self.value)
            memo = _memo()
            if memo is not None:  # plain() of the proxy is the dict it was made from
                memo.put("plain", self._proxied, self.value)
        return self._proxied


class _LazyProps:
    """`props` as the SDK's class has it (the unknown-checking proxy), made on first read from the `_Inputs`
    the class's own __init__ assigns."""

    _mldiag_inputs: _Inputs

    @property
    def props(self) -> Any:
        return self._mldiag_inputs.proxied()

    @props.setter
    def props(self, value: Any) -> None:
        self._mldiag_inputs = value if isinstance(value, _Inputs) else _Inputs(None, value)


class _Args(_LazyProps, ResourceValidationArgs):
    pass


class _Resource(_LazyProps, PolicyResource):
    pass


class _Provider(_LazyProps, PolicyProviderResource):
    pass


def inputs(resource: Any) -> Any:
    """The plain properties of a policy's resource (or args): during a call the request's deserialized dict
    itself, shared by every policy of the call (never to be written to); otherwise a plain copy."""
    made = getattr(resource, "_mldiag_inputs", None)
    if made is not None and made.value is not None:
        return made.value
    return plain(resource.props)


def _inputs(struct: Any) -> Any:
    """An `_Inputs`, typed as the props the SDK's classes take: their `_LazyProps` setter receives it."""
    return _Inputs(_ORIGINAL["deserialize_properties"](_convert(struct)))


def _provider(request: Any) -> Any:
    """The SDK's `_get_provider_resource`, its properties converted by `_inputs`."""
    if not request.HasField("provider"):
        return None
    p = request.provider
    return _Provider(p.type, _inputs(p.properties), p.urn, p.name)


def _per_call(
    method: Callable[..., Any], pause_gc: bool = False, runs: MayCheck | None = None
) -> Callable[..., Any]:
    """`method` served with a memo for the call, and the servicer's policies that `runs(policy, type)` (by
    default all of them), the list made once per resource type."""
    by_type: dict[tuple[int, str], list[Any]] = {}

    def policies_for(policies: list[Any], resource_type: str) -> list[Any]:
        if runs is None:
            return policies
        key = (id(policies), resource_type)
        found = by_type.get(key)
        if found is None:
            if len(by_type) >= 4096:  # only a client sending many made-up types gets here
                by_type.clear()
            found = by_type[key] = [p for p in policies if runs(p, resource_type)]
        return found

    @functools.wraps(method)
    def serve(self: Any, request: Any, context: Any) -> Any:
        outer = _memo()
        _call.memo = _Memo()
        collecting = pause_gc and gc.isenabled()
        if collecting:
            gc.disable()
        try:
            return method(self, request, context, policies_for)
        finally:
            _call.memo = outer
            if collecting:
                gc.enable()
                gc.collect(1)  # the call's own objects, once

    return serve


def _unknown_diagnostic(self: Any, policy: Any, e: UnknownValueError) -> Any:
    pack, version = (
        getattr(self, _PRIVATE + "policy_pack_name"),
        getattr(self, _PRIVATE + "policy_pack_version"),
    )
    return analyzer_pb2.AnalyzeDiagnostic(
        policyName=policy.name,
        policyPackName=pack,
        policyPackVersion=version,
        message=f"can't run policy '{policy.name}' from policy pack '{pack}@v{version}' during preview: "
        f"{e.message}",
        urn="",
        description=policy.description,
        enforcementLevel=self._map_enforcement_level(EnforcementLevel.ADVISORY),
    )


def _validate(self: Any, policy: Any, args: Any, report: Any, response: Any) -> None:
    """`policy.validate` as the SDK runs it: awaited when it is a coroutine; an unknown value an advisory
    diagnostic, not-applicable an entry of the response."""
    try:
        result = policy.validate(args, report)
        if inspect.isawaitable(result):
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(result)
            finally:
                loop.close()
    except UnknownValueError as e:
        response.diagnostics.append(_unknown_diagnostic(self, policy, e))
    except _sdk._NotApplicableError as e:
        response.not_applicable.append(
            analyzer_pb2.PolicyNotApplicable(policy_name=policy.name, reason=e.reason or "")
        )


def _analyze(
    self: Any, request: Any, _context: Any, policies_for: Callable[[list[Any], str], list[Any]]
) -> Any:
    """The SDK's Analyze (1.21.0) with the request's inputs, options and provider made once for every policy,
    and only the policies that may check its type run."""
    self._configure_runtime_settings()
    response = analyzer_pb2.AnalyzeResponse()
    made: tuple[Any, Any, Any] | None = None
    tags = getattr(self, _PRIVATE + "stack_tags")
    for policy in policies_for(getattr(self, _POLICIES), request.type):
        level = self._get_enforcement_level(policy)
        if level == EnforcementLevel.DISABLED or not isinstance(policy, ResourceValidationPolicy):
            continue
        if not policy.has_validation():
            response.not_applicable.append(
                analyzer_pb2.PolicyNotApplicable(
                    policy_name=policy.name, reason="Policy does not implement validate"
                )
            )
            continue
        if level == EnforcementLevel.REMEDIATE:  # still violated after remediation: reported as mandatory
            level = EnforcementLevel.MANDATORY
        report = self._create_report_violation(
            response, policy.name, policy.description, level, policy.severity
        )
        if made is None:
            made = (_inputs(request.properties), self._get_resource_options(request), _provider(request))
        props, options, provider = made
        args = _Args(
            request.type, props, request.urn, request.name, options, provider,
            self._get_policy_config(policy.name), tags,
        )  # fmt: skip
        _validate(self, policy, args, report, response)
    return response


def _stack_resources(servicer: Any, request: Any) -> list[Any]:
    """The stack's resources as the SDK gives them to a stack policy: parents, dependencies and property
    dependencies linked to the resources of the request, in the request's order."""
    made: dict[str, Any] = {}
    built = []
    for r in request.resources:
        options = servicer._get_resource_options(r)
        resource = _Resource(
            r.type, _inputs(r.properties), r.urn, r.name, options, _provider(r), None, [], {}
        )
        made[r.urn] = resource
        built.append((resource, r))
    for resource, r in built:
        if r.parent in made:
            resource.parent = made[r.parent]
        resource.dependencies.extend(made[u] for u in r.dependencies if u in made)
        for key, urns in r.propertyDependencies.items():
            resource.property_dependencies[key] = [made[u] for u in urns.urns if u in made]
    return [resource for resource, _ in built]


def _analyze_stack(
    self: Any, request: Any, _context: Any, _policies_for: Callable[[list[Any], str], list[Any]]
) -> Any:
    """The SDK's AnalyzeStack (1.21.0) with the resources built once for every stack policy."""
    self._configure_runtime_settings()
    response = analyzer_pb2.AnalyzeResponse()
    resources: list[Any] | None = None
    for policy in getattr(self, _POLICIES):
        level = self._get_enforcement_level(policy)
        if level == EnforcementLevel.DISABLED or not isinstance(policy, StackValidationPolicy):
            continue
        if level == EnforcementLevel.REMEDIATE:  # a stack policy cannot remediate
            level = EnforcementLevel.MANDATORY
        report = self._create_report_violation(
            response, policy.name, policy.description, level, policy.severity
        )
        if resources is None:
            resources = _stack_resources(self, request)
        args = StackValidationArgs(
            list(resources), self._get_policy_config(policy.name), getattr(self, _PRIVATE + "stack_tags")
        )
        _validate(self, policy, args, report, response)
    return response


def share_conversions(may_check: MayCheck | None = None) -> bool:
    """Installs the servicer's Analyze and AnalyzeStack of this module (idempotent); True when they are in
    place. It installs nothing, and the SDK serves as it ships, unless the SDK is the one they were written
    against.

    `may_check(policy, type)`: False for a policy that would return at once on a resource of that type;
    Analyze then runs only the others (the SDK's per-policy work, most of a call, is skipped for the rest:
    the response is the same, as a policy that returns at once reports nothing)."""
    servicer = getattr(_sdk, "_PolicyAnalyzerServicer", None)
    if getattr(servicer, "_mldiag_shared_conversions", False):
        return True
    if servicer is None or VERSION != SDK_VERSION:
        return False
    _ORIGINAL["Analyze"], _ORIGINAL["AnalyzeStack"] = servicer.Analyze, servicer.AnalyzeStack

    def runs(policy: Any, resource_type: str) -> bool:  # Analyze runs resource policies only
        return isinstance(policy, ResourceValidationPolicy) and (
            may_check is None or may_check(policy, resource_type)
        )

    servicer.Analyze = _per_call(_analyze, runs=runs)
    # One AnalyzeStack call holds every resource of the stack at once; the collector's full passes over that
    # growing heap made the call superlinear (2/3 of it at 9,000 resources), so it pauses for the call.
    servicer.AnalyzeStack = _per_call(_analyze_stack, pause_gc=True)
    servicer._mldiag_shared_conversions = True
    return True
