"""dev/e2e/toolchain.sh restores a prebuilt archive only when every check passes: the parts' SHA-256 sums,
the unpacked binaries' sums, and each binary's own version report against the pins. Anything else falls
back to building from Go modules (here a `go` that fails at once, so nothing is downloaded).

The archives here are small stand-ins with the real layout: shell scripts that print a version, and a Python
gRPC plugin that answers GetPluginInfo as the Kubernetes provider does."""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from dev.e2e.harness import REPO, REQUIRED_BINARIES
from tests.fixtures.tools import need_command

SCRIPT = REPO / "dev/e2e/toolchain.sh"


@pytest.fixture(autouse=True)
def _zstd() -> None:
    need_command("zstd")


def pins() -> dict[str, str]:
    text = SCRIPT.read_text()
    return {
        k: re.search(rf"^{k}=(\S+)", text, re.M).group(1)
        for k in ("PULUMI_VERSION", "K8S_PROVIDER_VERSION", "ETCD_VERSION", "KUBE_VERSION")
    }


NO_GO = "#!/bin/sh\necho 'go: no network in this test' >&2\nexit 1\n"


def run(
    tmp: Path,
    *args: str,
    archive: Path | None = None,
    go: str = NO_GO,
    venv: bool = True,
    python3: str | None = None,
    ci: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """toolchain.sh of a copy of the repository in `tmp`; `go` (and `python3`, when given) are stand-ins first
    on PATH; `venv`: the copy has a .venv whose python can ask the plugin (grpc, pulumi SDK); `ci`: CI's value."""
    fake_go = tmp / "fakebin"
    fake_go.mkdir(exist_ok=True)
    (fake_go / "go").write_text(go)
    (fake_go / "go").chmod(0o755)
    if python3 is not None:
        (fake_go / "python3").write_text(python3)
        (fake_go / "python3").chmod(0o755)
    env = {
        **{k: v for k, v in os.environ.items() if k != "CI"},
        "PATH": f"{fake_go}:{os.environ['PATH']}",
        "ML_DIAG_E2E_CACHE": str(tmp / "cache"),
        "ML_DIAG_E2E_ARCHIVE": str(archive or tmp / "none"),
        "HOME": str(tmp / "home"),
        **({"CI": ci} if ci is not None else {}),
    }
    # the shared folder's default homes must not answer for these tests: run a copy outside the repository
    script = tmp / "repo/dev/e2e/toolchain.sh"
    if not script.exists():
        script.parent.mkdir(parents=True)
        for name in ("toolchain.sh", "toolchain_no_build.sh", "plugin_version.py", "cert_manager_chart.py"):
            shutil.copy(REPO / "dev/e2e" / name, script.parent)
        if venv:
            (tmp / "repo/.venv/bin").mkdir(parents=True)
            # a wrapper, not a symlink: a venv's python found through a symlink elsewhere loses its venv
            (tmp / "repo/.venv/bin/python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
            (tmp / "repo/.venv/bin/python").chmod(0o755)
    text = script.read_text().replace('"/work/shared/e2e-toolchain"', '"/nonexistent"')
    script.write_text(text)
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=env, timeout=120)


def key() -> str:
    p = pins()
    return (
        f"pulumi-{p['PULUMI_VERSION']}_k8sprov-{p['K8S_PROVIDER_VERSION'].rsplit('-', 1)[1]}"
        f"_etcd-{p['ETCD_VERSION']}_kube-{p['KUBE_VERSION']}"
    )


def fake_binaries(**override: str) -> dict[str, str]:
    p = pins()
    versions = {
        "pulumi": p["PULUMI_VERSION"],
        "etcd": f"etcd Version: {p['ETCD_VERSION'][1:]}",
        "kube-apiserver": f"Kubernetes {p['KUBE_VERSION']}",
        "kube-controller-manager": f"Kubernetes {p['KUBE_VERSION']}",
        **override,
    }
    files = {
        b: f"#!/bin/sh\necho '{versions[b]}'\n"
        for b in ("pulumi", "etcd", "kube-apiserver", "kube-controller-manager")
    }
    plugin = override.get("pulumi-resource-kubernetes", p["K8S_PROVIDER_VERSION"][1:])
    files["pulumi-resource-kubernetes"] = f"""#!{sys.executable}
import sys
sys.path.insert(0, {str(REPO)!r})
from pulumi.runtime.proto import plugin_pb2, provider_pb2_grpc
from dev.e2e.plugin_server import serve

class P(provider_pb2_grpc.ResourceProviderServicer):
    def GetPluginInfo(self, request, context):
        return plugin_pb2.PluginInfo(version={plugin!r})

serve(lambda s: provider_pb2_grpc.add_ResourceProviderServicer_to_server(P(), s), workers=1)
"""
    files["pulumi-resource-pulumi-python"] = "#!/bin/sh\nexit 0\n"
    files["pulumi-language-python-exec"] = "#!/bin/sh\nexit 0\n"
    assert set(files) == set(REQUIRED_BINARIES)
    return files


def tar_zst(executables: dict[str, bytes]) -> bytes:
    """A tar of executable files (path in the tar -> content), packed by zstd."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in executables.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return subprocess.run(["zstd", "-q", "-c"], input=buf.getvalue(), capture_output=True, check=True).stdout


def make_archive(
    where: Path, files: dict[str, str], name: str | None = None, corrupt_part: int | None = None
) -> Path:
    name = name or key()
    where.mkdir(parents=True)
    packed = tar_zst({f"{name}/bin/{fname}": text.encode() for fname, text in files.items()})
    size = len(packed) // 3 + 1
    parts = [packed[i : i + size] for i in range(0, len(packed), size)]
    sums = []
    for i, part in enumerate(parts):
        fname = f"{name}.tar.zst.part-{i:02d}"
        sums.append(f"{hashlib.sha256(part).hexdigest()}  {fname}")
        (where / fname).write_bytes(part if i != corrupt_part else part[:-1] + bytes([part[-1] ^ 1]))
    sums.append(f"{hashlib.sha256(packed).hexdigest()}  {name}.tar.zst (whole, after cat)")
    (where / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    (where / "BINARIES.sha256").write_text(
        "".join(f"{hashlib.sha256(t.encode()).hexdigest()}  {f}\n" for f, t in sorted(files.items()))
    )
    return where


def bin_dir(tmp: Path) -> Path:
    return tmp / "cache" / key() / "bin"


def test_a_good_archive_is_restored_checked_and_used(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "archive", fake_binaries())
    assert run(tmp_path, "--check", archive=archive).returncode == 1
    has = run(tmp_path, "--has-archive", archive=archive)
    assert has.returncode == 0 and has.stdout.strip() == str(archive)
    out = run(tmp_path, archive=archive)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"toolchain: restoring {key()} from {archive}" in out.stdout
    assert re.search(r"toolchain: restored in \d+\.\d{3}s", out.stdout)
    assert "building" not in out.stdout
    assert sorted(p.name for p in bin_dir(tmp_path).iterdir()) == sorted(REQUIRED_BINARIES)
    assert not list((tmp_path / "cache").glob(".restore-*"))
    assert run(tmp_path, "--check", archive=archive).returncode == 0
    assert run(tmp_path, "--verify", archive=archive).returncode == 0
    assert run(tmp_path, "--print-bin", archive=archive).stdout.strip() == str(bin_dir(tmp_path))
    again = run(tmp_path, archive=archive)
    assert again.returncode == 0 and "cached" in again.stdout and "restoring" not in again.stdout


def test_a_corrupt_part_falls_back_to_building(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "archive", fake_binaries(), corrupt_part=1)
    out = run(tmp_path, archive=archive)
    assert "toolchain: restore: a part's SHA-256 differs" in out.stdout
    assert "toolchain: the archive could not be used; building from Go modules instead" in out.stdout
    assert "toolchain: pulumi-cli: building ..." in out.stdout
    assert out.returncode == 1 and "toolchain: FAILED:" in out.stdout
    assert not (bin_dir(tmp_path) / "pulumi").exists()


def test_a_binary_that_is_not_the_pin_is_refused(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "archive", fake_binaries(etcd="etcd Version: 3.6.15"))
    out = run(tmp_path, archive=archive)
    assert (
        "toolchain: version mismatch: etcd --version says 'etcd Version: 3.6.15', pinned 3.6.16" in out.stdout
    )
    assert "refusing binaries whose versions differ from the pins" in out.stdout
    assert not (bin_dir(tmp_path) / "etcd").exists()
    assert out.returncode == 1


def test_the_plugin_version_is_asked_over_grpc(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "archive", fake_binaries(**{"pulumi-resource-kubernetes": "4.99.0"}))
    out = run(tmp_path, archive=archive)
    assert (
        "toolchain: version mismatch: pulumi-resource-kubernetes reports '4.99.0' (GetPluginInfo), "
        f"pinned {pins()['K8S_PROVIDER_VERSION'][1:]}"
    ) in out.stdout
    assert out.returncode == 1


def test_an_archive_for_another_key_is_not_used(tmp_path: Path) -> None:
    archive = make_archive(
        tmp_path / "archive", fake_binaries(), name="pulumi-v3.1.0_k8sprov-x_etcd-v3.0.0_kube-v1.0.0"
    )
    assert run(tmp_path, "--has-archive", archive=archive).returncode == 1
    out = run(tmp_path, archive=archive)
    assert "restoring" not in out.stdout and "toolchain: pulumi-cli: building ..." in out.stdout


def test_a_cache_with_other_versions_is_a_failure_not_a_silent_use(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "archive", fake_binaries())
    assert run(tmp_path, archive=archive).returncode == 0
    (bin_dir(tmp_path) / "pulumi").write_text("#!/bin/sh\necho v3.1.0\n")
    out = run(tmp_path, archive=archive)
    assert out.returncode == 1
    assert "version mismatch: pulumi version says 'v3.1.0'" in out.stdout
    assert "holds binaries that are not the pinned versions" in out.stdout
    assert run(tmp_path, "--verify", archive=archive).returncode == 1


# --- a check that cannot run, and CI (never a build) ------------------------------------------------------

# a python without the project's packages (no grpc, no pulumi SDK), as a bare system python3 is
PYTHON_WITHOUT_GRPC = f'#!/bin/sh\nexec {sys.executable} -S "$@"\n'
PYTHON_WITH_GRPC = f'#!/bin/sh\nexec {sys.executable} "$@"\n'
# a go that notes every call: these runs must never get to it
GO_CALLED = '#!/bin/sh\necho "$@" >> "$(dirname "$0")/go.calls"\nexit 1\n'


def go_calls(tmp: Path) -> list[str]:
    calls = tmp / "fakebin" / "go.calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_restore_whose_plugin_check_cannot_run_is_used_and_said_unchecked(tmp_path: Path) -> None:
    """No .venv and a python3 without grpc: the plugin's version cannot be asked, which is no mismatch."""
    archive = make_archive(tmp_path / "archive", fake_binaries())
    out = run(tmp_path, archive=archive, venv=False, python3=PYTHON_WITHOUT_GRPC, go=GO_CALLED)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (
        "toolchain: pulumi-resource-kubernetes: version unchecked: no python here can ask it over gRPC "
        "(needs grpc and the pulumi SDK: make venv)"
    ) in out.stdout
    assert "mismatch" not in out.stdout and "building" not in out.stdout
    assert re.search(r"toolchain: restored in \d+\.\d{3}s", out.stdout)
    assert sorted(p.name for p in bin_dir(tmp_path).iterdir()) == sorted(REQUIRED_BINARIES)
    again = run(tmp_path, archive=archive, venv=False, python3=PYTHON_WITHOUT_GRPC, go=GO_CALLED)
    assert again.returncode == 0 and f"toolchain: cached ({bin_dir(tmp_path)})" in again.stdout
    assert go_calls(tmp_path) == []


def test_without_a_venv_a_python3_that_can_ask_checks_the_plugin(tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "archive", fake_binaries(**{"pulumi-resource-kubernetes": "4.99.0"}))
    out = run(tmp_path, archive=archive, venv=False, python3=PYTHON_WITH_GRPC, ci="true", go=GO_CALLED)
    assert "pulumi-resource-kubernetes reports '4.99.0' (GetPluginInfo)" in out.stdout
    assert "unchecked" not in out.stdout and out.returncode == 1


def test_with_ci_a_missing_toolchain_fails_at_once_naming_it_and_how_to_restore_it(tmp_path: Path) -> None:
    out = run(tmp_path, ci="true", go=GO_CALLED)
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        f"toolchain: FAILED: not building (CI=true): missing in {bin_dir(tmp_path)}: {' '.join(REQUIRED_BINARIES)}",
        f"toolchain: restore it from its prebuilt archive: {key()}.tar.zst.part-* with SHA256SUMS and",
        "  BINARIES.sha256, in a directory named by ML_DIAG_E2E_ARCHIVE or in ../shared/e2e-toolchain beside the",
        f"  checkout (looked in: {tmp_path / 'none'}, {tmp_path / 'repo/../shared/e2e-toolchain'}); "
        "or build it from Go modules (about an hour on two cores):",
        "  dev/e2e/toolchain.sh without CI=true or --no-build",
    ]
    assert go_calls(tmp_path) == []


@pytest.mark.parametrize(("flag", "ci", "why"), [("--no-build", None, "--no-build"), (None, "1", "CI=1")])
def test_a_refused_archive_is_not_followed_by_a_build_where_building_is_off(
    tmp_path: Path, flag: str | None, ci: str | None, why: str
) -> None:
    archive = make_archive(tmp_path / "archive", fake_binaries(etcd="etcd Version: 3.6.15"))
    out = run(tmp_path, *([flag] if flag else []), archive=archive, ci=ci, go=GO_CALLED)
    assert out.returncode == 1
    assert "refusing binaries whose versions differ from the pins" in out.stdout
    assert f"toolchain: FAILED: not building ({why}): missing in {bin_dir(tmp_path)}:" in out.stdout
    assert "building from Go modules instead" not in out.stdout and go_calls(tmp_path) == []


# --- extras (--extra NAME): the same checks, each in a key of its own ------------------------------------


def extra_pins() -> dict[str, str]:
    """name -> MODULE@VERSION, as toolchain.sh's EXTRA_MODULES lists them."""
    found = re.findall(r'^\s+"(\w+)=(\S+)"', SCRIPT.read_text(), re.M)
    p = pins()
    return {
        name: mod.replace("$PULUMI_VERSION", p["PULUMI_VERSION"]).replace("$KUBE_VERSION", p["KUBE_VERSION"])
        for name, mod in found
    }


def fake_extra(name: str, version: str) -> str:
    """A stand-in binary: actionlint, kwok and kube-scheduler report their version themselves (as the real ones
    print it); the others answer the fake `go version -m` below with the build info the Go linker would have
    embedded."""
    module = extra_pins()[name].rsplit("@", 1)[0]
    if name == "actionlint":
        return f"#!/bin/sh\necho '{version}'\necho 'installed by building from source'\n"
    if name == "kwok":
        return f"#!/bin/sh\necho 'kwok version {version} go1.26.8 (linux/amd64)'\n"
    if name == "scheduler":
        return f"#!/bin/sh\necho 'Kubernetes {version}'\n"
    dep = "github.com/pulumi/pulumi/pkg/v3" if name == "sdkgen" else module
    return f"#!/bin/sh\n[ \"$1\" = --buildinfo ] && printf '\\tpath\\t{module}\\n\\tdep\\t{dep}\\t{version}\\th1:x\\n'\n"


def extra_dir(name: str) -> str:
    return f"extra-{name}-{extra_pins()[name].rsplit('@', 1)[1]}"


def make_extra_archive(where: Path, name: str, script: str, corrupt: bool = False) -> Path:
    extras = where / "extras"
    extras.mkdir(parents=True, exist_ok=True)
    exe = Path(extra_pins()[name].rsplit("@", 1)[0]).name
    data = script.encode()
    packed = tar_zst({f"{extra_dir(name)}/bin/{exe}": data})
    file = f"{extra_dir(name)}.tar.zst"
    (extras / file).write_bytes(packed[:-1] + bytes([packed[-1] ^ 1]) if corrupt else packed)
    with (extras / "SHA256SUMS").open("a") as f:
        f.write(f"{hashlib.sha256(packed).hexdigest()}  {file}\n")
    with (extras / "BINARIES.sha256").open("a") as f:
        f.write(f"{hashlib.sha256(data).hexdigest()}  {extra_dir(name)}/bin/{exe}\n")
    return where


def run_extra(tmp: Path, name: str, archive: Path) -> subprocess.CompletedProcess[str]:
    # `go version -m EXE` answered by the stand-in; every other go command fails (no network here)
    go = '#!/bin/sh\n[ "$1 $2" = "version -m" ] && exec "$3" --buildinfo\n' + NO_GO.removeprefix(
        "#!/bin/sh\n"
    )
    return run(tmp, "--extra", name, archive=archive, go=go)


@pytest.mark.parametrize("name", ["actionlint", "yaml", "sdkgen", "kwok", "scheduler"])
def test_an_extra_is_restored_from_its_archive_checked_and_then_cached(tmp_path: Path, name: str) -> None:
    version = extra_pins()[name].rsplit("@", 1)[1]
    archive = make_extra_archive(tmp_path / "archive", name, fake_extra(name, version))
    out = run_extra(tmp_path, name, archive)
    bin_path = tmp_path / "cache" / extra_dir(name) / "bin"
    assert (out.returncode, out.stdout.strip()) == (0, str(bin_path)), out.stderr
    assert f"toolchain: extra {name}: restoring {extra_dir(name)} from {archive / 'extras'}" in out.stderr
    assert re.search(rf"toolchain: extra {name}: restored in \d+\.\d{{3}}s", out.stderr)
    assert "building" not in out.stderr
    assert not list((tmp_path / "cache").glob(".restore-*"))
    again = run_extra(tmp_path, name, archive)
    assert (again.returncode, again.stdout.strip(), again.stderr) == (0, str(bin_path), "")


def test_a_corrupt_extra_archive_falls_back_to_building(tmp_path: Path) -> None:
    archive = make_extra_archive(tmp_path / "archive", "yaml", fake_extra("yaml", "v1.25.0"), corrupt=True)
    out = run_extra(tmp_path, "yaml", archive)
    assert "toolchain: extra yaml: the SHA-256 of extra-yaml-v1.25.0.tar.zst differs from" in out.stderr
    assert (
        "toolchain: extra yaml: the archive could not be used; building from Go modules instead" in out.stderr
    )
    assert (
        "toolchain: extra yaml: building github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml" in out.stderr
    )
    assert out.returncode == 1 and "toolchain: extra yaml: FAILED after" in out.stderr


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("actionlint", "actionlint -version says 'v1.7.11', pinned v1.7.12"),
        ("kwok", "kwok --version says 'kwok version v1.7.11 go1.26.8 (linux/amd64)', pinned v0.8.0"),
        ("scheduler", "kube-scheduler --version says 'Kubernetes v1.7.11', pinned v1.35.4"),
        (
            "yaml",
            "the binary was built from github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml 'v1.7.11'",
        ),
    ],
)
def test_an_extra_of_another_version_is_refused(tmp_path: Path, name: str, message: str) -> None:
    archive = make_extra_archive(tmp_path / "archive", name, fake_extra(name, "v1.7.11"))
    out = run_extra(tmp_path, name, archive)
    assert f"toolchain: extra {name}: version mismatch: {message}" in out.stderr
    assert "building from Go modules instead" in out.stderr and out.returncode == 1


def test_a_cached_extra_of_another_version_is_a_failure_not_a_silent_use(tmp_path: Path) -> None:
    archive = make_extra_archive(tmp_path / "archive", "actionlint", fake_extra("actionlint", "v1.7.12"))
    assert run_extra(tmp_path, "actionlint", archive).returncode == 0
    exe = tmp_path / "cache" / extra_dir("actionlint") / "bin" / "actionlint"
    exe.write_text("#!/bin/sh\necho v1.6.0\n")
    out = run_extra(tmp_path, "actionlint", archive)
    assert out.returncode == 1 and out.stdout == ""
    assert "actionlint -version says 'v1.6.0', pinned v1.7.12" in out.stderr
    assert f"is not the pinned version; remove {exe.parent} and rerun" in out.stderr


def test_a_failing_build_of_a_local_extra_is_a_failure(tmp_path: Path) -> None:
    # its builder runs several commands: the first failure must stop it and fail the extra
    out = run(tmp_path, "--extra", "sdkgen", archive=tmp_path / "none")
    assert out.returncode == 1 and out.stdout == ""
    assert "toolchain: extra sdkgen: FAILED after" in out.stderr


def test_a_failing_build_of_the_scheduler_is_a_failure_and_names_its_package(tmp_path: Path) -> None:
    # built as kube-apiserver is (kube_build): without the module proxy it fails, never passes silently
    out = run(tmp_path, "--extra", "scheduler", archive=tmp_path / "none")
    assert out.returncode == 1 and out.stdout == ""
    assert "toolchain: extra scheduler: building k8s.io/kubernetes/cmd/kube-scheduler@v1.35.4" in out.stderr
    assert "toolchain: extra scheduler: FAILED after" in out.stderr


def test_with_ci_a_missing_extra_fails_at_once_naming_its_archive(tmp_path: Path) -> None:
    out = run(tmp_path, "--extra", "kwok", ci="true", go=GO_CALLED)
    bin_path = tmp_path / "cache" / extra_dir("kwok") / "bin"
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.splitlines() == [
        f"toolchain: extra kwok: FAILED: not building (CI=true): kwok is not in {bin_path}",
        f"toolchain: extra kwok: restore it from the prebuilt archive extras/{extra_dir('kwok')}.tar.zst (with "
        "extras/SHA256SUMS and",
        f"  extras/BINARIES.sha256) under ML_DIAG_E2E_ARCHIVE or ../shared/e2e-toolchain (looked in: {tmp_path / 'none'}, "
        f"{tmp_path / 'repo/../shared/e2e-toolchain'});",
        "  or build it from Go modules: dev/e2e/toolchain.sh --extra kwok without CI=true or --no-build",
    ]
    assert go_calls(tmp_path) == []


def test_ci_restores_every_extra_the_script_knows() -> None:
    ci = (REPO / ".ci/run").read_text()
    line = re.search(r"for extra in ([\w ]+); do", ci)
    assert line is not None
    assert sorted(line.group(1).split()) == sorted(extra_pins())
