"""A Helm chart repository on 127.0.0.1 serving the test charts of tests/charts/ and chart archives
packaged elsewhere (the real cert-manager chart: dev/e2e/cert_manager_chart.py, `toolchain.sh --charts`).

Each chart directory is packaged the way `helm package` lays an archive out (`<name>/Chart.yaml`, ...),
and `index.yaml` lists every chart with its digest. The program's releases then install through the same
code path as from the vendor repositories (`repositoryOpts.repo` + chart name + version).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
from collections.abc import Sequence
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import TemporaryDirectory

import yaml

CHARTS_DIR = Path(__file__).resolve().parents[2] / "tests" / "charts"


def package(chart_dir: Path) -> tuple[dict, bytes]:
    """(Chart.yaml metadata, .tgz bytes), deterministic (fixed mtimes, sorted members)."""
    meta = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for path in sorted(p for p in chart_dir.rglob("*") if p.is_file()):
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{meta['name']}/{path.relative_to(chart_dir).as_posix()}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return meta, buf.getvalue()


def archive_meta(archive: bytes) -> dict:
    """The Chart.yaml of a chart archive (`<name>/Chart.yaml`)."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        member = next(
            m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")
        )
        data = tar.extractfile(member)
        assert data is not None
        return yaml.safe_load(data.read())


class ChartRepo:
    """`with ChartRepo(archives=[...]) as repo:` -> repo.url (http://127.0.0.1:PORT/charts): the chart
    directories of `charts_dir` and the chart archives given."""

    def __init__(self, charts_dir: Path = CHARTS_DIR, archives: Sequence[Path] = ()) -> None:
        self.charts_dir = charts_dir
        self.archives = list(archives)
        self._tmp: TemporaryDirectory[str] | None = None
        self._server: ThreadingHTTPServer | None = None
        self.requests: list[str] = []

    def __enter__(self) -> ChartRepo:
        self._tmp = TemporaryDirectory(prefix="mldiag-charts-")
        root = Path(self._tmp.name)
        (root / "charts").mkdir()
        repo = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, fmt: str, *args: object) -> None:
                repo.requests.append(self.path)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
        self._server.daemon_threads = True
        entries: dict[str, list[dict]] = {}
        packaged = [package(d) for d in sorted(self.charts_dir.iterdir()) if (d / "Chart.yaml").is_file()]
        packaged += [(archive_meta(tgz), tgz) for tgz in (a.read_bytes() for a in self.archives)]
        for meta, tgz in packaged:
            archive = f"{meta['name']}-{meta['version']}.tgz"
            (root / "charts" / archive).write_bytes(tgz)
            entries.setdefault(meta["name"], []).append(
                {
                    **meta,
                    "urls": [f"{self.url}/{archive}"],
                    "digest": hashlib.sha256(tgz).hexdigest(),
                    "created": "2026-01-01T00:00:00Z",
                }
            )
        index = {"apiVersion": "v1", "entries": entries, "generated": "2026-01-01T00:00:00Z"}
        (root / "charts" / "index.yaml").write_text(yaml.safe_dump(index))
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        ).start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/charts"

    def __exit__(self, *exc: object) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
        if self._tmp:
            self._tmp.cleanup()
