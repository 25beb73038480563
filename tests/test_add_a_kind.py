"""A new target kind is found, not listed: added to a copy of this tree from the template kind
(dev/templates/kind), it needs its own files and, on a new cloud, its pins; everything else that names the
kinds is generated or reads the registries.

The test copies the tree (`git ls-files`). For each addition, a flavour and then a kind on a new cloud, it
writes the kind's files (`python -m dev.templates`: its library module and Spec with its record section, its
program folder, its policy rule and the rule's test file, its own test file; on a new cloud its
`program/clouds/<cloud>.py` and a pin line in each pin file) and runs every generator; then the tests that read
the registries, the generators' checks, the kinds' own tests, the policy corpus and the pack's own tests run
in the copy holding both. Per addition it records three lists: the existing files edited by hand (asserted:
none for a flavour, the pin files only for a new cloud), the existing files the generators rewrote, and the
new files. docs/development.md, "Add a target kind", quotes them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from dev.templates import Names, instantiate

ROOT = Path(__file__).resolve().parents[1]
PINS = ("pyproject.toml", "requirements.txt", "requirements-dev.txt")
GENERATORS = (
    ("dev.gen.args", "--write"),
    ("ml_diagnostics.plugin", "--write"),
    ("dev.gen.kind_docs", "--write"),
    ("dev.gen.config_reference", "--write"),
    ("dev.gen.policy_levels", "--write"),
    ("dev.gen.constraints", "--write"),
)
# The tests that read the table of kinds and the library's parts, and the generators' checks.
REGISTRY_TESTS = (
    "tests/test_layers.py",
    "tests/test_package_schema.py",
    "tests/test_config.py",
    "tests/test_kind_registry.py",
    "tests/test_verify_state.py::test_each_kind_reads_its_records_and_its_older_states_by_its_own_hook",
    "tests/test_verify_state.py::test_verify_from_a_state_names_no_component_and_no_section",
    "tests/test_verify_state.py::test_a_record_of_another_shape_or_a_newer_version_is_not_a_pass",
    "tests/test_docs_kinds.py",
    "tests/test_config_reference.py",
    "tests/test_constraints_doc.py",
    "tests/test_policies_levels.py",
)
SKIPPED_DIRS = {
    ".git",
    ".venv",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
}

FLAVOUR = Names("lab_flavour", order=50, part_order=120)
NEW_CLOUD = Names("eks_cluster", order=60, part_order=130, cloud="aws")
# A kind on a new cloud brings its cloud's packages: one pin in each pin file (never installed here).
AWS_PIN = "pulumi-aws==7.11.0"


def copy_tree(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if not source.is_file() or SKIPPED_DIRS & set(Path(rel).parts):
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest / rel)


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS]
        for name in filenames:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The files of `before` whose content `after` differs in."""
    return sorted(p for p in before if p in after and after[p] != before[p])


def run(root: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": f"{root / 'components'}{os.pathsep}{root}"}
    proc = subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def add_pins(root: Path) -> None:
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    extra = f'# The {NEW_CLOUD.cloud} cloud\'s kinds.\n{NEW_CLOUD.cloud} = ["{AWS_PIN}"]\n'
    text = text.replace(
        'all = ["ml-diagnostics[gcp,azure]"]', f'{extra}all = ["ml-diagnostics[gcp,azure,aws]"]'
    )
    pyproject.write_text(text)
    with (root / "requirements.txt").open("a") as f:
        f.write(f"# the {NEW_CLOUD.cloud} cloud's kinds\n{AWS_PIN}\n")
    with (root / "requirements-dev.txt").open("a") as f:
        f.write("# stubs of the aws cloud's client, at its package's version\nboto3-stubs==1.40.0\n")


def add(tree: Path, names: Names, record_property) -> tuple[list[str], list[str], list[str]]:
    """Adds one kind to `tree` and runs the generators: (hand-edited, generated, new) files, each against the
    tree as it was before this kind."""
    before = snapshot(tree)
    new_cloud = names is NEW_CLOUD
    written = instantiate(tree, names, new_cloud=new_cloud)
    if new_cloud:
        add_pins(tree)
    by_hand = snapshot(tree)
    for generator in GENERATORS:
        run(tree, "-m", *generator)
    after = snapshot(tree)
    hand_edited = changed(before, by_hand)
    generated = changed(by_hand, after)
    new = sorted(set(after) - set(before))
    for key, value in (("hand_edited", hand_edited), ("generated", generated), ("new", new)):
        record_property(f"{names.kind}.{key}", value)
        print(f"{names.kind}: {key} ({len(value)}): {', '.join(value)}")
    assert set(new) == {str(p) for p in written}, "the generators write no new file"
    return hand_edited, generated, new


def test_a_flavour_and_a_kind_on_a_new_cloud_are_their_own_folders(tmp_path: Path, record_property) -> None:
    """Both kinds go into one copy, one after the other (each measured against the tree before it), and the
    tests run once over the tree holding both."""
    tree = tmp_path / "tree"
    copy_tree(tree)
    flavour = add(tree, FLAVOUR, record_property)
    new_cloud = add(tree, NEW_CLOUD, record_property)

    assert flavour[0] == []
    assert set(new_cloud[0]) <= set(PINS) and new_cloud[0]
    for _, generated, _ in (flavour, new_cloud):
        assert {
            "components/ml_diagnostics/args.py",
            "components/ml_diagnostics/_exports.py",
            "components/ml_diagnostics/_record.py",
            "components/ml_diagnostics/schema.json",
            "components/README.md",
            "README.md",
        } <= set(generated)

    kinds = (FLAVOUR, NEW_CLOUD)
    kind_tests = [f"tests/test_{part}_{k.kind}.py" for k in kinds for part in ("kind", "policies")]
    rules = " or ".join(k.values()["rule"] for k in kinds)
    corpus = ["tests/test_policies_cases.py", "tests/test_policies_stacks.py::test_corpus_covers_every_rule"]
    pytest_run = ("-m", "pytest", "-p", "no:cacheprovider", "-q", "-x")
    run(tree, *pytest_run, "-k", "not fuzz", *REGISTRY_TESTS, *kind_tests)  # not the fuzzers: no registry
    run(tree, *pytest_run, "-k", f"counts or corpus or {rules}", *corpus)
    run(tree / "policies", *pytest_run, "tests")  # the pack's own
    run(tree, "-m", "ruff", "check", "-q", ".")
    run(tree, "-m", "ruff", "format", "--check", "-q", ".")
