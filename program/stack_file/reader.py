"""The untrusted YAML reader of stack files: a document of at most `MAX_FILE_BYTES`, UTF-8 only, nesting at
most `MAX_DEPTH`, at most `value_budget(size)` values after alias expansion (a few hundred bytes of anchors
cannot become gigabytes; the budget, and with it the time and memory a file can cost, grows with the file's
size and stops at the size limit), no self-referencing anchors, no duplicate keys, no YAML 1.1 surprises
(`yes`/`on` stay strings and timestamps stay strings, as in the Pulumi CLI's YAML 1.2 reader), no tags beyond
the standard scalars. Every problem is one `StackFileError` naming the line; what the YAML parser itself
refused is worded by yaml_errors.py.

`secure:` values come back as `SecretLeaf`s (the ciphertext, never decrypted here) with their key path.
`check_limits()` applies the same depth/size limits to config the engine passes already parsed.
"""

from __future__ import annotations

import contextlib
import gc
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from program.stack_file.yaml_errors import yaml_problem

# The environment of a fleet of 10,000 clusters is one stack file: its targets shaped like those of
# stacks/Pulumi.prod.yaml take 978 (gkeClusters) to 2,113 bytes (modelDevelopmentClusters) each, 1,453 on
# average, so 10,000 of the largest take 21.1 MB (docs/fleet.md, "An environment of 10,000 clusters").
MAX_FILE_BYTES = 24 * 1024 * 1024
MAX_DEPTH = 32
MIN_VALUES = 100_000
BYTES_PER_VALUE = 16
"""The value budget: one value per 16 bytes of the file (those prod-shaped targets have one per 25 to 79
bytes), and never fewer than MIN_VALUES (what a small file's anchors may expand to)."""
MAX_INT = 2**63 - 1

Path_ = tuple[str | int, ...]


class StackFileError(Exception):
    """The stack file cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class SecretLeaf:
    """A `secure:` value as written in the stack file (ciphertext)."""

    ciphertext: str = field(repr=False)

    def __repr__(self) -> str:
        return "[secret]"


class _Resolver(yaml.resolver.BaseResolver):
    """YAML 1.2 core schema: only true/false are booleans, no timestamps, no sexagesimal numbers."""


_CORE_PATTERNS: dict[str, re.Pattern[str]] = {}
_CORE_EXAMPLES = {
    "bool": "true or false",
    "int": "e.g. 3, 0o17, 0x1f",
    "float": "e.g. 1.5, 2e3",
    "null": "null or ~",
}

for tag, pattern, first in (
    ("tag:yaml.org,2002:bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("tag:yaml.org,2002:int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
):
    _Resolver.add_implicit_resolver(tag, re.compile(f"^(?:{pattern})$"), list(first))
    _CORE_PATTERNS[tag] = re.compile(
        pattern if tag != "tag:yaml.org,2002:float" else f"{pattern}|[-+]?[0-9]+", re.ASCII
    )


def value_budget(size: int) -> int:
    """How many values (after alias expansion) a document of `size` bytes may hold."""
    return max(MIN_VALUES, size // BYTES_PER_VALUE)


def _too_many(line: int, budget: int) -> StackFileError:
    return StackFileError(
        f"line {line}: more than {budget:,} values after expanding aliases (at most one per {BYTES_PER_VALUE} "
        f"bytes of the file, and {MIN_VALUES:,} in a small one: anchors repeated too often, or values packed "
        "denser than any stack file needs); write the values out or use fewer aliases"
    )


class _Composing(yaml.composer.Composer):  # mixed with a parser (its events: peek_event, ...)
    """PyYAML's composer, bounded: nesting (before Python's own recursion limit) and the values it makes
    (aliases are not expanded here; the builder counts them expanded), so a dense or hostile file stops
    before its node graph is built whole."""

    def __init__(self, budget: int) -> None:
        yaml.composer.Composer.__init__(self)
        self.depth = 0
        self.values = 0
        self.budget = budget

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        # The limit of the document is the builder's (MAX_DEPTH): this guard trips only past _C_SAFE_DEPTH,
        # which libyaml's parser is never given, so both parsers agree on every file.
        self.depth += 1
        if index is not None or parent is None:  # a value (a mapping's key comes with index None)
            self.values += 1
        try:
            if self.depth > _C_SAFE_DEPTH + 1:
                mark = self.peek_event().start_mark  # type: ignore[attr-defined]
                raise StackFileError(f"line {mark.line + 1}: nested deeper than {MAX_DEPTH} levels")
            if self.values > self.budget:
                raise _too_many(self.peek_event().start_mark.line + 1, self.budget)  # type: ignore[attr-defined]
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _Loader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _Composing, _Resolver):
    def __init__(self, text: str, budget: int) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        _Composing.__init__(self, budget)
        _Resolver.__init__(self)


# libyaml's parser recurses in C: used only when a linear pre-scan bounds the nesting well below what its
# stack takes; otherwise the pure-Python parser reads the file. Either way the bounded composer above makes
# the nodes (libyaml's own composer could not stop a dense file before its whole node graph is built).
_C_SAFE_DEPTH = 200


def _nesting_upper_bound(text: str) -> int:
    """An upper bound of the nesting depth: indentation + sequence/complex-key markers per line + open
    brackets (brackets inside scalars only make the bound larger)."""
    worst = flow = 0
    for line in text.splitlines():
        body = line.lstrip(" ")
        opens = line.count("[") + line.count("{")
        bound = (len(line) - len(body)) + 2 * (body.count("- ") + body.count("? ")) + flow + opens + 2
        flow = max(0, flow + opens - line.count("]") - line.count("}"))
        worst = max(worst, bound)
        if worst > _C_SAFE_DEPTH:
            break
    return worst


if yaml.__with_libyaml__:
    from yaml._yaml import CParser  # libyaml's parser, which yaml.cyaml's loaders build on

    class _CLoader(CParser, _Composing, _Resolver):
        def __init__(self, text: str, budget: int) -> None:
            CParser.__init__(self, text)
            _Composing.__init__(self, budget)
            _Resolver.__init__(self)

        # CParser's own composer (C) would shadow the bounded one
        get_single_node = yaml.composer.Composer.get_single_node
        compose_document = yaml.composer.Composer.compose_document


def _loader(text: str, budget: int) -> Any:
    if yaml.__with_libyaml__ and _nesting_upper_bound(text) <= _C_SAFE_DEPTH:
        return _CLoader(text, budget)
    return _Loader(text, budget)


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def key_path(path: Path_) -> str:
    """A path in a document as its messages write it: `config.ml-diagnostics:gkeClusters[0].name`."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


class _Builder:
    """Turns the node graph into plain values, counting every value after alias expansion."""

    def __init__(self, budget: int) -> None:
        self.count = 0
        self.budget = budget
        self.secrets: set[Path_] = set()
        self.active: set[int] = set()

    def build(self, node: Node, path: Path_, depth: int) -> Any:
        self.count += 1
        if self.count > self.budget:
            raise _too_many(_line(node), self.budget)
        if depth > MAX_DEPTH:
            raise StackFileError(
                f"line {_line(node)}: {key_path(path)} nested deeper than {MAX_DEPTH} levels"
            )
        if id(node) in self.active:
            raise StackFileError(
                f"line {_line(node)}: {key_path(path)} is an alias of a value that contains it"
            )
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                self.plain_tag(node, "tag:yaml.org,2002:seq", path)
                return [self.build(n, (*path, i), depth + 1) for i, n in enumerate(node.value)]
            assert isinstance(node, MappingNode)
            self.plain_tag(node, "tag:yaml.org,2002:map", path)
            return self.mapping(node, path, depth)
        finally:
            self.active.discard(id(node))

    def plain_tag(self, node: Node, tag: str, path: Path_) -> None:
        if node.tag != tag:
            raise StackFileError(
                f"line {_line(node)}: {key_path(path) or 'the document'}: tag {node.tag[:60]!r} is not allowed"
            )

    def mapping(self, node: MappingNode, path: Path_, depth: int) -> Any:
        seen: dict[str, int] = {}
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or (
                key_node.value == "<<" and not key_node.style and key_node.tag == "tag:yaml.org,2002:str"
            ):
                # The Pulumi CLI's YAML reader merges `<<: *anchor`; reading it as a key would show values
                # the real preview never sees, so it is refused rather than read another way.
                raise StackFileError(
                    f"line {_line(key_node)}: {key_path(path) or 'the document'}: merge keys (<<) are not "
                    "supported; write the merged keys out"
                )
            if not (isinstance(key_node, ScalarNode) and key_node.tag == "tag:yaml.org,2002:str"):
                raise StackFileError(
                    f"line {_line(key_node)}: {key_path(path) or 'the document'}: keys must be strings "
                    "(quote the key)"
                )
            key = key_node.value
            if key in seen:
                raise StackFileError(
                    f"line {_line(key_node)}: duplicate key {key_path((*path, key))!r} (first at line {seen[key]})"
                )
            seen[key] = _line(key_node)
            out[key] = self.build(value_node, (*path, key), depth + 1)
        if "secure" in out:
            return self.secure(node, out, path)
        return out

    def secure(self, node: MappingNode, value: dict[str, Any], path: Path_) -> SecretLeaf:
        if len(value) != 1:
            raise StackFileError(
                f"line {_line(node)}: {key_path(path)}: a `secure:` value must be alone in its map"
            )
        if not isinstance(value["secure"], str) or not value["secure"]:
            raise StackFileError(
                f"line {_line(node)}: {key_path(path)}: `secure:` must hold the ciphertext string that "
                "`mldiag secrets set` or `pulumi config set --secret` writes, not a list, map or number"
            )
        self.secrets.add(path)
        return SecretLeaf(value["secure"])

    def scalar(self, node: ScalarNode, path: Path_) -> Any:
        tag, text = node.tag, node.value
        where = f"line {_line(node)}: {key_path(path)}"
        if tag == "tag:yaml.org,2002:str":
            return text
        # An implicit tag matched its pattern already; an explicit one (`!!bool yes`) must match it too, as
        # the Pulumi CLI's YAML 1.2 reader requires: never a silent other reading.
        pattern = _CORE_PATTERNS.get(tag)
        if pattern is not None and not pattern.fullmatch(text):
            name = tag.rsplit(":", 1)[-1]
            raise StackFileError(
                f"{where}: {text[:40]!r} is not a YAML 1.2 {name} ({_CORE_EXAMPLES[name]}); drop the !!{name} "
                "tag or fix the value"
            )
        if tag == "tag:yaml.org,2002:null":
            return None
        if tag == "tag:yaml.org,2002:bool":
            return text.lower() == "true"
        if tag == "tag:yaml.org,2002:float" and _CORE_PATTERNS["tag:yaml.org,2002:int"].fullmatch(text):
            tag = "tag:yaml.org,2002:float"  # `!!float 1` is the float 1.0
        if tag == "tag:yaml.org,2002:int":
            if len(text) > 24:
                raise StackFileError(f"{where}: number out of range")
            value = int(text, 0) if text.lstrip("+-")[:2] in ("0o", "0x") else int(text)
            if abs(value) > MAX_INT:
                raise StackFileError(f"{where}: number out of range")
            return value
        if tag == "tag:yaml.org,2002:float":
            try:
                number = float(text) if len(text) <= 40 else math.inf
            except ValueError:  # .inf / .nan spellings
                number = math.inf
            if not math.isfinite(number):
                raise StackFileError(f"{where}: must be a finite number")
            return number
        raise StackFileError(f"{where}: tag {tag[:60]!r} is not allowed")


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    # The node graph and the values built from it hold no garbage cycles, but their millions of young
    # objects make the collector walk the whole heap again and again: parsing grew faster than the file
    # (1,000 -> 4,000 targets: x8.7 with it, x4.0 without).
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_text(text: str, name: str = "stack file") -> tuple[Any, set[Path_]]:
    """Parses one YAML document under the limits; returns (value, paths of `secure:` leaves)."""
    with collector_paused():
        return _parse_text(text, name)


def _parse_text(text: str, name: str) -> tuple[Any, set[Path_]]:
    loader = None
    budget = value_budget(len(text.encode()))
    try:
        loader = _loader(text, budget)
        node = loader.get_single_node()
    except StackFileError as e:
        raise StackFileError(f"{name}: {e}") from None
    except yaml.reader.ReaderError as e:
        line = text[: e.position].count("\n") + 1
        raise StackFileError(
            f"{name}: line {line}: not valid YAML: special characters are not allowed (#x{e.character:04x})"
        ) from None
    except yaml.YAMLError as e:
        raise StackFileError(f"{name}: {yaml_problem(e, text)}") from None
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        return None, set()
    builder = _Builder(budget)
    try:
        value = builder.build(node, (), 0)
    except StackFileError as e:
        raise StackFileError(f"{name}: {e}") from None
    return value, builder.secrets


def _read_at_most(f: Any, limit: int) -> bytes:
    """Up to `limit` bytes, in chunks: `read(limit)` would allocate the whole limit for a small file."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = f.read(min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_text(path: Path) -> str:
    """The file's text: a regular file of at most MAX_FILE_BYTES, UTF-8 (an initial BOM is dropped)."""
    try:
        if path.is_dir():
            raise StackFileError(f"{path} is a directory, not a stack file")
        with path.open("rb") as f:
            data = _read_at_most(f, MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise StackFileError(f"stack file {path} does not exist") from None
    except OSError as e:
        raise StackFileError(f"{path}: cannot be read ({e.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise StackFileError(
            f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; stack files are limited to that "
            "(10,000 clusters shaped like stacks/Pulumi.prod.yaml's targets take 15 to 21 MB): keep secrets "
            "that large out of it (a kubeconfig `context`, Pulumi ESC), or split the environment in two"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise StackFileError(
            f"{path}: line {line}: not UTF-8 (byte 0x{data[e.start]:02x}); save it as UTF-8"
        ) from None
    return text.removeprefix("\ufeff")


def check_limits(key: str, value: Any, size: int = 0) -> None:
    """The reader's depth and size limits for a value the engine passes already parsed (`size`: the bytes of
    its JSON text, when it came as text)."""
    count = 0
    budget = value_budget(size)
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        count += 1
        if count > budget:
            raise StackFileError(f"{key}: more than {budget:,} values")
        if depth > MAX_DEPTH:
            raise StackFileError(f"{key}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, dict):
            stack += [(x, depth + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, depth + 1) for x in v]
        elif isinstance(v, str) and len(v) > MAX_FILE_BYTES:
            raise StackFileError(f"{key}: a value longer than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
