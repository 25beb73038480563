"""The real cert-manager chart for the e2e tier, packaged from cert-manager's Go module.

The Go module proxy serves `github.com/cert-manager/cert-manager` with the chart's source in
`deploy/charts/cert-manager/`. A release's chart is not that directory as it is: cert-manager's own build
(`make/manifests.mk` of the same module) assembles it, and this does the same, reading that recipe:
- `templates/*.yaml`, `templates/_helpers.tpl`, `templates/NOTES.txt`, `values.yaml` and (from v1.16.0)
  `values.schema.json`, copied;
- `templates/crds.yaml`: the CRD sources `deploy/crds/*.yaml` joined by the module's `hack/concat-yaml.sh`,
  between the lines the recipe echoes around them (before v1.15 `{{- if .Values.installCRDs }}` ...
  `{{- end }}`; later sources carry their own condition); where the recipe has no such step (v1.21: the
  CRDs are the chart's own `templates/crd-*.yaml`), nothing;
- `README.md` from `README.template.md` with the release version;
- `Chart.yaml` from `Chart.template.yaml` (from v1.21 `Chart.yaml`, version v0.0.0) with `version` and
  `appVersion` set to the release version, as `helm package --version --app-version` sets them, and the
  release annotations (`artifacthub.io/prerelease: "false"`, the signing key).
Then packaged as `helm package` lays a chart archive out (`cert-manager/...`), byte for byte the same on
every run (sorted members, no timestamps), into `<cache root>/chart-cert-manager-<version>/`, beside the
toolchain's extras (dev/e2e/toolchain.sh --charts runs this). The e2e chart repository (chart_repo.py)
serves the archives.

A module whose `go mod download` sum is not the pinned one is refused. Without `go` on PATH a chart that is
not cached is a failure naming what to install, at once (CI included: nothing is built, only downloaded).

Standard library only: toolchain.sh runs it with whatever python3 the machine has (no .venv needed).

    python3 dev/e2e/cert_manager_chart.py [--cache-root DIR]   # prints each archive's path, one a line
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

MODULE = "github.com/cert-manager/cert-manager"
# version -> the module's hash (`go mod download -json`'s Sum, as go.sum records it). v1.13.0 is the
# vendor's (the docs' install command); v1.16.5 a release with values.schema.json, for the upgrade test.
VERSIONS = {
    "v1.13.0": "h1:P9rWfCgzr2wjpQcZtG5iWdQsOJgpHNwR2WyUNDfs47w=",
    "v1.16.5": "h1:XIhKoS4zQV9RHXAkqQW0NLivvoxAnWzbPsy9BG6cPVc=",
}
CHART = "cert-manager"
# The CustomResourceDefinitions the chart installs (its module's deploy/crds/), by name.
CRDS = (
    "certificaterequests.cert-manager.io",
    "certificates.cert-manager.io",
    "challenges.acme.cert-manager.io",
    "clusterissuers.cert-manager.io",
    "issuers.cert-manager.io",
    "orders.acme.cert-manager.io",
)
CHART_SOURCE = "deploy/charts/cert-manager"
SIGNKEY_INDENT = "    "


class ChartError(Exception):
    """Why a chart could not be provided; printed as is (no traceback)."""


def default_cache_root() -> Path:
    return Path(os.environ.get("ML_DIAG_E2E_CACHE") or Path.home() / ".cache" / "ml-diagnostics-e2e")


def archive_path(cache_root: Path, version: str) -> Path:
    return cache_root / f"chart-{CHART}-{version}" / f"{CHART}-{version}.tgz"


# -- the module ------------------------------------------------------------------------------------------


def go_download(versions: list[str]) -> dict[str, dict[str, str]]:
    """version -> `go mod download -json`'s answer for MODULE@version (Dir, Sum, ...), every version in one
    call (downloaded through the proxy unless in Go's module cache); a version go could not get is an error."""
    exe = shutil.which("go")
    if exe is None:
        raise ChartError("go is not on PATH: install Go (1.26) with the Go module proxy reachable")
    # outside any module, so no go.mod around decides anything
    run = subprocess.run(
        [exe, "mod", "download", "-json", *(f"{MODULE}@{v}" for v in versions)],
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=False,
    )
    answers: dict[str, dict[str, str]] = {}
    decoder, text = json.JSONDecoder(), run.stdout
    pos = 0
    while text[pos:].strip():
        pos += len(text[pos:]) - len(text[pos:].lstrip())
        try:
            info, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        answers[info.get("Version", "")] = info
    for v in versions:
        info = answers.get(v, {})
        if info.get("Error") or not info.get("Dir"):
            reason = info.get("Error") or (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[-1]
            raise ChartError(f"go mod download {MODULE}@{v} failed: {reason}")
    return answers


def download(version: str) -> Path:
    """The module's directory in Go's module cache, its sum the pinned one."""
    info = go_download([version])[version]
    if info.get("Sum") != VERSIONS[version]:
        raise ChartError(f"the module's sum is {info.get('Sum')!r}, pinned {VERSIONS[version]}")
    return Path(info["Dir"])


def crds_recipe(module: Path) -> tuple[list[str], list[str]] | None:
    """The lines the release build echoes before and after the joined CRD sources (make/manifests.mk), or
    None where the chart's own templates are the CRDs (later releases: `templates/crd-*.yaml`)."""
    text = (module / "make" / "manifests.mk").read_text()
    rule = re.search(r"^\S*/helm/cert-manager/templates/crds\.yaml:.*\n((?:\t.*\n?)+)", text, re.M)
    if rule is None:
        if list((module / CHART_SOURCE / "templates").glob("crd-*.yaml")):
            return None
        raise ChartError(
            f"{module}/make/manifests.mk has no recipe for templates/crds.yaml, and no CRD template"
        )
    before: list[str] = []
    after: list[str] = []
    joined = False
    for line in rule.group(1).splitlines():
        cmd = line.strip()
        if m := re.fullmatch(r"echo '(.*)' >>? \$@", cmd):
            (after if joined else before).append(m.group(1))
        elif re.fullmatch(r"\./hack/concat-yaml\.sh \$\^ >>? \$@", cmd):
            joined = True
        else:
            raise ChartError(f"make/manifests.mk: unexpected step in the crds.yaml recipe: {cmd!r}")
    if not joined:
        raise ChartError("make/manifests.mk: the crds.yaml recipe does not join the CRD sources")
    return before, after


def crds_yaml(module: Path) -> bytes | None:
    recipe = crds_recipe(module)
    if recipe is None:
        return None
    before, after = recipe
    sources = sorted(str(p.relative_to(module)) for p in (module / "deploy" / "crds").glob("*.yaml"))
    joined = subprocess.run(
        ["bash", "hack/concat-yaml.sh", *sources], cwd=module, capture_output=True, check=True
    ).stdout
    head = "".join(f"{line}\n" for line in before).encode()
    tail = "".join(f"{line}\n" for line in after).encode()
    return head + joined + tail


def chart_yaml(source: str, version: str, signkey: str | None) -> str:
    """Chart.yaml of the release: version and appVersion set, the release's annotations."""
    lines = [ln for ln in source.splitlines() if not re.match(r"(version|appVersion):", ln)]
    text = "\n".join(lines).replace("{{IS_PRERELEASE}}", "false").rstrip("\n") + "\n"
    if signkey is not None:
        block = "".join(f"{SIGNKEY_INDENT}{ln}\n" for ln in signkey.rstrip("\n").splitlines())
        text = re.sub(
            r"^annotations:\n",
            lambda m: f"{m.group(0)}  artifacthub.io/signKey: |\n{block}",
            text,
            flags=re.M,
        )
    return f"{text}version: {version}\nappVersion: {version}\n"


def chart_files(module: Path, version: str) -> dict[str, bytes]:
    """The release chart's files (paths inside the chart directory)."""
    src = module / CHART_SOURCE
    files: dict[str, bytes] = {}
    for path in sorted((src / "templates").glob("*.yaml")):
        files[f"templates/{path.name}"] = path.read_bytes()
    for name in ("_helpers.tpl", "NOTES.txt"):
        files[f"templates/{name}"] = (src / "templates" / name).read_bytes()
    if (crds := crds_yaml(module)) is not None:
        files["templates/crds.yaml"] = crds
    files["values.yaml"] = (src / "values.yaml").read_bytes()
    if (src / "values.schema.json").is_file():
        files["values.schema.json"] = (src / "values.schema.json").read_bytes()
    readme = src / "README.template.md"
    if readme.is_file():
        files["README.md"] = readme.read_text().replace("{{RELEASE_VERSION}}", version).encode()
    template = src / "Chart.template.yaml"
    signkey = src / "signkey_annotation.txt"
    files["Chart.yaml"] = chart_yaml(
        (template if template.is_file() else src / "Chart.yaml").read_text(),
        version,
        signkey.read_text() if signkey.is_file() else None,
    ).encode()
    return files


def package(files: dict[str, bytes], name: str = CHART) -> bytes:
    """A chart archive as `helm package` lays it out, the same bytes on every run."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            info = tarfile.TarInfo(f"{name}/{path}")
            info.size, info.mode, info.mtime = len(files[path]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[path]))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def chart_version(archive: Path) -> str | None:
    """The version in an archive's Chart.yaml, or None when it is not a readable chart archive."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            member = tar.extractfile(f"{CHART}/Chart.yaml")
            text = member.read().decode() if member else ""
    except (OSError, tarfile.TarError, KeyError, EOFError):
        return None
    found = re.search(r"^version: (\S+)$", text, re.M)
    return found.group(1) if found else None


def provide(cache_root: Path, version: str) -> tuple[Path, bool]:
    """The archive of `version` (packaged now unless cached) and whether it was cached."""
    path = archive_path(cache_root, version)
    if path.is_file() and chart_version(path) == version:
        return path, True
    try:
        module = download(version)
    except ChartError as e:
        raise ChartError(
            f"cert-manager chart {version} is not in {path.parent} yet, and comes from its Go module "
            f"(go mod download {MODULE}@{version}): {e}; then rerun dev/e2e/toolchain.sh --charts"
        ) from None
    data = package(chart_files(module, version))
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    scratch.write_bytes(data)
    os.replace(scratch, path)
    return path, False


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--cache-root", type=Path, default=None)
    args = parser.parse_args(argv)
    root = args.cache_root or default_cache_root()
    for version in VERSIONS:
        try:
            path, cached = provide(root, version)
        except (ChartError, OSError, subprocess.CalledProcessError) as e:
            print(f"toolchain: charts: FAILED: {e}", file=sys.stderr)
            return 1
        if not cached:
            print(
                f"toolchain: charts: cert-manager {version} packaged from {MODULE}@{version}", file=sys.stderr
            )
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
