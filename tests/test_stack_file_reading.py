"""How stack files are read: YAML tags as the Pulumi CLI's YAML 1.2 reader applies them, merge keys refused,
one set of limits whichever loader reads, bounded error output (issue 25, items 7 and 9-12)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from ml_diagnostics.compat import QUOTE_LIMIT, quote
from program import config, stack_file
from program.stack_file import StackFileError

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
    if not stack_file.yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml: one loader only")

    def outcome(loader_cls, text):
        loader = None
        try:
            loader = loader_cls(text)
            node = loader.get_single_node()
        except StackFileError as e:
            return ("error", str(e))
        except Exception as e:  # noqa: BLE001 - the kind of failure is what is compared
            return ("error", type(e).__name__)
        finally:
            if loader is not None:
                loader.dispose()
        try:
            return ("ok", stack_file._Builder().build(node, (), 0)) if node is not None else ("ok", None)
        except StackFileError as e:
            return ("error", str(e))

    compared = 0
    for path in READABLE:
        text = path.read_text(errors="replace")
        if stack_file._nesting_upper_bound(text) > stack_file._C_SAFE_DEPTH:
            continue  # never given to the C loader (its composer recurses in C)
        compared += 1
        assert outcome(stack_file._CLoader, text) == outcome(stack_file._Loader, text), path
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
    brackets = "# " + "[{" * stack_file._C_SAFE_DEPTH
    variants = (
        text,
        text.replace("config:\n", f"config:  {brackets}\n", 1),
        text + " " * 300 + brackets + "\n",
    )
    assert stack_file._nesting_upper_bound(variants[1]) > stack_file._C_SAFE_DEPTH
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
