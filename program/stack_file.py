"""The hardened stack-file reader shared by the offline plan and the config loader.

A stack file may come from a fork's pull request: it is read as untrusted input. UTF-8 only, at most
`MAX_FILE_BYTES`, nesting at most `MAX_DEPTH`, at most `value_budget(size)` values after alias expansion (a
few hundred bytes of anchors cannot become gigabytes; the budget, and with it the time and memory a file
can cost, grows with the file's size and stops at the size limit), no self-referencing anchors, no duplicate keys, no
YAML 1.1 surprises (`yes`/`on` stay strings and timestamps stay strings, as in the Pulumi CLI's YAML 1.2
reader), no tags beyond the standard scalars. Every problem is one `StackFileError` naming the line; a YAML
error says what is wrong in words (`anchor 'x' defined twice: lines 12 and 40`), with both lines where the
parser gives two, the same whichever loader read the file (`yaml_problem`).

`secure:` values come back as `SecretLeaf`s (the ciphertext, never decrypted here) with their key path.
`check_limits()` applies the same depth/size limits to config the engine passes already parsed.

One file (over 450 lines) because every limit and every message of the untrusted reader must hold for all of
its entry points alike (plan, config loader, fleet, secrets); its YAML error wording is half of it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gc
import hashlib
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ml_diagnostics.compat import quote

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
STACK_FILE_KEYS = ("config", "encryptedkey", "encryptionsalt", "environment", "secretsprovider")

Path_ = tuple[str | int, ...]


class StackFileError(Exception):
    """The stack file cannot be used; the message names the file and the line."""


class StackFileProblems(StackFileError):
    """Problems of the stack file's own keys (a top-level `environment:` that is not a list of ESC environments)
    that still leave its config readable: `stack` holds it, so its own problems can be reported with these
    (program.config.read_stack_file)."""

    def __init__(self, path: Path, problems: list[str], stack: StackFile) -> None:
        super().__init__("; ".join(f"{path}: {p}" for p in problems))
        self.problems = problems
        self.stack = stack


@dataclass(frozen=True)
class SecretLeaf:
    """A `secure:` value as written in the stack file (ciphertext)."""

    ciphertext: str = field(repr=False)

    def __repr__(self) -> str:
        return "[secret]"


@dataclass
class StackFile:
    """`config`: full key (`ml-diagnostics:gkeClusters`) -> value; `secret_paths`: (full key, *path) of
    every `secure:` leaf."""

    config: dict[str, Any]
    secret_paths: set[Path_]
    environments: tuple[str, ...] = ()
    """The Pulumi ESC environments it imports (`environment:`): the engine merges their `pulumiConfig` under
    `config` at `pulumi up`; nothing here opens them."""
    secrets_settings: dict[str, Any] = field(default_factory=dict)
    """Its `encryptionsalt`, `secretsprovider` and `encryptedkey`, those it has."""

    @property
    def encryptionsalt(self) -> str | None:
        """The passphrase secrets provider's salt and check value (None: another secrets provider)."""
        salt = self.secrets_settings.get("encryptionsalt")
        return salt if isinstance(salt, str) else None

    @property
    def secretsprovider(self) -> str | None:
        """A cloud KMS secrets provider's URL (`gcpkms://...`); None with an `encryptionsalt` or Pulumi Cloud's."""
        provider = self.secrets_settings.get("secretsprovider")
        return provider if isinstance(provider, str) and provider else None

    @property
    def secret_keys(self) -> list[str]:
        return sorted({p[0] for p in self.secret_paths if isinstance(p[0], str)})


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


def _fmt(path: Path_) -> str:
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
            raise StackFileError(f"line {_line(node)}: {_fmt(path)} nested deeper than {MAX_DEPTH} levels")
        if id(node) in self.active:
            raise StackFileError(f"line {_line(node)}: {_fmt(path)} is an alias of a value that contains it")
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
                f"line {_line(node)}: {_fmt(path) or 'the document'}: tag {node.tag[:60]!r} is not allowed"
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
                    f"line {_line(key_node)}: {_fmt(path) or 'the document'}: merge keys (<<) are not "
                    "supported; write the merged keys out"
                )
            if not (isinstance(key_node, ScalarNode) and key_node.tag == "tag:yaml.org,2002:str"):
                raise StackFileError(
                    f"line {_line(key_node)}: {_fmt(path) or 'the document'}: keys must be strings "
                    "(quote the key)"
                )
            key = key_node.value
            if key in seen:
                raise StackFileError(
                    f"line {_line(key_node)}: duplicate key {_fmt((*path, key))!r} (first at line {seen[key]})"
                )
            seen[key] = _line(key_node)
            out[key] = self.build(value_node, (*path, key), depth + 1)
        if "secure" in out:
            return self.secure(node, out, path)
        return out

    def secure(self, node: MappingNode, value: dict[str, Any], path: Path_) -> SecretLeaf:
        if len(value) != 1:
            raise StackFileError(
                f"line {_line(node)}: {_fmt(path)}: a `secure:` value must be alone in its map"
            )
        if not isinstance(value["secure"], str) or not value["secure"]:
            raise StackFileError(
                f"line {_line(node)}: {_fmt(path)}: `secure:` must hold the ciphertext string that "
                "`mldiag secrets set` or `pulumi config set --secret` writes, not a list, map or number"
            )
        self.secrets.add(path)
        return SecretLeaf(value["secure"])

    def scalar(self, node: ScalarNode, path: Path_) -> Any:
        tag, text = node.tag, node.value
        where = f"line {_line(node)}: {_fmt(path)}"
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


# --- what the YAML parser refused, in words ---------------------------------------------------------------
# Either loader (libyaml's or PyYAML's own) may read a file, and they word their errors differently (libyaml
# names no anchor, nor the character it stopped at): each class of error is described here from the parser's
# marks and the text itself, so a file gets the same message whichever loader read it. Both loaders count a
# mark's line and column in characters, from 0.

_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # the line breaks of YAML 1.1, as both loaders read
_NAME = re.compile(r"[0-9A-Za-z_-]{1,200}")  # an anchor's or alias's name, as both loaders read it
_EXCERPT = 30


def _from_line(text: str, mark: Any) -> str:
    """The text from the start of the mark's line on ("" past the end)."""
    lines = _LINE_BREAK.split(text, maxsplit=mark.line) if mark.line else [text]  # (maxsplit 0: no limit)
    return lines[-1] if len(lines) == mark.line + 1 else ""


def _after(text: str, mark: Any) -> str:
    """The text from the mark on."""
    return _from_line(text, mark)[mark.column :]


def _rest_of_line(text: str, mark: Any) -> str:
    return _LINE_BREAK.split(_after(text, mark), maxsplit=1)[0]


def _before(text: str, mark: Any) -> str:
    """The mark's line up to the mark."""
    return _from_line(text, mark)[: mark.column]


def _found(text: str, mark: Any) -> str:
    """What the text holds at the mark: an excerpt of the rest of its line, or where the line or file ends."""
    rest = _rest_of_line(text, mark).rstrip()
    if rest:
        return quote(rest[:_EXCERPT] + ("..." if len(rest) > _EXCERPT else ""))
    return "the end of the line" if _after(text, mark).strip() else "the end of the file"


def _named(text: str, mark: Any, sigil: str) -> str | None:
    """The anchor (`&`) or alias (`*`) name written at the mark, or after a tag that comes first."""
    rest = _rest_of_line(text, mark)
    at = rest.find(sigil)
    m = _NAME.match(rest, at + 1) if at != -1 else None
    return m.group() if m else None


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _lines(first: Any, second: Any) -> str:
    a, b = first.line + 1, second.line + 1
    return f"lines {a} and {b}" if a != b else f"line {a}, columns {first.column + 1} and {second.column + 1}"


def yaml_problem(e: yaml.YAMLError, text: str) -> str:
    """`line N: not valid YAML: <what is wrong>` for a parser's error (N: where the parser stopped), with the
    line where the collection, quote or anchor in question starts when the parser gives it too."""
    context, problem = str(getattr(e, "context", None) or ""), str(getattr(e, "problem", None) or "")
    start = getattr(e, "context_mark", None)
    mark = getattr(e, "problem_mark", None) or start
    if mark is None:
        return f"not valid YAML: {str(e)[:200]}"
    return f"line {mark.line + 1}: not valid YAML: {_describe(context, problem, start, mark, text)}"


def _describe(context: str, problem: str, start: Any, mark: Any, text: str) -> str:
    first = _rest_of_line(text, mark)[:1]
    if context.startswith("found duplicate anchor") and start is not None:
        name = _named(text, start, "&") or _named(text, mark, "&")
        what = f"anchor {quote(name, 60)}" if name else "an anchor"
        return f"{what} defined twice: {_lines(start, mark)} (an anchor names one value; rename one of them)"
    if problem.startswith("found undefined alias"):
        name = _named(text, mark, "*")
        what = f"alias {quote('*' + name, 60)}" if name else "an alias"
        return (
            f"{what} names no anchor: no value before it is marked {quote('&' + name, 60) if name else 'so'}"
        )
    if context.startswith("expected a single document"):
        return f"a second document starts at line {mark.line + 1} ('---'): the file holds one YAML document"
    if first == "\t" or "tab character" in problem:
        return f"a tab at {_at(mark)}: YAML indents with spaces only; replace the tab with spaces"
    if "cannot start any token" in problem and first:
        return f"{quote(first)} at {_at(mark)} cannot start a value (a YAML indicator); quote the value"
    if "mapping values are not allowed" in problem:
        return (
            f"': ' at {_at(mark)} where no key can start: quote a value that holds ': ', or fix the "
            "indentation"
        )
    for kind, opening, closing in (("sequence", "[", "]"), ("mapping", "{", "}")):
        if context == f"while parsing a flow {kind}" and start is not None:
            return (
                f"unclosed flow {kind}: the {opening!r} at {_at(start)} is not closed (expected ',' or "
                f"{closing!r} at {_at(mark)}, found {_found(text, mark)})"
            )
    if context == "while parsing a flow node":
        if not _after(text, mark).strip():
            return "the file ends inside a flow collection: a '[' or '{' is not closed"
        return f"a value is missing at {_at(mark)} in a '[...]' or '{{...}}' (found {_found(text, mark)})"
    if "<document start>" in problem:
        return (
            f"{_found(text, mark)} at {_at(mark)} comes after the end of the document's value: the file holds one "
            "mapping (check this line's indentation, or remove a stray '...')"
        )
    if context == "while parsing a block node":
        return f"a value is missing at {_at(mark)} (found {_found(text, mark)})"
    if "sequence entries are not allowed" in problem:
        return (
            f"'- ' at {_at(mark)} where no list can start: fix the indentation, or quote a value that starts "
            "with '- '"
        )
    if context == "while scanning a block scalar" and start is not None:
        return (
            f"the block scalar header at {_at(start)} ('|' or '>') may hold only an indentation digit, '+' or "
            f"'-' and a comment (found {_found(text, mark)})"
        )
    if context in ("while parsing a block mapping", "while parsing a block collection") and start is not None:
        if first in ("]", "}"):
            return f"{first!r} at {_at(mark)} closes nothing: no {'[' if first == ']' else '{'!r} is open"
        if _before(text, mark).strip():
            return (
                f"{_found(text, mark)} at {_at(mark)} follows a complete value on its line: quote the whole "
                "value, or start a new line"
            )
        what = "the keys of the mapping" if context.endswith("mapping") else "the items ('- ') of the list"
        return (
            f"bad indentation: {_found(text, mark)} at {_at(mark)} is not in line with {what} that starts at "
            f"line {start.line + 1}"
        )
    if context.startswith("while scanning a quoted scalar") and "end of stream" in problem and start:
        return f"unclosed quoted string: the quote at {_at(start)} is not closed before the end of the file"
    if problem.startswith("found unknown escape character"):
        # libyaml marks the backslash, PyYAML the character after it
        escape = _after(text, mark)[:2] if first == "\\" else "\\" + first
        return (
            f"unknown escape '{escape}' in the double-quoted string at line {mark.line + 1}: write '\\\\' for "
            "a backslash, or use single quotes"
        )
    if context in ("while scanning an anchor", "while scanning an alias"):
        what = context.removeprefix("while scanning an ")
        return (
            f"the {what} name at {_at(start or mark)} must be letters, digits, '-' or '_' (found "
            f"{_found(text, mark)})"
        )
    # any other: the parser's own words, its context with the line it names
    where = f" at line {start.line + 1}" if start is not None and start.line != mark.line else ""
    return problem[:160] + (f" ({context[:120]}{where})" if context else "")


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


_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _b64_bytes(text: str) -> int | None:
    """How many bytes a base64 text holds; None when it is not base64."""
    if not text or len(text) % 4 or not _B64.fullmatch(text):
        return None
    try:
        return len(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return None


def _symmetric_problem(value: str) -> str | None:
    """What is wrong with a `v1:<nonce>:<ciphertext>` value (the passphrase and cloud KMS secrets managers)."""
    parts = value.split(":")
    if len(parts) != 3 or parts[0] != "v1":
        return "is not a ciphertext of this stack's secrets provider (v1:<nonce>:<ciphertext>)"
    if _b64_bytes(parts[1]) != 12:
        return "has no 12-byte base64 nonce (v1:<nonce>:<ciphertext>)"
    sealed = _b64_bytes(parts[2])
    if sealed is None or sealed < 16:
        return "has no base64 AES-GCM ciphertext (v1:<nonce>:<ciphertext>)"
    return None


def _salt_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be the string `pulumi stack init --secrets-provider passphrase` writes"
    parts = value.split(":", 2)
    if len(parts) != 3 or parts[0] != "v1" or _b64_bytes(parts[1]) != 8:
        return "is not v1:<8-byte base64 salt>:<check ciphertext>"
    if problem := _symmetric_problem(parts[2]):
        return f"check value {problem.removeprefix('is not ').removeprefix('has ')}"
    return None


def _leaves(value: Any, at: Path_) -> list[tuple[Path_, SecretLeaf]]:
    if isinstance(value, SecretLeaf):
        return [(at, value)]
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(v, (*at, k))]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _leaves(v, (*at, i))]
    return []


def check_ciphertexts(doc: dict[str, Any], config: dict[str, Any], path: Path) -> None:
    """Every `secure:` value and the `encryptionsalt` in the shape the stack's secrets provider writes, so a
    pasted plaintext (`secure: hello`) or a damaged salt fails here with its key path, not at decryption.

    The passphrase provider (an `encryptionsalt`) and the cloud KMS providers (`secretsprovider`) write
    `v1:<nonce>:<ciphertext>`; the Pulumi Cloud provider (neither key) writes base64."""
    fix = "set it with `mldiag secrets set` or `pulumi config set --secret`"
    symmetric = "encryptionsalt" in doc or bool(doc.get("secretsprovider"))
    if "encryptionsalt" in doc and (problem := _salt_problem(doc["encryptionsalt"])):
        raise StackFileError(
            f"{path}: encryptionsalt {problem}; `pulumi stack init` writes it, or `mldiag new-stack`"
        )
    for at, leaf in _leaves(config, ()):
        if symmetric:
            problem = _symmetric_problem(leaf.ciphertext)
        else:
            problem = (
                None
                if _b64_bytes(leaf.ciphertext)
                else "is not a ciphertext (base64) of the Pulumi Cloud secrets provider"
            )
        if problem:
            raise StackFileError(f"{path}: {_fmt(at)}: the `secure:` value {problem}; {fix}")


def plain_data(value: Any) -> Any:
    """A parsed document's value with each `secure:` leaf back as `{"secure": ciphertext}` (for a tool that
    edits a stack file's data and writes it out again)."""
    if isinstance(value, SecretLeaf):
        return {"secure": value.ciphertext}
    if isinstance(value, dict):
        return {k: plain_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_data(v) for v in value]
    return value


def read_document(path: Path) -> dict[str, Any]:
    """A stack file's whole document (config, encryptionsalt, ...) through the hardened reader, its `secure:`
    leaves as `{"secure": ciphertext}`."""
    doc, _ = parse_text(read_text(path), str(path))
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise StackFileError(f"{path}: must be a mapping with a 'config:' key")
    return plain_data(doc)


def read(path: Path, project: str) -> StackFile:
    """Reads a `Pulumi.<stack>.yaml`; bare config keys get the project's namespace like the CLI does."""
    return read_parsed(read_text(path), path, project)


def read_parsed(text: str, path: Path, project: str) -> StackFile:
    """`read` of a stack file's text already read (`read_text`)."""
    doc, secrets = parse_text(text, str(path))
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise StackFileError(f"{path}: must be a mapping with a 'config:' key")
    for key in doc:
        if key not in STACK_FILE_KEYS:
            raise StackFileError(
                f"{path}: unknown top-level key {key[:60]!r}; a stack file has {', '.join(STACK_FILE_KEYS)}"
            )
    raw = doc.get("config")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise StackFileError(f"{path}: 'config' must be a mapping of key -> value")
    config: dict[str, Any] = {}
    paths: set[Path_] = set()
    for key, value in raw.items():
        full = key if ":" in key else f"{project}:{key}"
        if full in config:
            raise StackFileError(f"{path}: config key {key!r} is given twice (as {full!r} too)")
        config[full] = value
    check_ciphertexts(doc, config, path)
    for p in secrets:
        if p and p[0] == "config" and len(p) > 1:
            key = str(p[1])
            paths.add((key if ":" in key else f"{project}:{key}", *p[2:]))
        elif p and p[0] != "config":
            raise StackFileError(f"{path}: `secure:` is only allowed under config ({_fmt(p)})")
    settings = {k: doc[k] for k in ("encryptionsalt", "secretsprovider", "encryptedkey") if k in doc}
    stack = StackFile(config, paths, (), settings)
    problem = _environment_problem(doc.get("environment"))
    if problem:
        raise StackFileProblems(path, [problem], stack)
    stack.environments = _environments(doc.get("environment"))
    return stack


def _environment_problem(value: Any) -> str | None:
    """What is wrong with a top-level `environment:`, as `environment: <what>`; a stack environment's name
    written there (`environment: dev`) is taken for a misplaced `ml-diagnostics:environment`."""
    try:
        _environments(value)
        return None
    except ValueError as e:
        problem = f"environment: {e}"
    if isinstance(value, str):
        from ml_diagnostics.rules.base import closest
        from program.config_base import ENVIRONMENTS, NAMESPACE

        if value in ENVIRONMENTS or closest(value, ENVIRONMENTS):
            return (
                f"environment: {quote(value, 30)}: did you mean `{NAMESPACE}:environment` under config: (the "
                f"stack's environment: {', '.join(ENVIRONMENTS)})? The top-level `environment:` lists the Pulumi "
                "ESC environments the stack imports, e.g. environment: [ml-platform/gcp-oidc]"
            )
    return problem


def _environments(value: Any) -> tuple[str, ...]:
    """`environment:` as the Pulumi CLI reads it: a list of names (`project/env`, or `env` of the default
    project), each optionally the one key of a mapping of ESC import options (`- name: {merge: false}`).
    ValueError says what it must be."""
    if value is None:
        return ()
    names: list[str] = []
    items = value if isinstance(value, list) else None
    for item in items or ():
        name = next(iter(item)) if isinstance(item, dict) and len(item) == 1 else item
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?", name):
            items = None
            break
        names.append(name)
    if items is None:
        raise ValueError(
            "must be a list of Pulumi ESC environment names ('project/env' or 'env', optionally as the one key "
            "of a mapping of import options), e.g. environment: [ml-platform/gcp-oidc]"
        )
    return tuple(names)


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


def offline_config(path: Path, project: str) -> tuple[dict[str, Any], list[str]]:
    """The stack file for the offline plan: (config map, secret keys), every `secure:` leaf replaced by
    `PLACEHOLDER_SECRET:<digest of the ciphertext>` (a changed secret still shows as changed)."""
    config, secret_keys, _ = offline_stack(path, project)
    return config, secret_keys


def offline_stack(path: Path, project: str) -> tuple[dict[str, Any], list[str], tuple[str, ...]]:
    """`offline_config` and the ESC environments the stack file imports."""
    return offline_of(read(path, project), path)


def offline_of(stack: StackFile, path: Path) -> tuple[dict[str, Any], list[str], tuple[str, ...]]:
    """`offline_stack` of a stack file already read."""
    return offline_values(stack, path), stack.secret_keys, stack.environments


def offline_values(
    stack: StackFile, path: Path, plaintext: Callable[[str, str], str] | None = None
) -> dict[str, Any]:
    """The stack file's config map for an offline run: each `secure:` leaf as `plaintext(ciphertext, key
    path)`, or without `plaintext` as `PLACEHOLDER_SECRET:<digest of the ciphertext>` (a changed secret still
    shows as changed)."""
    from program.config_base import PLACEHOLDER_SECRET

    def replace(value: Any, at: Path_) -> Any:
        if isinstance(value, SecretLeaf):
            if plaintext is not None:
                return plaintext(value.ciphertext, _fmt(at))
            return f"{PLACEHOLDER_SECRET}:{hashlib.sha256(value.ciphertext.encode()).hexdigest()[:12]}"
        if isinstance(value, dict):
            return {k: replace(v, (*at, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [replace(v, (*at, i)) for i, v in enumerate(value)]
        if isinstance(value, str) and value.startswith(PLACEHOLDER_SECRET):
            raise StackFileError(
                f"{path}: {_fmt(at)}: values starting with {PLACEHOLDER_SECRET!r} are reserved"
            )
        return value

    return {k: replace(v, (k,)) for k, v in stack.config.items()}
