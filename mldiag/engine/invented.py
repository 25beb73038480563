"""Which values of an offline plan the plan itself invented: mock answers and secret placeholders.

The offline plan has no cloud. mldiag/engine/mock_answers.py (each kind's program/kinds/<kind>/mocks.py) answers the
invokes (an adopted cluster's endpoint, CA and versions) and gives resources the outputs a provider would (a
created cluster's endpoint, ids), and every `secure:` config value becomes a placeholder. A value derived from
those is not what `pulumi preview` will show; the plan marks where they land.

How: the recording monitor keeps, per mock answer, the strings it added (what a resource's outputs hold
beyond its inputs, its generated id; what an invoke answered beyond its arguments). Strings that also appear
in the stack's config are dropped: they are not evidence (an adopted cluster's release channel may be the
stack's own). A leaf of a resource's inputs is invented when

- it is a secret whose value holds a placeholder (verbatim or base64-encoded) or an invented string, or
- it contains an invented *distinctive* string (8+ characters, not only letters: endpoints, ids, links,
  certificates) of a resource it depends on (directly, or through a component), or of any invoke (the
  monitor cannot tell who uses an invoke's answer: only the strings not built from the invoke's arguments
  count, an endpoint or a CA but not `<project>.svc.id.goog`, which the program may compute itself), or
- it equals any other invented string (`ACTIVE`) of a resource it depends on.

A stack output leaf is invented on the same evidence, from any source. Paths use the plan's syntax
(`a.b[0].c`, a secret is one leaf), so the diff can match them against its changes.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from mldiag.common import SECRET_MASK
from program.config_base import PLACEHOLDER_SECRET

# A placeholder as it appears in a secret: verbatim, or base64-encoded (a PEM the program base64-encodes);
# the encoded form is that of its first 30 characters, which starts the encoding of any value it starts.
PLACEHOLDER_MARKS = (PLACEHOLDER_SECRET, base64.b64encode(PLACEHOLDER_SECRET[:30].encode()).decode())
DISTINCTIVE_LENGTH = 8
MIN_EXACT_LENGTH = 3
# Top-level inputs never inspected: the pickled dynamic provider.
SKIPPED_INPUTS = {"__provider"}


class Resource(Protocol):
    urn: str
    custom: bool
    parent: str | None
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    inputs: dict[str, Any]
    unmasked_inputs: dict[str, Any]
    secret_digests: dict[str, str]


def strings(value: Any) -> Iterator[str]:
    """The string leaves of a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def answered(given: Any, answer: Any, opaque: bool = False) -> list[str]:
    """The strings a mock answer holds that were not given to it (a resource's inputs, an invoke's args).

    `opaque`: only those not built from what was given (no given string of 4+ characters inside): an
    answer's `projects/<project>/...` may equal what the program computes from the same config elsewhere.
    """
    have = {s for s in strings(given) if s}
    parts = [s for s in have if len(s) >= 4] if opaque else []
    return sorted({s for s in strings(answer) if s and s not in have and not any(p in s for p in parts)})


def config_strings(config: dict[str, Any]) -> set[str]:
    """Every string leaf of a config map (JSON-encoded values decoded)."""
    out: set[str] = set()
    for v in config.values():
        if isinstance(v, str) and v[:1] in ("{", "["):
            with contextlib.suppress(ValueError):
                v = json.loads(v)
        out.update(strings(v))
    return out


def distinctive(s: str) -> bool:
    return len(s) >= DISTINCTIVE_LENGTH and not s.isalpha()


class Inventory:
    """The invented strings of one plan run, by source: a resource URN, or None for an invoke."""

    def __init__(self, made: Iterable[tuple[str | None, Iterable[str]]], known: Iterable[str] = ()) -> None:
        known = set(known)
        self.exact: dict[str, set[str | None]] = {}
        self.by_prefix: dict[str, list[str]] = {}  # distinctive strings by their first characters
        self.sources: set[str] = set()
        self.invokes = False
        self._seen: dict[str, tuple[str, ...]] = {}
        for source, values in made:
            for s in values:
                if s in known or len(s) < MIN_EXACT_LENGTH or (source is None and not distinctive(s)):
                    continue
                if s not in self.exact:
                    self.exact[s] = set()
                    if distinctive(s):
                        self.by_prefix.setdefault(s[:DISTINCTIVE_LENGTH], []).append(s)
                self.exact[s].add(source)
                if source is None:
                    self.invokes = True
                else:
                    self.sources.add(source)

    def __bool__(self) -> bool:
        return bool(self.exact)

    def _from(self, s: str, allowed: set[str] | None) -> bool:
        srcs = self.exact[s]
        return allowed is None or None in srcs or bool(srcs & allowed)

    def found_in(self, text: str, allowed: set[str] | None) -> bool:
        """`text` is or contains an invented string from an allowed source (None: any source)."""
        return any(self._from(s, allowed) for s in self._contained(text))

    def _contained(self, text: str) -> tuple[str, ...]:
        # Memoized: a plan's texts repeat (thousands of leaves, a few dozen distinct strings).
        found = self._seen.get(text)
        if found is None:
            hits = [text] if text in self.exact else []
            if len(text) >= DISTINCTIVE_LENGTH:
                for i in range(len(text) - DISTINCTIVE_LENGTH + 1):
                    hits += (
                        s
                        for s in self.by_prefix.get(text[i : i + DISTINCTIVE_LENGTH], ())
                        if text.startswith(s, i)
                    )
            found = self._seen[text] = tuple(dict.fromkeys(hits))
        return found


def _leaves(masked: Any, plain: Any, path: str = "") -> Iterator[tuple[str, Any, bool]]:
    """(path, plain value, is a secret) of each leaf of a masked value, walked with its unmasked twin."""
    if isinstance(masked, dict) and masked and isinstance(plain, dict):
        for k, v in masked.items():
            if not path and k in SKIPPED_INPUTS:
                continue
            yield from _leaves(v, plain.get(k), f"{path}.{k}" if path else str(k))
    elif isinstance(masked, list) and masked and isinstance(plain, list):
        for i, v in enumerate(masked):
            yield from _leaves(v, plain[i] if i < len(plain) else None, f"{path}[{i}]")
    else:
        yield path or "$", plain, masked == SECRET_MASK


def invented_paths(
    masked: dict[str, Any], plain: dict[str, Any], inventory: Inventory, allowed: set[str] | None
) -> list[str]:
    """Paths of the invented leaves of one value (a resource's inputs, the stack outputs)."""
    out: list[str] = []
    for path, value, secret in _leaves(masked, plain):
        if isinstance(value, str):
            text = value
        elif secret:
            text = json.dumps(value, sort_keys=True, default=str)
        else:
            continue
        placeholder = secret and any(m in text for m in PLACEHOLDER_MARKS)
        if placeholder or inventory.found_in(text, allowed):
            out.append(path)
    return out


def _closures(resources: Sequence[Resource]) -> dict[str, set[str]]:
    """URN -> every resource it waits for: dependencies (a component standing for all below it), transitively."""
    by_urn = {r.urn: r for r in resources}
    children: dict[str, list[str]] = {}
    for r in resources:
        if r.parent:
            children.setdefault(r.parent, []).append(r.urn)

    def direct(r: Resource) -> set[str]:
        out: set[str] = set()
        todo = [*r.dependencies, *(u for us in r.property_dependencies.values() for u in us)]
        while todo:
            u = todo.pop()
            if u in out or u not in by_urn:
                continue
            out.add(u)
            if not by_urn[u].custom:
                todo += children.get(u, [])
        return out

    edges = {r.urn: direct(r) for r in resources}
    memo: dict[str, set[str]] = {}
    for start in edges:
        if start in memo:
            continue
        seen, todo = set(), list(edges[start])
        while todo:
            u = todo.pop()
            if u in seen:
                continue
            seen.add(u)
            if u in memo:
                seen |= memo[u]
            else:
                todo += edges.get(u, ())
        memo[start] = seen
    return memo


def mark_resources(resources: Sequence[Resource], inventory: Inventory) -> dict[str, list[str]]:
    """URN -> invented input paths, for the resources that have any."""
    closures = _closures(resources) if inventory.sources else {}
    out: dict[str, list[str]] = {}
    for r in resources:
        allowed = closures.get(r.urn, set()) & inventory.sources
        if not (allowed or inventory.invokes or r.secret_digests):
            continue
        paths = invented_paths(r.inputs, r.unmasked_inputs, inventory, allowed)
        if paths:
            out[r.urn] = paths
    return out


def mark_outputs(masked: dict[str, Any], plain: dict[str, Any], inventory: Inventory) -> list[str]:
    """Invented paths of the stack outputs (no dependency links: every source counts)."""
    return invented_paths(masked, plain, inventory, None)
