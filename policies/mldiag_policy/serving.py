"""The pack as the analyzer serves it: each request's inputs converted once for all policies.

pulumi-policy (1.21.0, pinned) converts a request's properties for every policy it runs: protobuf Struct
-> dict (`json_format.MessageToDict`) -> `deserialize_properties` -> `unknown_checking_proxy`, and the
provider's properties the same way; AnalyzeStack converts every resource of the stack once per stack
policy. With 29 resource policies that is 29 conversions of each resource, most of an Analyze call.

`share_conversions()` (called by `__main__.py` before it builds the PolicyPack) makes each Analyze and
AnalyzeStack call convert each Struct once: every policy of the call gets the same deserialized dict and
the same proxy, and an Analyze call's policies the same resource options and provider (the SDK builds a
fresh `ResourceValidationArgs` per policy around them, as before). AnalyzeStack builds the stack's
`PolicyResource` graph once for all stack policies, where the SDK rebuilt it per policy (each policy gets
its own list of the same resources). During
such a call `plain(proxy)` is the deserialized dict the proxy was built from, which is what copying through
the proxy produces, and `once()` keeps other per-resource work (the forms expansion) for the call's other
policies. Outside a call (the pack's tests call rules directly) everything works as without it. With
`may_check`, an Analyze call runs only the policies that may check the request's resource type: a policy
of another type would return at once, but the SDK's work around each policy (its arguments, options,
provider, report callback) was most of what a call cost.

This is the one place the pack relies on pulumi-policy's internals: it wraps the private servicer's
(`pulumi_policy.policy._PolicyAnalyzerServicer`) Analyze, its two per-request builders and AnalyzeStack (whose
loop it replaces: same policies, levels, config, diagnostics and order), and replaces the three names that
module converts with. `share_conversions()` installs nothing unless pulumi-policy is the pinned version and
those names are what it expects. tests/test_serving.py checks that it is installed, that the diagnostics
are the SDK's own (same messages, same order), that each Struct is converted once per call, and that no
rule writes to the inputs it now shares with the other policies.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import math
import threading
import types
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, PolicyResource, StackValidationArgs, StackValidationPolicy
from pulumi_policy import policy as _sdk
from pulumi_policy.proxy import UnknownValueError
from pulumi_policy.version import VERSION

from .values import plain as _copy

_PRIVATE = "_PolicyAnalyzerServicer__"  # the servicer's name-mangled attributes

MayCheck = Callable[[Any, str], bool]
SDK_VERSION = "1.21.0"  # the pulumi-policy whose servicer this was written against (requirements.txt)
_call = threading.local()  # gRPC serves calls on a thread pool: one memo per thread
_ORIGINAL: dict[str, Callable[..., Any]] = {
    "MessageToDict": json_format.MessageToDict,
    "deserialize_properties": _sdk.deserialize_properties,
    "unknown_checking_proxy": _sdk.unknown_checking_proxy,
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
        return {key: _value(item) for key, item in v.struct_value.fields.items()}
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
            return {key: _value(item) for key, item in message.fields.items()}
        except _NotFinite:
            pass
    return _ORIGINAL["MessageToDict"](message)


class _JsonFormat(types.ModuleType):
    """`google.protobuf.json_format` as `pulumi_policy.policy` sees it: MessageToDict shared per call."""

    def __getattr__(self, name: str) -> Any:
        return getattr(json_format, name)

    @staticmethod
    def MessageToDict(message: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 (protobuf's name)
        memo = _memo()
        if memo is None or args or kwargs:
            return _ORIGINAL["MessageToDict"](message, *args, **kwargs)
        found = memo.get("struct", message)  # after the first policy: the deserialized dict itself
        if found is not None:
            return found
        raw = memo.put("struct", message, _convert(message))
        memo.put("raw", raw, message)
        return raw


def _deserialize(props: Any, proxy_secrets: bool = False) -> Any:
    memo = _memo()
    if memo is None or proxy_secrets:
        return _ORIGINAL["deserialize_properties"](props, proxy_secrets)
    found = memo.get("deserialized", props)
    if found is not None:
        return found
    value = _ORIGINAL["deserialize_properties"](props)
    memo.put("deserialized", value, value)  # MessageToDict hands it back to the next policy
    message = memo.get("raw", props)
    if message is not None:  # the raw dict is not needed again
        memo.put("struct", message, value)
        del memo.values[("raw", id(props))]
    return value


def _proxy(props: Any) -> Any:
    memo = _memo()
    if memo is None:
        return _ORIGINAL["unknown_checking_proxy"](props)
    found = memo.get("proxy", props)
    if found is not None:
        return found
    proxied = memo.put("proxy", props, _ORIGINAL["unknown_checking_proxy"](props))
    memo.put("plain", proxied, props)
    return proxied


_POLICIES = _PRIVATE + "policies"


def _policies_of_the_call() -> property:
    """The servicer's policies: during an Analyze call those that may check the request's type."""

    def get(self: Any) -> Any:
        only = getattr(_call, "policies", None)
        return only if only is not None else self.__dict__[_POLICIES]

    def put(self: Any, value: Any) -> None:
        self.__dict__[_POLICIES] = value

    return property(get, put)


def _per_call(
    method: Callable[..., Any], pause_gc: bool = False, may_check: MayCheck | None = None
) -> Callable[..., Any]:
    by_type: dict[tuple[int, str], list[Any]] = {}

    def policies_for(policies: list[Any], resource_type: str) -> list[Any]:
        key = (id(policies), resource_type)
        found = by_type.get(key)
        if found is None:
            if len(by_type) >= 4096:  # only a client sending many made-up types gets here
                by_type.clear()
            found = by_type[key] = [p for p in policies if may_check(p, resource_type)]  # type: ignore[misc]
        return found

    @functools.wraps(method)
    def serve(self: Any, request: Any, context: Any) -> Any:
        if _memo() is not None:  # already inside a call on this thread
            return method(self, request, context)
        _call.memo = _Memo()
        if may_check is not None:
            _call.policies = policies_for(self.__dict__[_POLICIES], request.type)
        collecting = pause_gc and gc.isenabled()
        if collecting:
            gc.disable()
        try:
            return method(self, request, context)
        finally:
            _call.memo = None
            _call.policies = None
            if collecting:
                gc.enable()
                gc.collect(1)  # the call's own objects, once

    return serve


def _once_per_call(stage: str, method: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A servicer method of one request (its options, its provider) computed once per call and request."""

    @functools.wraps(method)
    def shared(self: Any, request: Any) -> Any:
        return once(stage, request, lambda: method(self, request))

    return shared


def _stack_resources(servicer: Any, request: Any) -> list[Any]:
    """The stack's resources as the SDK gives them to a stack policy: parents, dependencies and property
    dependencies linked to the resources of the request, in the request's order."""
    made: dict[str, Any] = {}
    built = []
    for r in request.resources:
        props = _proxy(_deserialize(_JsonFormat.MessageToDict(r.properties)))
        options, provider = servicer._get_resource_options(r), servicer._get_provider_resource(r)
        resource = PolicyResource(r.type, props, r.urn, r.name, options, provider, None, [], {})
        made[r.urn] = resource
        built.append((resource, r))
    for resource, r in built:
        if r.parent in made:
            resource.parent = made[r.parent]
        resource.dependencies.extend(made[u] for u in r.dependencies if u in made)
        for key, urns in r.propertyDependencies.items():
            resource.property_dependencies[key] = [made[u] for u in urns.urns if u in made]
    return [resource for resource, _ in built]


def _analyze_stack(self: Any, request: Any, _context: Any) -> Any:
    """The SDK's AnalyzeStack (1.21.0) with the resources built once for every stack policy."""
    self._configure_runtime_settings()
    response = analyzer_pb2.AnalyzeResponse()
    resources: list[Any] | None = None
    pack, version = (
        getattr(self, _PRIVATE + "policy_pack_name"),
        getattr(self, _PRIVATE + "policy_pack_version"),
    )
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
        try:
            result = policy.validate(args, report)
            if inspect.isawaitable(result):
                loop = asyncio.new_event_loop()
                try:
                    loop.run_until_complete(result)
                finally:
                    loop.close()
        except UnknownValueError as e:
            response.diagnostics.append(
                analyzer_pb2.AnalyzeDiagnostic(
                    policyName=policy.name,
                    policyPackName=pack,
                    policyPackVersion=version,
                    message=f"can't run policy '{policy.name}' from policy pack '{pack}@v{version}' during "
                    f"preview: {e.message}",
                    urn="",
                    description=policy.description,
                    enforcementLevel=self._map_enforcement_level(EnforcementLevel.ADVISORY),
                )
            )
        except _sdk._NotApplicableError as e:
            response.not_applicable.append(
                analyzer_pb2.PolicyNotApplicable(policy_name=policy.name, reason=e.reason or "")
            )
    return response


def share_conversions(may_check: MayCheck | None = None) -> bool:
    """Installs the per-call conversion (idempotent); True when it is in place. It installs nothing, and
    the SDK converts per policy as it ships, unless the SDK is the one it was written against.

    `may_check(policy, type)`: False for a policy that would return at once on a resource of that type;
    Analyze then runs only the others (the SDK's per-policy work, most of a call, is skipped for the rest:
    the response is the same, as a policy that returns at once reports nothing)."""
    servicer = getattr(_sdk, "_PolicyAnalyzerServicer", None)
    if getattr(servicer, "_mldiag_shared_conversions", False):
        return True
    expected = (
        VERSION == SDK_VERSION
        and _sdk.json_format is json_format
        and _sdk.deserialize_properties is _ORIGINAL["deserialize_properties"]
        and _sdk.unknown_checking_proxy is _ORIGINAL["unknown_checking_proxy"]
    )
    if servicer is None or not expected:
        return False
    _sdk.json_format = _JsonFormat(json_format.__name__)
    _sdk.deserialize_properties = _deserialize
    _sdk.unknown_checking_proxy = _proxy
    if may_check is not None:
        setattr(servicer, _POLICIES, _policies_of_the_call())
    servicer.Analyze = _per_call(servicer.Analyze, may_check=may_check)
    servicer._get_resource_options = _once_per_call("options", servicer._get_resource_options)
    servicer._get_provider_resource = _once_per_call("provider", servicer._get_provider_resource)
    # One AnalyzeStack call holds every resource of the stack at once; the collector's full passes over that
    # growing heap made the call superlinear (2/3 of it at 9,000 resources), so it pauses for the call.
    _ORIGINAL["AnalyzeStack"] = servicer.AnalyzeStack
    servicer.AnalyzeStack = _per_call(_analyze_stack, pause_gc=True)
    servicer._mldiag_shared_conversions = True
    return True
