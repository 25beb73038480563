"""How a rule is built and run: the documentation links, what a rule is about (its tags and compliance
framework), unknowns, options with defaults, and the `resource_rule` / `stack_rule` constructors that run a
check on every canonical form (forms.py) of the resources. Each rule declares there what it is about
(`about=`: its target kinds, their cloud and document, its concern) and its levels by environment (`levels=`,
see levels.py), and every rule built is recorded in `DECLARED`, which the pack is made of (pack.py).

Rules read plain copies of the inputs (values.py): unknown values stay as their sentinel strings, each rule
notes the paths it could not check (`Unknowns`) and, after reporting every violation it could establish
from known values, raises one `PreviewUnknown` that the SDK turns into an advisory "can't run policy ...
during preview" diagnostic naming those paths. Nothing is skipped silently.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import jsonschema
from pulumi_policy import (
    EnforcementLevel,
    PolicyComplianceFramework,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationPolicy,
    Severity,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from . import forms, serving
from .levels import UNCONFIGURED, Levels, level_in, options_in, problems
from .values import is_unknown, plain

# The public documents the rules come from; every violation message ends with its rule's link.
GKE_DOCS = "https://docs.cloud.google.com/tpu/docs/ml-diagnostics/gke"
AZUREML_DOCS = "https://learn.microsoft.com/azure/machine-learning/how-to-deploy-kubernetes-extension"
MDC_DOCS = "https://docs.cloud.google.com/vertex-ai/docs/training/training-clusters/manage-cluster"

# What a rule is about, its tags: the target kinds it guards (their stack file keys), their cloud, its concern.
CONCERNS = frozenset(
    {
        "accounts",
        "availability",
        "configuration",
        "dependencies",
        "identity",
        "lifecycle",
        "network",
        "pod-security",
        "resources",
        "secrets",
        "sizing",
        "supply-chain",
        "versions",
    }
)
_KIND = re.compile(r"[a-z][A-Za-z]*")
_CLOUD = re.compile(r"[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Subject:
    """What rules guard: the target kinds whose resources they check (by stack file key), the cloud those run
    on, and the document the rules come from (every violation message ends with its link)."""

    kinds: tuple[str, ...]
    cloud: str
    docs: str

    def concern(self, concern: str, framework: PolicyComplianceFramework | None = None) -> About:
        """A rule of this subject about `concern` (one of CONCERNS), checking a control of `framework`."""
        return About(self, concern, framework)


@dataclass(frozen=True)
class About:
    """What one rule is about: its subject and concern (the policy's `tags`), and the compliance framework
    whose control it checks, if any (its `framework`); the engine receives both (GetAnalyzerInfo)."""

    subject: Subject
    concern: str
    framework: PolicyComplianceFramework | None = None

    @property
    def tags(self) -> list[str]:
        return [*self.subject.kinds, self.subject.cloud, self.concern]

    def problems(self) -> list[str]:
        found = [f"kind {k!r} is not a stack file key" for k in self.subject.kinds if not _KIND.fullmatch(k)]
        if not self.subject.kinds:
            found.append("names no target kind")
        if not _CLOUD.fullmatch(self.subject.cloud):
            found.append(f"cloud {self.subject.cloud!r} is not a cloud's name")
        if self.concern not in CONCERNS:
            found.append(f"concern {self.concern!r} is not one of {', '.join(sorted(CONCERNS))}")
        f = self.framework
        if f is not None and not (f.name and f.version and f.reference and f.specification):
            found.append("its framework needs a name, version, reference and specification")
        return found


AZURE_ML = Subject(("azureMl",), "azure", AZUREML_DOCS)
"""The Azure ML extension and the AKS or Arc cluster it goes on."""
GKE = Subject(("gkeClusters",), "google", GKE_DOCS)
"""GKE clusters and their managed ML Diagnostics flag."""
IN_CLUSTER = Subject(("kubernetesClusters", "gkeClusters"), "kubernetes", GKE_DOCS)
"""What runs inside a cluster: the manual install's Helm releases, the opt-in labels, Diagon."""
MODEL_DEVELOPMENT = Subject(("modelDevelopmentClusters",), "google", MDC_DOCS)
"""Vertex AI Model Development Clusters."""

# The Kubernetes release whose Pod Security Standards the pod-security rules check (the e2e tier's API server).
POD_SECURITY_STANDARDS_VERSION = "v1.35"
POD_SECURITY_STANDARDS_URL = "https://kubernetes.io/docs/concepts/security/pod-security-standards/"


def pod_security_standards(specification: str) -> PolicyComplianceFramework:
    """The Kubernetes Pod Security Standards as a rule's compliance framework; `specification`: the profiles
    and controls the rule checks."""
    return PolicyComplianceFramework(
        name="Kubernetes Pod Security Standards",
        version=POD_SECURITY_STANDARDS_VERSION,
        reference=POD_SECURITY_STANDARDS_URL,
        specification=specification,
    )


class PreviewUnknown(UnknownValueError):
    """Raised after all known-value checks ran: the SDK reports it as an advisory preview diagnostic."""

    def __init__(self, paths: list[str]):
        super().__init__(UNKNOWN_STRING_VALUE, [])
        shown = ", ".join(paths)
        self.message = (
            f"not checked because the value(s) at {shown} are unknown until apply; "
            "the check runs again with the real values during `pulumi up`"
        )


class Unknowns:
    """Collects the paths a rule could not check because their value is unknown during preview."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._seen: set[str] = set()  # a stack rule may note one path per resource

    def hit(self, value: Any, path: str) -> bool:
        """True (and remembers the path) when value is unknown."""
        if is_unknown(value):
            self.note(path)
            return True
        return False

    def note(self, path: str) -> None:
        if path not in self._seen:
            self._seen.add(path)
            self.paths.append(path)

    def finish(self) -> None:
        if self.paths:
            raise PreviewUnknown(self.paths)


def schema(defaults: Mapping[str, tuple[dict[str, Any], Any]]) -> PolicyConfigSchema:
    """PolicyConfigSchema from {property: (json schema, default)}; the default is written into the schema."""
    props = {}
    for name, (spec, default) in defaults.items():
        props[name] = {**spec, "default": copy.deepcopy(default)}
    return PolicyConfigSchema(properties=props)


class ConfigProblem(Exception):
    """The policy's options do not match its schema; reported as a violation naming the option."""


_OPTIONS: dict[tuple[int, str], dict[str, Any] | ConfigProblem] = {}


def config(args: Any, defaults: Mapping[str, tuple[dict[str, Any], Any]]) -> dict[str, Any]:
    """The policy's config with schema defaults filled in (the CLI fills them too; this keeps rules
    correct when a client sends only what the config file names), validated against the schema.

    Options change only with Configure, so each distinct set is validated once (rules only read it)."""
    given = plain(args.get_config() or {})
    key = (id(defaults), json.dumps(given, sort_keys=True, default=repr))
    known = _OPTIONS.get(key)
    if known is None:
        if len(_OPTIONS) >= 1024:  # only a client trying many option sets gets here
            _OPTIONS.clear()
        known = _OPTIONS[key] = _validated(given, defaults)
    if isinstance(known, ConfigProblem):
        raise known
    return known


def _validated(given: dict[str, Any], defaults: Mapping[str, tuple[dict[str, Any], Any]]) -> Any:
    out = {name: copy.deepcopy(default) for name, (_, default) in defaults.items()}
    out.update(given)
    spec = {
        "type": "object",
        "properties": {name: s for name, (s, _) in defaults.items()},
        "additionalProperties": False,
    }
    errors = sorted(jsonschema.Draft7Validator(spec).iter_errors(out), key=lambda e: list(e.absolute_path))
    if errors:
        return ConfigProblem(
            "; ".join(f"{'.'.join(map(str, e.absolute_path)) or '(options)'}: {e.message}" for e in errors)
        )
    return out


class Report(Protocol):
    """How a rule reports a violation: the message, and the urn it is about when not the resource checked.
    pulumi-policy's report_violation takes the urn as optional but its ReportViolation alias requires it, so
    only cited() takes the SDK's callback as that type (and always passes both)."""

    def __call__(self, message: str, urn: str | None = None) -> None: ...


Validate = Callable[[Any, Report], None]


class _View:
    """A resource (or its args) seen in its canonical form: same urn, name, provider, options, config."""

    def __init__(self, inner: Any, resource_type: str, props: Any):
        self._inner = inner
        self.resource_type = resource_type
        self.props = props

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _StackView:
    def __init__(self, inner: Any, resources: list[Any]):
        self._inner = inner
        self.resources = resources

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _forms(resource: Any) -> tuple[list[forms.Form], list[str]]:
    """forms.expand of a resource's plain props; once per call for all policies (serving.py)."""
    props = serving.inputs(resource)
    return serving.once("forms", props, lambda: forms.expand(resource.resource_type, props))


def _normalised(args: Any, report: Report, validate: Validate, types: Collection[str] | None) -> None:
    if hasattr(args, "resources"):
        views, unread = [], []
        for r in args.resources:
            found, missing = _forms(r)
            views += [_View(r, f.type, f.props) for f in found]
            unread += [f"{r.urn}: {m}" for m in missing]
        validate(_StackView(args, views), report)
        if unread:
            raise PreviewUnknown(unread)
        return
    if types is not None and not forms.may_hold(args.resource_type, types):
        return  # no form of this resource is one the rule checks: nothing to copy or expand
    found, unread = _forms(args)
    for f in found:
        if f.where:
            label = f"{args.resource_type.rsplit(':', 1)[-1]} '{args.name}' {f.where}"

            def located(message: str, urn: str | None = None, label: str = label) -> None:
                report(f"{label}: {message}", urn)

            validate(_View(args, f.type, f.props), located)
        else:
            validate(_View(args, f.type, f.props), report)
    if unread:
        raise PreviewUnknown(unread)


def cited(
    validate: Validate, url: str, types: Collection[str] | None = None
) -> Callable[[Any, ReportViolation], None]:
    """`validate` run on every canonical form of the resource(s) (see forms.py), with violation messages
    ending in the documentation link and invalid options reported as one violation (key path and what is
    allowed) instead of an exception. `types`: the canonical tokens `validate` checks (None: any)."""

    def run(args: Any, report: ReportViolation) -> None:
        def cite(message: str, urn: str | None = None) -> None:
            report(f"{message}\nSee {url}", urn)

        try:
            _normalised(args, cite, validate, types)
        except ConfigProblem as e:
            report(
                f"this policy's options in the policy pack config are invalid: {e}. Remediation: fix them in "
                "policies/config/<stack>.json (each option's schema is in `pulumi policy` output and "
                "policies/README.md).",
                None,
            )

    return run


Defaults = Mapping[str, tuple[dict[str, Any], Any]]
# check(args, plain props, options with defaults, unknowns, report)
Check = Callable[[Any, Any, dict[str, Any], Unknowns, Report], None]


@dataclass(frozen=True)
class Declared:
    """A rule as its module built it: the policy, and its levels by environment (levels.py)."""

    policy: ResourceValidationPolicy | StackValidationPolicy
    levels: Levels
    types: frozenset[str] | None = None
    """The canonical type tokens a resource rule checks (None: any)."""


DECLARED: dict[str, Declared] = {}
"""Every rule built so far, by name: importing a rule module records its rules here (pack.py imports them all)."""


def _declare(name: str, about: About, levels: Levels, defaults: Defaults | None) -> None:
    if found := about.problems():
        raise ValueError(f"rule {name!r}: about: {'; '.join(found)}")
    found = problems(levels, list(defaults or {}))
    if not found and defaults is not None:
        for env in levels:
            checked = _validated(options_in(levels, env), {k: defaults[k] for k in options_in(levels, env)})
            if isinstance(checked, ConfigProblem):
                found.append(f"{env}: {checked}")
    if name in DECLARED:
        found.append("another rule has this name")
    if found:
        raise ValueError(f"rule {name!r}: levels: {'; '.join(found)}")


def _rule(
    kind: type,
    name: str,
    description: str,
    validate: Validate,
    *,
    about: About,
    severity: Severity,
    remediation: str,
    levels: Levels,
    defaults: Defaults | None = None,
    types: Collection[str] | None = None,
) -> Any:
    _declare(name, about, levels, defaults)
    docs = about.subject.docs
    policy = kind(
        name=name,
        description=description,
        validate=cited(validate, docs, types),
        # with no pack config at all, a rule runs at its level in levels.UNCONFIGURED (prod)
        enforcement_level=EnforcementLevel(level_in(levels, UNCONFIGURED)),
        config_schema=schema(defaults) if defaults is not None else None,
        url=docs,
        severity=severity,
        remediation_steps=remediation,
        tags=about.tags,
        framework=about.framework,
    )
    DECLARED[name] = Declared(policy, levels, None if types is None else frozenset(types))
    return policy


def stack_rule(name: str, description: str, validate: Validate, **metadata: Any) -> StackValidationPolicy:
    """A stack policy running `validate` on the whole stack. `metadata`: about (what the rule is about: its
    tags, framework and document, which every message cites), severity, remediation, levels (its entries by
    environment, levels.py) and optionally defaults (the options' schema)."""
    return _rule(StackValidationPolicy, name, description, validate, **metadata)


def resource_rule(
    name: str,
    description: str,
    check: Check,
    *,
    applies: Collection[str],
    when: Callable[[Any], bool] | None = None,
    **metadata: Any,
) -> ResourceValidationPolicy:
    """A resource policy running `check` on the resources whose canonical type token is in `applies` (and,
    with `when`, that the predicate takes: it gets the resource in its canonical form, plain props), with
    their plain props and options (`{}` without `defaults`); the unknowns it noted are raised after it
    returns. `metadata` as for `stack_rule`."""
    defaults = metadata.get("defaults")
    applies = frozenset(applies)

    def validate(args: Any, report: Report) -> None:
        # args: one canonical form (a view with plain props), from cited()
        if args.resource_type not in applies or (when is not None and not when(args)):
            return
        cfg = config(args, defaults) if defaults is not None else {}
        unknowns = Unknowns()
        check(args, args.props, cfg, unknowns, report)
        unknowns.finish()

    return _rule(ResourceValidationPolicy, name, description, validate, types=applies, **metadata)
