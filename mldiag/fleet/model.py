"""The fleet file (`fleet/<name>.yaml`): waves over the targets of one environment stack.

Read with the stack files' hardened reader (size, depth, YAML 1.2, duplicate keys) and validated whole:
every problem is reported at once with its key path and what is allowed, and nothing runs from a file
that failed. What the file means against the environment's targets (unknown targets, empty waves,
tolerances larger than their wave) is checked by the planner, with the same error type.

    environment: prod                  # the environment stack: stacks/Pulumi.prod.yaml
    organization: acme                 # optional: the Pulumi organization of the member stacks
    policyPack: true                   # optional (default true): every member's `pulumi up` runs policies/
    labels:                            # optional: labels of targets (`kind` is built in)
      onprem-prod: {ring: canary}
    defaults:                          # optional: what every wave has unless it says otherwise
      maxParallel: 2
      failureTolerance: 0              # a count, or a percentage of the wave: "25%"
      soak: 10m
      gate: {verifyWait: 10m, verifyInterval: 15s, approval: false}
    waves:
      - name: canary
        targets: [onprem-prod]         # by name, or kind/name when two kinds share the name
        soak: 30m
      - name: clouds
        selector: {kind: gkeClusters}  # by label: every label given must match
        maxParallel: 4
        failureTolerance: 25%
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ml_diagnostics.rules.names import (
    closest,
    label_key_problem,
    label_value_problem,
    quote,
    short_name_problem,
)
from program import stack_file
from program.stack_file import StackFileError

TOP_KEYS = ("environment", "organization", "policyPack", "labels", "defaults", "waves")
WAVE_SETTINGS = ("maxParallel", "failureTolerance", "soak", "gate")
WAVE_KEYS = ("name", "targets", "selector", *WAVE_SETTINGS)
GATE_KEYS = ("verify", "verifyWait", "verifyInterval", "approval")
BUILTIN_LABELS = ("kind",)
MAX_WAVES = 100
MAX_PARALLEL = 1000
MAX_SECONDS = 7 * 24 * 3600
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(?:(\d{1,6})d)?(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,6})s)?")
_PERCENT = re.compile(r"(\d{1,3}(?:\.\d{1,2})?)%")
_STACK_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,59}")
_ORG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
DURATION_RULE = "a duration like 90s, 10m, 1h30m or 2d, or a number of seconds"
TOLERANCE_RULE = 'a count of clusters (0, 1, ...) or a percentage of the wave ("25%")'


class FleetError(Exception):
    """A fleet file that cannot be used; `problems` are `key.path: what is wrong` lines."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid fleet file {path} ({len(problems)} problem(s)):\n{lines}")


@dataclass(frozen=True)
class Tolerance:
    """How many clusters of a wave may fail its gate: a count, or a percentage of the wave (rounded down)."""

    count: int | None = 0
    percent: float | None = None

    def of(self, size: int) -> int:
        if self.percent is not None:
            return int(size * self.percent // 100)
        return self.count or 0

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else str(self.count)


@dataclass(frozen=True)
class Gate:
    verify: bool = True
    """Run `mldiag verify`'s checks of each cluster after its update, polling up to `verify_wait`."""
    verify_wait: int = 600
    verify_interval: int = 10
    approval: bool = False
    """A person approves the wave before the next one starts."""


@dataclass(frozen=True)
class WaveSpec:
    name: str
    targets: tuple[str, ...]
    selector: dict[str, str]
    max_parallel: int
    tolerance: Tolerance
    soak: int
    gate: Gate
    path: str
    """Its key path in the file (`waves[1]`), for the planner's problems."""


@dataclass(frozen=True)
class Fleet:
    path: Path
    environment: str
    organization: str | None
    policy_pack: bool
    labels: dict[str, dict[str, str]]
    waves: tuple[WaveSpec, ...]
    text: str = field(repr=False, default="")
    """The file as read (its digest is part of the rollout's revision)."""


def parse_duration(value: Any) -> int | None:
    """Seconds of `90s`, `10m`, `1h30m`, `2d` or a whole number; None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_SECONDS else None
    if not isinstance(value, str) or not value or len(value) > 24:
        return None
    m = _DURATION.fullmatch(value.strip())
    if not m or not any(m.groups()):
        return None
    seconds = sum(int(n) * _UNITS[u] for n, u in zip(m.groups(), "dhms", strict=True) if n)
    return seconds if seconds <= MAX_SECONDS else None


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds == 0:
        return "0s"
    out = ""
    for unit in "dhms":
        n, seconds = divmod(seconds, _UNITS[unit])
        if n:
            out += f"{n}{unit}"
    return out


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def keys(self, value: dict[str, Any], allowed: tuple[str, ...], path: str) -> None:
        for key in value:
            if key not in allowed:
                hint = closest(key, allowed)
                mean = f" (did you mean {hint!r}?)" if hint else ""
                self.add(
                    _at(path, quote(key, 40)[1:-1]), f"unknown key{mean}; allowed keys: {', '.join(allowed)}"
                )

    def mapping(self, value: Any, path: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.add(path, "must be a map of key: value")
            return None
        return value

    def string(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.add(path, "must be a non-empty string")
            return None
        return value.strip()

    def boolean(self, value: Any, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.add(path, "must be true or false")
            return None
        return value

    def duration(self, value: Any, path: str) -> int | None:
        seconds = parse_duration(value)
        if seconds is None:
            self.add(path, f"{quote(value, 40)} is not {DURATION_RULE} (at most 7d)")
        return seconds

    def count(self, value: Any, path: str, low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(path, f"must be a whole number from {low} to {high}")
            return None
        if not low <= value <= high:
            self.add(path, f"{value} is out of range: from {low} to {high}")
            return None
        return value

    def tolerance(self, value: Any, path: str) -> Tolerance | None:
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                self.add(path, f"{value} is negative: {TOLERANCE_RULE}")
                return None
            return Tolerance(count=value)
        if isinstance(value, str) and (m := _PERCENT.fullmatch(value.strip())):
            pct = float(m.group(1))
            if pct > 100:
                self.add(path, f"{value} is more than 100%")
                return None
            return Tolerance(count=None, percent=pct)
        self.add(path, f"{quote(value, 40)} is not {TOLERANCE_RULE}")
        return None

    def labels(self, value: Any, path: str) -> dict[str, str]:
        labels = self.mapping(value, path)
        if labels is None:
            return {}
        out = {}
        for k, v in labels.items():
            at = _at(path, k)
            if not isinstance(v, str):
                self.add(at, "must be a string (quote numbers and booleans)")
                continue
            if problem := label_key_problem(k) or label_value_problem(v):
                self.add(at, problem)
                continue
            out[k] = v
        return out


def _at(base: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{base}[{key}]"
    return f"{base}.{key}" if base else key


def read(path: Path) -> Fleet:
    """The fleet file, validated on its own (not yet against the environment's targets)."""
    try:
        text = stack_file.read_text(path)
        doc, secrets = stack_file.parse_text(text, str(path))
    except StackFileError as e:
        raise FleetError(path, [str(e).replace(f"{path}: ", "", 1)]) from None
    c = _Checker()
    if secrets:
        c.add("(file)", "`secure:` values have no place in a fleet file; secrets stay in the stack file")
    if not isinstance(doc, dict):
        raise FleetError(path, ["(file): must be a map with environment: and waves:"])
    c.keys(doc, TOP_KEYS, "")
    environment = None
    if "environment" not in doc:
        c.add("environment", "required key is missing: the environment stack (stacks/Pulumi.<stack>.yaml)")
    elif (environment := c.string(doc["environment"], "environment")) and not _STACK_NAME.fullmatch(
        environment
    ):
        c.add(
            "environment",
            f"{quote(environment)} is not an environment stack name: letters, digits, '_' and '-', at most 60 "
            "(a '.' would be read as a member stack)",
        )
        environment = None
    organization = None
    if "organization" in doc:
        organization = c.string(doc["organization"], "organization")
        if organization is not None and not _ORG.fullmatch(organization):
            c.add("organization", f"{quote(organization)} is not a Pulumi organization name")
            organization = None
    policy_pack = c.boolean(doc.get("policyPack", True), "policyPack")
    labels: dict[str, dict[str, str]] = {}
    if "labels" in doc and (by_target := c.mapping(doc["labels"], "labels")) is not None:
        for ref, target_labels in by_target.items():
            at = _at("labels", ref)
            labels[ref] = c.labels(target_labels, at)
            for builtin in BUILTIN_LABELS:
                if builtin in labels[ref]:
                    c.add(
                        _at(at, builtin),
                        f"{builtin!r} is a built-in label (the target's kind); use another key",
                    )
    defaults = _defaults(c, doc.get("defaults", {}))
    waves = _waves(c, doc.get("waves"), defaults)
    if c.problems:
        raise FleetError(path, c.problems)
    assert environment is not None and policy_pack is not None
    return Fleet(path, environment, organization, policy_pack, labels, tuple(waves), text)


def _gate(c: _Checker, value: Any, path: str, base: Gate) -> Gate:
    gate = c.mapping(value, path)
    if gate is None:
        return base
    c.keys(gate, GATE_KEYS, path)
    verify = c.boolean(gate.get("verify", base.verify), _at(path, "verify"))
    wait = c.duration(gate.get("verifyWait", base.verify_wait), _at(path, "verifyWait"))
    interval = c.duration(gate.get("verifyInterval", base.verify_interval), _at(path, "verifyInterval"))
    approval = c.boolean(gate.get("approval", base.approval), _at(path, "approval"))
    if interval == 0:
        c.add(_at(path, "verifyInterval"), "must be at least 1s")
    return Gate(
        base.verify if verify is None else verify,
        base.verify_wait if wait is None else wait,
        interval or base.verify_interval,
        base.approval if approval is None else approval,
    )


@dataclass(frozen=True)
class _Settings:
    max_parallel: int = 1
    tolerance: Tolerance = Tolerance()
    soak: int = 0
    gate: Gate = Gate()


def _settings(c: _Checker, value: dict[str, Any], path: str, base: _Settings) -> _Settings:
    max_parallel = base.max_parallel
    if "maxParallel" in value:
        max_parallel = (
            c.count(value["maxParallel"], _at(path, "maxParallel"), 1, MAX_PARALLEL) or max_parallel
        )
    tolerance = base.tolerance
    if "failureTolerance" in value:
        tolerance = c.tolerance(value["failureTolerance"], _at(path, "failureTolerance")) or tolerance
    soak = base.soak
    if "soak" in value:
        parsed = c.duration(value["soak"], _at(path, "soak"))
        soak = soak if parsed is None else parsed
    gate = _gate(c, value["gate"], _at(path, "gate"), base.gate) if "gate" in value else base.gate
    return _Settings(max_parallel, tolerance, soak, gate)


def _defaults(c: _Checker, value: Any) -> _Settings:
    defaults = c.mapping(value, "defaults")
    if defaults is None:
        return _Settings()
    c.keys(defaults, WAVE_SETTINGS, "defaults")
    return _settings(c, defaults, "defaults", _Settings())


def _waves(c: _Checker, value: Any, defaults: _Settings) -> list[WaveSpec]:
    if value is None:
        c.add("waves", "required key is missing: a list of waves (name, targets or selector, ...)")
        return []
    if not isinstance(value, list) or not value:
        c.add("waves", "must be a non-empty list of waves")
        return []
    if len(value) > MAX_WAVES:
        c.add("waves", f"{len(value)} waves: at most {MAX_WAVES}")
        return []
    out: list[WaveSpec] = []
    seen: dict[str, str] = {}
    for i, raw in enumerate(value):
        path = f"waves[{i}]"
        wave = c.mapping(raw, path)
        if wave is None:
            continue
        c.keys(wave, WAVE_KEYS, path)
        name = c.string(wave.get("name"), _at(path, "name")) if "name" in wave else None
        if "name" not in wave:
            c.add(_at(path, "name"), "required key is missing")
        elif name is not None:
            if problem := short_name_problem(name):
                c.add(_at(path, "name"), problem)
            elif name in seen:
                c.add(_at(path, "name"), f"duplicate wave name {name!r} (also {seen[name]}.name)")
            seen.setdefault(name, path)
        targets: list[str] = []
        if "targets" in wave:
            if not isinstance(wave["targets"], list) or not wave["targets"]:
                c.add(_at(path, "targets"), "must be a non-empty list of target names (or kind/name)")
            else:
                for j, ref in enumerate(wave["targets"]):
                    if (text := c.string(ref, f"{path}.targets[{j}]")) is not None:
                        targets.append(text)
        selector: dict[str, str] = {}
        if "selector" in wave:
            selector = c.labels(wave["selector"], _at(path, "selector"))
            if not selector and isinstance(wave["selector"], dict) and not wave["selector"]:
                c.add(_at(path, "selector"), "an empty selector would select every target; name the labels")
        if "targets" not in wave and "selector" not in wave:
            c.add(path, "selects nothing: give targets (names) or a selector (labels), or both")
        settings = _settings(c, wave, path, defaults)
        out.append(
            WaveSpec(
                name or f"wave-{i + 1}",
                tuple(targets),
                selector,
                settings.max_parallel,
                settings.tolerance,
                settings.soak,
                settings.gate,
                path,
            )
        )
    return out
