"""How stack files are read: YAML tags as the Pulumi CLI's YAML 1.2 reader applies them, merge keys refused,
one set of limits whichever loader reads, bounded error output (issue 25, items 7 and 9-12), and YAML errors
that say what is wrong and where, alike from both loaders (issue 36)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from ml_diagnostics.compat import QUOTE_LIMIT, quote
from program import config, stack_file
from program.stack_file import StackFileError, reader
from tests.fixtures.tools import need

ROOT = Path(__file__).resolve().parent.parent
READABLE = sorted((ROOT / "stacks").glob("Pulumi.*.yaml")) + sorted(
    (ROOT / "tests" / "bad_input").glob("*/*.yaml")
)


def read(text: str):
    return stack_file.parse_text(text)[0]


@pytest.mark.parametrize(
    "text, value",
    [
        ("a: !!str 0.8", "0.8"),
        ("a: !!str true", "true"),
        ("a: !!bool true", True),
        ("a: !!bool FALSE", False),
        ("a: !!int 0x1f", 31),
        ("a: !!int 0o17", 15),
        ("a: !!float 1", 1.0),
        ("a: !!float 2e3", 2000.0),
        ("a: !!null ~", None),
        ('"<<": 1', {"<<": 1}),  # a quoted << is an ordinary key, for the CLI too
    ],
)
def test_core_schema_tags_apply(text, value):
    got = read(text)
    assert got == (value if isinstance(value, dict) else {"a": value})
    assert type(next(iter(got.values()))) is type(
        next(iter(value.values())) if isinstance(value, dict) else value
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: !!bool yes", "line 1: a: 'yes' is not a YAML 1.2 bool (true or false); drop the !!bool tag"),
        ("a: !!bool 1", "'1' is not a YAML 1.2 bool"),
        ("a: !!int 1.5", "'1.5' is not a YAML 1.2 int"),
        ("a: !!int ٣", "'٣' is not a YAML 1.2 int"),
        ("a: !!float one", "'one' is not a YAML 1.2 float"),
        ("a: !!null nil", "'nil' is not a YAML 1.2 null"),
        ("a: !!timestamp 2026-01-01", "tag 'tag:yaml.org,2002:timestamp' is not allowed"),
    ],
)
def test_tags_that_do_not_fit_are_refused_with_the_key_path(text, message):
    with pytest.raises(StackFileError) as e:
        read(text)
    assert message in str(e.value)


def test_bool_tag_yes_never_turns_into_false_on_deletion_protection(tmp_path):
    f = tmp_path / "Pulumi.dev.yaml"
    f.write_text((ROOT / "tests/bad_input/types/bool-tag-yes.yaml").read_text())
    with pytest.raises(StackFileError) as e:
        stack_file.offline_config(f, "ml-diagnostics")
    assert "gkeClusters[0].deletionProtection: 'yes' is not a YAML 1.2 bool" in str(e.value)


@pytest.mark.parametrize(
    "text",
    [
        "v:\n  <<: {b: 2}\n  a: 1\n",
        "base: &b {x: 1}\nv: {<<: *b}\n",
        "v:\n  - {<<: [{a: 1}]}\n",
        "v: {!!merge <<: {a: 1}}",
    ],
)
def test_merge_keys_are_refused_whichever_way_they_are_written(text):
    with pytest.raises(
        StackFileError, match=r"merge keys \(<<\) are not supported; write the merged keys out"
    ):
        read(text)


def test_both_loaders_read_every_file_alike():
    need(reader.yaml.__with_libyaml__, "PyYAML without libyaml: one loader only")

    def outcome(loader_cls, text):
        loader = None
        try:
            loader = loader_cls(text, stack_file.MIN_VALUES)
            node = loader.get_single_node()
        except StackFileError as e:
            return ("error", str(e))
        except Exception as e:  # noqa: BLE001 - the kind of failure is what is compared
            return ("error", type(e).__name__)
        finally:
            if loader is not None:
                loader.dispose()
        try:
            builder = reader._Builder(stack_file.MIN_VALUES)
            return ("ok", builder.build(node, (), 0)) if node is not None else ("ok", None)
        except StackFileError as e:
            return ("error", str(e))

    compared = 0
    for path in READABLE:
        text = path.read_text(errors="replace")
        if reader._nesting_upper_bound(text) > reader._C_SAFE_DEPTH:
            continue  # never given to the C loader (its composer recurses in C)
        compared += 1
        assert outcome(reader._CLoader, text) == outcome(reader._Loader, text), path
    assert compared > 80


def nested(depth: int) -> str:
    return (
        "config:\n  ml-diagnostics:googleApi:\n"
        + "".join(f"{'  ' * (i + 2)}k{i}:\n" for i in range(depth))
        + ("  " * (depth + 2) + "leaf: 1\n")
    )


@pytest.mark.parametrize("depth", [20, stack_file.MAX_DEPTH + 5, 150])
def test_a_comment_line_never_changes_the_outcome(depth):
    # A long indented comment makes the pre-scan pick the other loader; the result must not change.
    text = nested(depth)
    brackets = "# " + "[{" * reader._C_SAFE_DEPTH
    variants = (
        text,
        text.replace("config:\n", f"config:  {brackets}\n", 1),
        text + " " * 300 + brackets + "\n",
    )
    assert reader._nesting_upper_bound(variants[1]) > reader._C_SAFE_DEPTH
    results = []
    for t in variants:
        try:
            results.append(("ok", read(t)))
        except StackFileError as e:
            results.append(("error", str(e)))
    assert results[0] == results[1] == results[2]
    assert (results[0][0] == "error") == (depth > stack_file.MAX_DEPTH - 3)
    if results[0][0] == "error":
        assert f"nested deeper than {stack_file.MAX_DEPTH} levels" in results[0][1]


def test_nesting_far_past_the_limit_is_one_clear_error_not_a_recursion_error():
    with pytest.raises(StackFileError, match="nested deeper than 32 levels"):
        read("a: " + "[" * 5000 + "]" * 5000)


# --- bounded output (item 12) -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["x" * 1_000_000, "\t" * 1_000_000, "é" * 1_000_000, ["a" * 1000] * 1000])
def test_quote_is_bounded_however_the_value_escapes(value):
    q = quote(value)
    assert len(q) <= QUOTE_LIMIT + 40
    if isinstance(value, str):
        assert q.endswith(f"({len(value)} characters)")


def test_error_header_counts_every_problem_even_when_the_list_is_cut():
    namespaces = [{"name": f"Bad {i}"} for i in range(75)]
    raw = {
        "ml-diagnostics:environment": "dev",
        "ml-diagnostics:kubernetesClusters": [
            {
                "name": "lab",
                "context": "lab",
                "manualInstall": {"jaxVersion": "0.8"},
                "workloadNamespaces": namespaces,
            }
        ],
    }
    with pytest.raises(config.ConfigError) as e:
        config.parse(raw)
    assert e.value.total == 75
    assert len(e.value.problems) == config.MAX_PROBLEMS + 1
    assert e.value.problems[-1] == f"ml-diagnostics: ... and {75 - config.MAX_PROBLEMS} more problem(s)"
    assert str(e.value).startswith("invalid stack configuration (75 problem(s)):\n")


def test_a_problem_line_is_bounded_whatever_it_quotes():
    with pytest.raises(config.ConfigError) as e:
        config._raise(["ml-diagnostics:x: " + "y" * 50_000])
    (line,) = e.value.problems
    assert len(line) <= config.MAX_PROBLEM_CHARS and line.endswith("characters, cut)")


@pytest.mark.parametrize("enabled", [True, False])
def test_parsing_leaves_the_garbage_collector_as_it_found_it(enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert stack_file.parse_text("config:\n  a: 1\n") == ({"config": {"a": 1}}, set())
        assert gc.isenabled() is enabled
        with pytest.raises(stack_file.StackFileError):
            stack_file.parse_text("config:\n  a: 1\n  a: 2\n")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# --- YAML errors in words (issue 36) ---------------------------------------------------------------------
# Each error names what is wrong and, where the parser gives two, both lines; the message is the same whichever
# loader reads the file (libyaml's words differ from PyYAML's, and neither is shown cut to its last part).


def _anchor_redefined_at_line_40() -> str:
    lines = ["config:", "  ml-diagnostics:environment: dev", "  ml-diagnostics:googleApi:", "    endpoints:"]
    lines += [f"      e{i}: https://e{i}.example.com/" for i in range(7)]
    lines.append("      x: &x https://x.example.com/")  # line 12
    lines += [f"      f{i}: https://f.example.com/" for i in range(13, 40)]
    lines.append("      y: &x https://y.example.com/")  # line 40
    return "\n".join(lines) + "\n"


YAML_ERRORS = [
    pytest.param(
        _anchor_redefined_at_line_40(),
        "line 40: not valid YAML: anchor 'x' defined twice: lines 12 and 40 (an anchor names one value; rename "
        "one of them)",
        id="duplicate-anchor",
    ),
    pytest.param(
        "config:\n  a: [&p 1, &p 2]\n",
        "line 2: not valid YAML: anchor 'p' defined twice: line 2, columns 7 and 13 (an anchor names one value; "
        "rename one of them)",
        id="duplicate-anchor-one-line",
    ),
    pytest.param(
        "config:\n  a: 1\n  b: 2\n  a: 3\n",
        "line 4: duplicate key 'config.a' (first at line 2)",
        id="duplicate-key",
    ),
    pytest.param(
        "config:\n  a: 1\n b: 2\n",
        "line 3: not valid YAML: bad indentation: 'b: 2' at line 3, column 2 is not in line with the keys of the "
        "mapping that starts at line 1",
        id="bad-indentation",
    ),
    pytest.param(
        "config:\n  - a\n  b: 1\n",
        "line 3: not valid YAML: bad indentation: 'b: 1' at line 3, column 3 is not in line with the items ('- ') "
        "of the list that starts at line 2",
        id="bad-indentation-list",
    ),
    pytest.param(
        "config:\n  a: [1, 2\n  b: 3\n",
        "line 3: not valid YAML: unclosed flow sequence: the '[' at line 2, column 6 is not closed (expected ',' "
        "or ']' at line 3, column 4, found ': 3')",
        id="unclosed-flow-sequence",
    ),
    pytest.param(
        "config:\n  a: {x: 1, y: 2\n",
        "line 3: not valid YAML: unclosed flow mapping: the '{' at line 2, column 6 is not closed (expected ',' "
        "or '}' at line 3, column 1, found the end of the file)",
        id="unclosed-flow-mapping",
    ),
    pytest.param(
        "config:\n  a: 1\n\tb: 2\n",
        "line 3: not valid YAML: a tab at line 3, column 1: YAML indents with spaces only; replace the tab with "
        "spaces",
        id="tab",
    ),
    pytest.param(
        'config:\n  a: "abc\n  b: 2\n',
        "line 4: not valid YAML: unclosed quoted string: the quote at line 2, column 6 is not closed before the "
        "end of the file",
        id="unclosed-quote",
    ),
    pytest.param(
        "config:\n  a: *nowhere\n",
        "line 2: not valid YAML: alias '*nowhere' names no anchor: no value before it is marked '&nowhere'",
        id="undefined-alias",
    ),
    pytest.param(
        "config: {}\n---\nconfig: {}\n",
        "line 2: not valid YAML: a second document starts at line 2 ('---'): the file holds one YAML document",
        id="two-documents",
    ),
    pytest.param(
        "config:\n  a: b: c\n",
        "line 2: not valid YAML: ': ' at line 2, column 7 where no key can start: quote a value that holds ': ', "
        "or fix the indentation",
        id="colon-in-a-value",
    ),
    pytest.param(
        'config:\n  a: "x" y\n',
        "line 2: not valid YAML: 'y' at line 2, column 10 follows a complete value on its line: quote the whole "
        "value, or start a new line",
        id="text-after-a-quoted-value",
    ),
    pytest.param(
        "config:\n  a: 1\n]\n",
        "line 3: not valid YAML: ']' at line 3, column 1 closes nothing: no '[' is open",
        id="stray-closing-bracket",
    ),
    pytest.param(
        'config:\n  a: "C:\\dir"\n',
        "line 2: not valid YAML: unknown escape '\\d' in the double-quoted string at line 2: write '\\\\' for a "
        "backslash, or use single quotes",
        id="unknown-escape",
    ),
    pytest.param(
        "config:\n  a: - b\n",
        "line 2: not valid YAML: '- ' at line 2, column 6 where no list can start: fix the indentation, or quote a "
        "value that starts with '- '",
        id="list-item-after-a-key",
    ),
    pytest.param(
        "config:\n  a: [1, , 2]\n",
        "line 2: not valid YAML: a value is missing at line 2, column 10 in a '[...]' or '{...}' (found ', 2]')",
        id="missing-flow-value",
    ),
    pytest.param(
        "config: {}\n...\nb: 2\n",
        "line 3: not valid YAML: 'b: 2' at line 3, column 1 comes after the end of the document's value: the file "
        "holds one mapping (check this line's indentation, or remove a stray '...')",
        id="text-after-the-document",
    ),
    pytest.param(
        "config:\n  a: |x\n    b\n",
        "line 2: not valid YAML: the block scalar header at line 2, column 6 ('|' or '>') may hold only an "
        "indentation digit, '+' or '-' and a comment (found 'x')",
        id="block-scalar-header",
    ),
    pytest.param(
        "config:\n  a: &p* 1\n",
        "line 2: not valid YAML: the anchor name at line 2, column 6 must be letters, digits, '-' or '_' (found "
        "'* 1')",
        id="anchor-name",
    ),
    pytest.param(
        "config:\n  a: @b\n",
        "line 2: not valid YAML: '@' at line 2, column 6 cannot start a value (a YAML indicator); quote the value",
        id="reserved-indicator",
    ),
]


@pytest.mark.parametrize("loader", ["libyaml", "pyyaml"])
@pytest.mark.parametrize(("text", "message"), YAML_ERRORS)
def test_a_yaml_error_says_what_is_wrong_and_where(monkeypatch, loader, text, message):
    if loader == "libyaml" and not reader.yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml")
    if loader == "pyyaml":
        monkeypatch.setattr(reader.yaml, "__with_libyaml__", False)
    with pytest.raises(StackFileError) as e:
        stack_file.parse_text(text, "Pulumi.dev.yaml")
    assert str(e.value) == f"Pulumi.dev.yaml: {message}"


def test_a_yaml_error_in_a_stack_file_names_the_file_the_problem_and_both_lines(tmp_path):
    f = tmp_path / "Pulumi.dev.yaml"
    f.write_text(_anchor_redefined_at_line_40())
    with pytest.raises(StackFileError) as e:
        stack_file.read(f, "ml-diagnostics")
    assert str(e.value) == (
        f"{f}: line 40: not valid YAML: anchor 'x' defined twice: lines 12 and 40 (an anchor names one value; "
        "rename one of them)"
    )


def test_a_yaml_error_of_any_other_kind_keeps_the_parsers_words_and_its_context_line():
    with pytest.raises(StackFileError) as e:
        stack_file.parse_text("config:\n  a: 1\n  b\n  c: 2\n")
    assert str(e.value) == (
        "stack file: line 4: not valid YAML: could not find expected ':' (while scanning a simple key at line 3)"
    )


# -- the size limit and the value budget grow with the file -------------------------------------------------------
def test_a_file_just_over_the_size_limit_says_what_fits_and_what_to_do(tmp_path):
    f = tmp_path / "Pulumi.prod.yaml"
    f.write_bytes(b"config: {}\n" + b"#" * (stack_file.MAX_FILE_BYTES - 10))  # one byte over
    with pytest.raises(StackFileError) as e:
        stack_file.read_text(f)
    assert str(e.value) == (
        f"{f}: larger than 24 MiB; stack files are limited to that (10,000 clusters shaped like "
        "stacks/Pulumi.prod.yaml's targets take 15 to 21 MB): keep secrets that large out of it (a kubeconfig "
        "`context`, Pulumi ESC), or split the environment in two"
    )
    f.write_bytes(b"config: {}\n" + b"#" * (stack_file.MAX_FILE_BYTES - 11))  # exactly the limit
    assert stack_file.read_text(f).startswith("config: {}")


@pytest.mark.parametrize("size", [0, 1_000_000, stack_file.MAX_FILE_BYTES])
def test_the_value_budget_grows_with_the_file_and_stops_at_the_size_limit(size):
    assert stack_file.value_budget(size) == max(100_000, size // 16)
    assert stack_file.value_budget(stack_file.MAX_FILE_BYTES) == 1_572_864


def test_a_file_denser_than_its_budget_stops_while_it_is_composed_not_after():
    # 1,000,000 one-letter values, 6 bytes each: over the budget of 6 MB (375,000 values); the composer stops
    # there, far before the file's last line
    text = "config:\n  k:\n" + "  - a\n" * 1_000_000
    with pytest.raises(StackFileError) as e:
        stack_file.parse_text(text, "Pulumi.dense.yaml")
    assert str(e.value) == (
        "Pulumi.dense.yaml: line 375000: more than 375,000 values after expanding aliases (at most one per 16 "
        "bytes of the file, and 100,000 in a small one: anchors repeated too often, or values packed denser than "
        "any stack file needs); write the values out or use fewer aliases"
    )


def test_aliases_expand_to_the_budget_of_the_file_at_most():
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(5)
    )
    with pytest.raises(StackFileError, match=r"more than 100,000 values after expanding aliases"):
        stack_file.parse_text(laughs + "config: {}\n")
