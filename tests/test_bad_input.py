"""The bad-stack-file corpus: every file under tests/bad_input/<category>/ gets exit 2 and one clear error.

Each file's first line is `# expect: <text>`: the error must contain it (the key path or the file line). The
plan runs in-process under a memory guard (tracemalloc) and a hang guard (SIGALRM); the figures themselves are
printed by `dev/bench/input.py`, not asserted here. Plus a property test over arbitrary bytes and
structures: the loader either accepts or raises its own error, never anything else.
"""

from __future__ import annotations

import json
import signal
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mldiag.plan import cli as plan
from program import stack_file
from program.config import ConfigError, parse
from program.stack_file import StackFileError

CORPUS = Path(__file__).parent / "bad_input"
FILES = sorted(CORPUS.glob("*/*.yaml"))
HANG_GUARD_SECONDS = 120
MEMORY_GUARD_BYTES = 300 * 1024 * 1024


def expectation(path: Path) -> str:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    assert first.startswith("# expect: "), path
    return first[len("# expect: ") :]


def run_plan(path: Path, capsys) -> tuple[int, str, str, int]:
    def hang(*_):
        raise TimeoutError(f"{path.name}: the plan did not finish in {HANG_GUARD_SECONDS} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_GUARD_SECONDS)
    tracemalloc.start()
    try:
        code = plan.main(["dev", "--config-file", str(path), "--format", "json", "-q", "--skip-policies"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out, err = capsys.readouterr()
    return code, out, err, peak


def test_corpus_covers_every_category_with_sixty_files_or_more():
    categories = {p.parent.name for p in FILES}
    assert len(FILES) >= 60
    assert {
        "encoding",
        "yaml-syntax",
        "duplicate-keys",
        "aliases",
        "depth",
        "structure",
        "types",
        "ranges",
        "identifiers",
        "secrets",
        "namespaces",
        "conflicts",
        "output-bounds",
    } <= categories


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_bad_stack_file(path: Path, capsys):
    code, out, err, peak = run_plan(path, capsys)
    assert code == 2, err
    assert out == ""
    assert expectation(path) in err
    assert "Traceback" not in err and "pydantic" not in err
    assert peak < MEMORY_GUARD_BYTES
    # No value is echoed at length: every line of the error stays short.
    assert max(len(line) for line in err.splitlines()) < 600


def test_file_that_is_a_directory(tmp_path, capsys):
    code, _, err, _ = run_plan(tmp_path, capsys)
    assert code == 2 and "is a directory, not a stack file" in err and "Traceback" not in err


def test_missing_file(tmp_path, capsys):
    code, _, err, _ = run_plan(tmp_path / "Pulumi.nope.yaml", capsys)
    assert code == 2 and "does not exist" in err


def test_file_over_the_size_limit(tmp_path, capsys):
    f = tmp_path / "Pulumi.big.yaml"
    f.write_text("config:\n  ml-diagnostics:environment: dev\n" + "#" * stack_file.MAX_FILE_BYTES)
    code, _, err, _ = run_plan(f, capsys)
    assert code == 2 and "larger than 24 MiB; stack files are limited to that" in err


def test_engine_passed_config_gets_the_same_limits():
    deep = json.dumps(
        {"endpoints": {"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}
    )
    with pytest.raises(ConfigError) as e:
        parse({"ml-diagnostics:environment": "dev", "ml-diagnostics:googleApi": deep})
    assert e.value.problems == ["ml-diagnostics:googleApi: nested deeper than 32 levels"]


def test_pem_check_is_linear_on_a_header_and_many_spaces():
    from ml_diagnostics.rules.azure_ml import _pem_labels

    assert _pem_labels("-----BEGIN CERTIFICATE-----" + " " * 1_000_000) == []
    assert _pem_labels("-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n") == ["CERTIFICATE"]


# --- property tests -----------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_are_read_or_refused_with_one_error(tmp_path_factory, data):
    f = tmp_path_factory.mktemp("yaml") / "Pulumi.x.yaml"
    f.write_bytes(b"config:\n  ml-diagnostics:environment: dev\n  ml-diagnostics:googleApi: " + data)
    try:
        config, secret_keys = stack_file.offline_config(f, "ml-diagnostics")
        parse(config, secret_keys)
    except (StackFileError, ConfigError):
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "ml-diagnostics:environment",
                "ml-diagnostics:gkeClusters",
                "ml-diagnostics:kubernetesClusters",
                "ml-diagnostics:azureMl",
                "ml-diagnostics:googleApi",
                "mldiagnostics:azureMl",
                "ml-diagnostics:other",
            ]
        ),
        json_values,
    ),
    st.sets(st.sampled_from(["ml-diagnostics:gkeClusters", "ml-diagnostics:kubernetesClusters"])),
)
def test_arbitrary_structures_are_accepted_or_refused_with_config_error(raw, secret_keys):
    try:
        parse(raw, secret_keys)
    except ConfigError as e:
        assert e.problems
