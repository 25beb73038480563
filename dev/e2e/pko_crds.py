"""The Pulumi Kubernetes Operator's CRDs (v2.9.0) for the e2e tier, kept in the toolchain's cache.

The operator's Go module is not served here, so its CRDs come as files from outside the repository:
ML_DIAG_PKO_CRDS (a directory), else `../shared/pko/v2.9.0` beside the checkout. Each file must have the
pinned SHA-256 below (a file of another release is refused, naming it). They are copied into
`<cache root>/pko-crds-v2.9.0/`, beside the toolchain's other extras, so a checkout anywhere on the machine
finds them there afterwards.

Standard library only: toolchain.sh runs it with whatever python3 the machine has (no .venv needed).

    python3 dev/e2e/pko_crds.py [--cache-root DIR]   # prints the directory holding them
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

VERSION = "v2.9.0"
# The release's config/crd/bases, as its SHA256SUMS lists them.
SUMS = {
    "auto.pulumi.com_updates.yaml": "13bcbdc4bb2b55208768aadd42f4b81eaca2f4aa4dd01d14b7cfd51d8d5f83a2",
    "auto.pulumi.com_workspaces.yaml": "c3fb776a09544f555d2c650d32c1b13da816ec4500179fc6d9e3235d44945a9b",
    "pulumi.com_programs.yaml": "40b73414f3fb84d5402f5f7883013cc49e397bea861a0231b3979725c36b425a",
    "pulumi.com_stacks.yaml": "d8ce0513bb77d5d57753e521fd42e87a87bdaf7abda1be2584aa23c1c03ea290",
}
REPO = Path(__file__).resolve().parents[2]


class CrdsError(Exception):
    pass


def default_cache_root() -> Path:
    return Path(os.environ.get("ML_DIAG_E2E_CACHE") or Path.home() / ".cache" / "ml-diagnostics-e2e")


def default_sources() -> list[Path]:
    named = os.environ.get("ML_DIAG_PKO_CRDS")
    return [Path(named)] if named else [REPO.parent / "shared" / "pko" / VERSION]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _wrong(directory: Path) -> list[str]:
    """The pinned files missing from `directory` or of other content."""
    return [n for n, s in SUMS.items() if not (directory / n).is_file() or _sha256(directory / n) != s]


def provide(cache_root: Path, sources: list[Path]) -> tuple[Path, bool]:
    """The cached directory of the CRDs, and whether it was cached before; else copied from the first source
    that has them."""
    dest = cache_root / f"pko-crds-{VERSION}"
    if dest.is_dir() and not _wrong(dest):
        return dest, True
    for src in sources:
        if not (src / "pulumi.com_stacks.yaml").is_file():
            continue
        wrong = _wrong(src)
        if wrong:
            raise CrdsError(
                f"{src}: {', '.join(wrong)}: missing or not the operator's {VERSION} files (SHA-256)"
            )
        cache_root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".pko-crds-", dir=cache_root))
        for name in [*SUMS, "LICENSE"]:
            if (src / name).is_file():
                shutil.copyfile(src / name, scratch / name)
        shutil.rmtree(dest, ignore_errors=True)
        scratch.rename(dest)
        return dest, False
    looked = ", ".join(str(s) for s in sources)
    raise CrdsError(
        f"the Pulumi Kubernetes Operator's {VERSION} CRDs are not cached in {dest} nor in {looked}: "
        "set ML_DIAG_PKO_CRDS to a directory holding them (the release's config/crd/bases)"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--cache-root", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        path, cached = provide(args.cache_root or default_cache_root(), default_sources())
    except (CrdsError, OSError) as e:
        print(f"toolchain: pko-crds: FAILED: {e}", file=sys.stderr)
        return 1
    if not cached:
        print(f"toolchain: pko-crds: the operator's {VERSION} CRDs cached in {path}", file=sys.stderr)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
