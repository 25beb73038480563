"""What a target kind is: one entry of the table in `program/kinds/table.py`.

Everything the program, the cross-target checks, verify, the offline plan and its diff need to know about a
kind is declared once, in its entry: its config model, its cloud (program/clouds: stack-level settings,
verify's client and options), its component, its costly and force-new resource types, its checks, its texts
in the documents that describe every kind. Entries name their heavier parts (the component factory, the
verify checks, the offline plan's mock answers) as `Lazy` references, so validating a stack file imports no
cloud SDK.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ml_diagnostics import lifecycle
from program.clouds import Cloud
from program.costly import Costly
from program.lazy import Lazy

if TYPE_CHECKING:
    import pulumi

    from ml_diagnostics.component import Component
    from program.config_base import TargetBase
    from program.previous_deployment import PreviousDeployment

__all__ = ["BuildContext", "Claim", "Costly", "KindDocs", "Lazy", "TargetKind"]

# (identity of the physical resource, what it is, key path relative to the kind's list entry)
Claim = tuple[tuple[Any, ...], str, str]
T = TypeVar("T", bound="TargetBase")
C = TypeVar("C", bound="Component[Any]")


@dataclass(frozen=True)
class KindDocs:
    """A kind's texts in the documents that describe every kind, in the table's order: README's "What each
    target does", docs/verify.md's checks and docs/lifecycle.md's removals (written by `python -m
    dev.gen.kind_docs --write`), and the commented example of `mldiag new-stack`'s file (made at run time).

    A text that several kinds list (the in-cluster install, which GKE runs on its manual path too) is written
    once, where the last of them puts it."""

    summary: tuple[str, ...]
    """README "What each target does": list items as written there, without the `- ` and the continuation
    lines' indent (`**`key`**: what a target makes ...`)."""
    checks: tuple[tuple[str, str], ...]
    """docs/verify.md's table of checks: (target, checks) rows."""
    removed: str
    """docs/lifecycle.md's table of what removing a target does: the kind's `removed` cell."""
    example: str
    """`mldiag new-stack`'s commented example: the lines of the kind's list as a stack file holds them under
    `config:` (uncommented), `{project}` standing for the project's name."""


@dataclass
class BuildContext:
    """What a component factory gets besides its target: the stack's settings and shared readers."""

    environment: str
    settings: Mapping[str, Any]
    """A cloud's name -> the stack's settings of that cloud (`googleApi`)."""
    previous: PreviousDeployment
    pending_steps: list[pulumi.Output[str | None]] = dataclasses.field(default_factory=list)

    def settings_of(self, cloud: Cloud) -> Any:
        return self.settings[cloud.name]

    def component(self, cls: type[C], prefix: str, target: TargetBase, spec: Any) -> C:
        """The target's component, `<prefix>-<name>`, from the Spec the stack file's checks already made (not
        checked again); a renamed target (`previousName`) keeps its resources through aliases."""
        name = f"{prefix}-{target.name}"
        return cls.from_spec(name, spec, lifecycle.rename_options(prefix, target.previous_name))


DERIVED = Lazy("")
"""A TargetKind entry's reference left to its package's module of that name."""


@dataclass(frozen=True)
class TargetKind(Generic[T]):
    key: str
    """The stack config key (`ml-diagnostics:<key>`): a list of targets."""
    model: type[T]
    """The config model of one target."""
    description: str
    """One line for the config reference."""
    prefix: str
    """Component name prefix: the target's component is `<prefix>-<name>` (renames alias it)."""
    cloud: Cloud
    """The cloud its targets are on (program/clouds)."""
    docs: KindDocs
    """Its texts in README, docs/verify.md, docs/lifecycle.md and the new-stack template."""
    package: str = ""
    """The kind's package (default: the package of the model's module, `program.kinds.gke` of
    `program.kinds.gke.model`): build, verify, check and mock_answers default to its modules build.py
    (`build`), verify.py (`verify`, `check`) and mocks.py, from_state to its state.py, and section to its
    name."""
    field: str = ""
    """The StackConfig attribute holding the list (default: the key in snake_case, `gke_clusters`)."""
    export: str = ""
    """Stack output key prefix, `<export>:<name>` (default: the key in the singular, `gkeCluster`)."""
    component: str = ""
    """The type token of the component a target builds, which verify finds it by in a stack's state (default:
    the model's name without `Target`, `mldiag:index:GkeCluster` of GkeClusterTarget)."""
    section: str = ""
    """The section of a verify record (ml_diagnostics.verify_record.VerifyRecord) its checks read (default:
    its package's name, `gke`)."""
    order: int = 0
    """Where the kind stands in the table, which the registry sorts by (program/kinds/table.py): the order
    targets are built in."""
    build: Lazy = DERIVED
    """(target, BuildContext) -> the stack output of the target, after registering its component."""
    verify: Lazy = DERIVED
    """(target, VerifyContext, TargetResult) -> None: read-only post-deploy checks."""
    check: Lazy = DERIVED
    """(that section, access, VerifyContext, TargetResult) -> None: the same checks on a record, as `mldiag
    verify --stack` finds it in a stack's state (access: how the cluster is reached, None when the cloud's
    own API says)."""
    mock_answers: Lazy = DERIVED
    """The offline plan's answers: {"invokes": {token: fn(args)}, "outputs": {type: fn(name, inputs)}}."""
    from_state: Lazy | None = DERIVED
    """Its state hook for `mldiag verify --stack` (program/verify/from_state.py): its package's module
    state.py, when it has one (None: a record of its section needs no access, and older states of its
    components are not rebuilt)."""
    costly: tuple[Costly, ...] = ()
    """The resource types of this kind whose replacement or deletion the offline diff puts first."""
    # dataclasses.field by its module: the attribute `field` above shadows the bare name for mypy
    force_new: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Type token -> the input paths whose change replaces the resource (its provider's force-new fields)."""
    claims: Callable[[Any], list[Claim]] = lambda target: []
    """The physical resources a target manages (two targets may not manage one)."""
    generated_names: Callable[[Any], list[tuple[str, str]]] = lambda target: []
    """(resource name, relative key path) of resources whose names include a part the user chooses."""
    preflight: Callable[[Any, str], list[tuple[str, str]]] = lambda target, environment: []
    """(relative key path, problem) of a target that depend on the stack's environment (e.g. sizing)."""
    verify_label: str = ""
    """How verify reports name the kind (default: the key)."""

    def __post_init__(self) -> None:
        home, _, module = self.model.__module__.rpartition(".")
        if module == "model":
            self._default("package", home)
        self._default("field", re.sub(r"(?<!^)(?=[A-Z])", "_", self.key).lower())
        self._default("export", self.key.removesuffix("s"))
        self._default("component", f"mldiag:index:{self.model.__name__.removesuffix('Target')}")
        if not self.section:
            if not self.package:
                raise self._no_package("section")
            self._default("section", self.package.rsplit(".", 1)[-1])
        for attr, ref in (("build", "build:build"), ("verify", "verify:verify"), ("check", "verify:check")):
            self._derive(attr, ref)
        self._derive("mock_answers", "mocks")
        if self.from_state is DERIVED:
            found = self.package and importlib.util.find_spec(f"{self.package}.state") is not None
            object.__setattr__(self, "from_state", Lazy(f"{self.package}.state") if found else None)

    def _no_package(self, attr: str) -> ValueError:
        return ValueError(
            f"kind {self.key}: give its package (its model is not in a package's model.py) or {attr}"
        )

    def _default(self, attr: str, value: str) -> None:
        if not getattr(self, attr):
            object.__setattr__(self, attr, value)

    def _derive(self, attr: str, ref: str) -> None:
        if getattr(self, attr) is not DERIVED:
            return
        if not self.package:
            raise self._no_package(attr)
        object.__setattr__(self, attr, Lazy(f"{self.package}.{ref}"))
