"""What the YAML parser refused, in words.

Either loader (libyaml's or PyYAML's own) may read a file, and they word their errors differently (libyaml
names no anchor, nor the character it stopped at): each class of error is described here from the parser's
marks and the text itself, so a file gets the same message whichever loader read it (`anchor 'x' defined
twice: lines 12 and 40`), with both lines where the parser gives two. Both loaders count a mark's line and
column in characters, from 0.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from ml_diagnostics.compat import quote

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
