"""dev/e2e/cert_manager_chart.py (`dev/e2e/toolchain.sh --charts`): cert-manager's release chart assembled from
its Go module as cert-manager's own build assembles it (make/manifests.mk), packaged like `helm package`,
cached beside the toolchain's extras; a module whose sum is not the pin is refused, and without `go` a chart
not cached yet fails at once, naming go.

The modules here are small stand-ins with the real layout, served by a stand-in `go mod download -json`; the
last test packages the real v1.16.5 chart from the Go module proxy."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from dev.e2e import cert_manager_chart as chart
from dev.e2e.harness import REPO
from tests.fixtures.tools import need_command

# the release build's recipe for the CRDs: before v1.15 it wraps the joined sources in installCRDs
RECIPE_WRAPPED = """\
$(BINDIR)/helm/cert-manager/templates/crds.yaml: $(CRDS_SOURCES) | $(BINDIR)/helm/cert-manager/templates
\techo '{{- if .Values.installCRDs }}' > $@
\t./hack/concat-yaml.sh $^ >> $@
\techo '{{- end }}' >> $@

$(BINDIR)/helm/cert-manager/values.yaml: deploy/charts/cert-manager/values.yaml
\tcp $< $@
"""
RECIPE_PLAIN = """\
$(bin_dir)/helm/cert-manager/templates/crds.yaml: $(CRDS_SOURCES) | $(bin_dir)/helm/cert-manager/templates
\t./hack/concat-yaml.sh $^ > $@
"""
CONCAT = '#!/usr/bin/env bash\nwhile (($#)); do cat "$1"; shift; if (($#)); then echo "---"; fi; done\n'
CHART_TEMPLATE = """\
apiVersion: v2
name: cert-manager
annotations:
  artifacthub.io/prerelease: "{{IS_PRERELEASE}}"
# set by the release tool
version: v0.0.0
appVersion: v0.0.0"""


def fake_module(root: Path, recipe: str, schema: bool) -> Path:
    src = root / "deploy/charts/cert-manager"
    (src / "templates").mkdir(parents=True)
    (root / "make").mkdir()
    (root / "hack").mkdir()
    (root / "deploy/crds").mkdir()
    (root / "make/manifests.mk").write_text(recipe)
    (root / "hack/concat-yaml.sh").write_text(CONCAT)
    (root / "deploy/crds/crd-b.yaml").write_text("kind: CustomResourceDefinition\nname: b\n")
    (root / "deploy/crds/crd-a.yaml").write_text("kind: CustomResourceDefinition\nname: a\n")
    (root / "deploy/crds/README.md").write_text("not a CRD\n")
    (src / "Chart.template.yaml").write_text(CHART_TEMPLATE)
    (src / "README.template.md").write_text("helm install --version {{RELEASE_VERSION}}\n")
    (src / "signkey_annotation.txt").write_text("fingerprint: ABC\nurl: https://example.test/key.gpg\n")
    (src / "values.yaml").write_text("replicaCount: 1\n")
    (src / ".helmignore").write_text("Chart.template.yaml\n")
    if schema:
        (src / "values.schema.json").write_text('{"type": "object"}\n')
    for name, text in {
        "deployment.yaml": "kind: Deployment\n",
        "_helpers.tpl": '{{- define "x" }}{{- end }}\n',
        "NOTES.txt": "installed\n",
        "unused.txt": "not part of the chart\n",
    }.items():
        (src / "templates" / name).write_text(text)
    return root


def fake_go(tmp: Path, modules: dict[str, Path], sums: dict[str, str] | None = None) -> Path:
    """A `go` whose `mod download -json MODULE@VERSION` answers as the real one does; every call noted."""
    bin_dir = tmp / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    answers = {
        f"{chart.MODULE}@{v}": {"Version": v, "Dir": str(d), "Sum": (sums or chart.VERSIONS)[v]}
        for v, d in modules.items()
    }
    (bin_dir / "answers.json").write_text(json.dumps(answers))
    (bin_dir / "go").write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys\n"
        "here = pathlib.Path(__file__).parent\n"
        "with open(here / 'calls', 'a') as f: f.write(' '.join(sys.argv[1:]) + '\\n')\n"
        "answers = json.loads((here / 'answers.json').read_text())\n"
        "assert sys.argv[1:4] == ['mod', 'download', '-json']\n"
        "print(json.dumps(answers.get(sys.argv[4], {'Error': 'not served in this test'}), indent='\\t'))\n"
    )
    (bin_dir / "go").chmod(0o755)
    return bin_dir


def path_without_go(first: Path | None = None) -> str:
    dirs = [d for d in os.environ["PATH"].split(os.pathsep) if d and not (Path(d) / "go").exists()]
    return os.pathsep.join([*([str(first)] if first else []), *dirs])


def run_charts(tmp: Path, path: str, ci: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {
        "PATH": path,
        "ML_DIAG_E2E_CACHE": str(tmp / "cache"),
    }
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        ["bash", str(REPO / "dev/e2e/toolchain.sh"), "--charts"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


@pytest.fixture
def modules(tmp_path: Path) -> dict[str, Path]:
    old, new = chart.VERSIONS
    return {
        old: fake_module(tmp_path / "old", RECIPE_WRAPPED, schema=False),
        new: fake_module(tmp_path / "new", RECIPE_PLAIN, schema=True),
    }


def test_the_charts_are_assembled_as_the_release_build_does_and_cached(tmp_path: Path, modules) -> None:
    go = fake_go(tmp_path, modules)
    out = run_charts(tmp_path, path_without_go(go))
    assert out.returncode == 0, out.stderr
    paths = [Path(p) for p in out.stdout.split()]
    assert paths == [
        tmp_path / "cache" / f"chart-cert-manager-{v}" / f"cert-manager-{v}.tgz" for v in chart.VERSIONS
    ]
    assert out.stderr.splitlines() == [
        f"toolchain: charts: cert-manager {v} packaged from {chart.MODULE}@{v}" for v in chart.VERSIONS
    ]
    (old, new) = chart.VERSIONS
    got = members(paths[0])
    assert sorted(got) == [
        "cert-manager/Chart.yaml",
        "cert-manager/README.md",
        "cert-manager/templates/NOTES.txt",
        "cert-manager/templates/_helpers.tpl",
        "cert-manager/templates/crds.yaml",
        "cert-manager/templates/deployment.yaml",
        "cert-manager/values.yaml",
    ]
    # the CRD sources in name order, joined by the module's script, between the recipe's own lines
    assert got["cert-manager/templates/crds.yaml"] == (
        b"{{- if .Values.installCRDs }}\n"
        b"kind: CustomResourceDefinition\nname: a\n---\nkind: CustomResourceDefinition\nname: b\n"
        b"{{- end }}\n"
    )
    assert yaml.safe_load(got["cert-manager/Chart.yaml"]) == {
        "apiVersion": "v2",
        "name": "cert-manager",
        "annotations": {
            "artifacthub.io/signKey": "fingerprint: ABC\nurl: https://example.test/key.gpg\n",
            "artifacthub.io/prerelease": "false",
        },
        "version": old,
        "appVersion": old,
    }
    assert got["cert-manager/README.md"] == f"helm install --version {old}\n".encode()
    newer = members(paths[1])
    assert newer["cert-manager/values.schema.json"] == b'{"type": "object"}\n'
    assert newer["cert-manager/templates/crds.yaml"].startswith(
        b"kind: CustomResourceDefinition\nname: a\n---"
    )
    assert yaml.safe_load(newer["cert-manager/Chart.yaml"])["version"] == new
    # the same bytes on every run; cached afterwards, with no go at all
    first = [p.read_bytes() for p in paths]
    assert chart.package(chart.chart_files(modules[old], old)) == first[0]
    calls = (go / "calls").read_text().splitlines()
    assert calls == [f"mod download -json {chart.MODULE}@{v}" for v in chart.VERSIONS]
    again = run_charts(tmp_path, path_without_go(), ci="true")
    assert (again.returncode, again.stdout.split(), again.stderr) == (0, [str(p) for p in paths], "")
    assert [p.read_bytes() for p in paths] == first


def test_without_go_a_chart_not_cached_fails_at_once_naming_go(tmp_path: Path) -> None:
    out = run_charts(tmp_path, path_without_go(), ci="true")
    version = next(iter(chart.VERSIONS))
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == (
        f"toolchain: charts: FAILED: cert-manager chart {version} is not in "
        f"{tmp_path / 'cache' / f'chart-cert-manager-{version}'} yet, and comes from its Go module "
        f"(go mod download {chart.MODULE}@{version}): go is not on PATH: install Go (1.26) with the Go module "
        "proxy reachable; then rerun dev/e2e/toolchain.sh --charts\n"
    )


def test_a_module_that_is_not_the_pinned_one_is_refused(tmp_path: Path, modules) -> None:
    old = next(iter(chart.VERSIONS))
    go = fake_go(tmp_path, modules, sums={v: "h1:another=" for v in modules})
    out = run_charts(tmp_path, path_without_go(go))
    assert out.returncode == 1
    assert f"the module's sum is 'h1:another=', pinned {chart.VERSIONS[old]}; then rerun" in out.stderr
    assert not (tmp_path / "cache" / f"chart-cert-manager-{old}").exists()


def test_a_recipe_of_another_shape_is_an_error_not_a_guess(tmp_path: Path) -> None:
    module = fake_module(
        tmp_path / "m", RECIPE_PLAIN.replace("./hack/concat-yaml.sh $^ > $@", "yq ea . $^ > $@"), True
    )
    with pytest.raises(
        chart.ChartError, match="unexpected step in the crds.yaml recipe: 'yq ea . \\$\\^ > \\$@'"
    ):
        chart.chart_files(module, "v1.16.5")


def test_a_release_whose_crds_are_chart_templates_takes_them_as_they_are(tmp_path: Path) -> None:
    """From v1.21 the module's chart carries Chart.yaml (version v0.0.0) and its CRDs as templates; the build
    joins no CRD sources."""
    module = fake_module(
        tmp_path / "m", "$(bin_dir)/cert-manager.tgz: $(bin_dir)/helm/cert-manager/Chart.yaml\n", True
    )
    src = module / "deploy/charts/cert-manager"
    (src / "Chart.template.yaml").rename(src / "Chart.yaml")
    (src / "templates/crd-cert-manager.io_issuers.yaml").write_text("kind: CustomResourceDefinition\n")
    files = chart.chart_files(module, "v1.21.2")
    assert "templates/crds.yaml" not in files
    assert files["templates/crd-cert-manager.io_issuers.yaml"] == b"kind: CustomResourceDefinition\n"
    assert yaml.safe_load(files["Chart.yaml"])["version"] == "v1.21.2"
    (src / "templates/crd-cert-manager.io_issuers.yaml").unlink()
    with pytest.raises(chart.ChartError, match="has no recipe for templates/crds.yaml, and no CRD template"):
        chart.chart_files(module, "v1.21.2")


def test_a_broken_cached_archive_is_packaged_again(tmp_path: Path, modules) -> None:
    go = fake_go(tmp_path, modules)
    old = next(iter(chart.VERSIONS))
    broken = chart.archive_path(tmp_path / "cache", old)
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"half an archive")
    out = run_charts(tmp_path, path_without_go(go))
    assert out.returncode == 0, out.stderr
    assert chart.chart_version(broken) == old


def test_the_real_chart_from_the_module_proxy() -> None:
    need_command("go")
    version = "v1.16.5"
    module = chart.download(version)
    files = chart.chart_files(module, version)
    meta = yaml.safe_load(files["Chart.yaml"])
    assert (meta["name"], meta["version"], meta["appVersion"]) == ("cert-manager", version, version)
    schema = json.loads(files["values.schema.json"])
    assert schema["$ref"] == "#/$defs/helm-values"
    crds = [d for d in yaml.safe_load_all(io.StringIO(files["templates/crds.yaml"].decode())) if d]
    assert tuple(sorted(d["metadata"]["name"] for d in crds)) == chart.CRDS
    assert "templates/startupapicheck-job.yaml" in files
