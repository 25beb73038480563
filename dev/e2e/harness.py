"""The e2e harness: a scratch copy of the program driven by the real Pulumi CLI.

`Project` copies the program (Pulumi.yaml, __main__.py, components/, program/, policies/) into a temporary
directory with `.venv` pointing at the repository's virtualenv, logs the CLI into a local file backend
there, and runs `pulumi` with:
- PATH: the toolchain cache's binaries (CLI, Kubernetes provider plugin, the Python dynamic provider
  script), a wrapper that starts dev/e2e/language_host.py as `pulumi-language-python`, and the stand-ins
  an adopted GKE cluster needs (`pulumi-resource-gcp`: dev/e2e/gcp_provider.py; `gke-gcloud-auth-plugin`);
- PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true (nothing is downloaded; plugins come from PATH);
- its own PULUMI_HOME and PULUMI_CONFIG_PASSPHRASE (secrets are really encrypted and decrypted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from program import stack_file

REPO = Path(__file__).resolve().parents[2]
PROJECT = "ml-diagnostics"
PASSPHRASE = "e2e-only-passphrase"
REQUIRED_BINARIES = (
    "pulumi",
    "pulumi-resource-kubernetes",
    "pulumi-resource-pulumi-python",
    "pulumi-language-python-exec",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
)


def toolchain_bin() -> Path:
    out = subprocess.run(
        ["bash", str(REPO / "dev/e2e/toolchain.sh"), "--print-bin"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip())


def missing_binaries(bin_dir: Path) -> list[str]:
    return [b for b in REQUIRED_BINARIES if not os.access(bin_dir / b, os.X_OK)]


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


class PulumiError(AssertionError):
    pass


PROGRAM_FILES = ("Pulumi.yaml", "__main__.py", "requirements.txt")
PROGRAM_DIRS = ("components", "program", "policies")


def export_commit(commit: str, dest: Path) -> Path:
    """The repository's tree at `commit` (e.g. the previous version), as files under `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


class Project:
    def __init__(self, root: Path, bin_dir: Path, source: Path = REPO) -> None:
        self.root = root
        self.bin_dir = bin_dir
        self.log: list[Result] = []
        venv = (REPO / ".venv").resolve()
        self.use_program(source)
        (root / "stacks").mkdir()
        (root / ".venv").symlink_to(venv)
        wrappers = root / ".e2e-bin"
        wrappers.mkdir()
        host = wrappers / "pulumi-language-python"
        host.write_text(f'#!/bin/sh\nexec "{venv}/bin/python" "{REPO}/dev/e2e/language_host.py" "$@"\n')
        host.chmod(0o755)
        # Stand-ins for an adopted GKE cluster (dev/e2e/gcp_provider.py): the gcp plugin's getCluster against
        # the GKE fake, and the auth plugin of the GKE kubeconfig answering with the control plane's token.
        gcp = wrappers / "pulumi-resource-gcp"
        gcp.write_text(f'#!/bin/sh\nexec "{venv}/bin/python" "{REPO}/dev/e2e/gcp_provider.py" "$@"\n')
        auth = wrappers / "gke-gcloud-auth-plugin"
        auth.write_text(
            '#!/bin/sh\nprintf \'{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/'
            'v1beta1","status":{"token":"%s"}}\\n\' "$MLDIAG_E2E_KUBE_TOKEN"\n'
        )
        for script in (gcp, auth):
            script.chmod(0o755)
        # The CLI looks for its bundled plugins (language host, Python dynamic provider) next to its own
        # executable, and warns when it takes them from PATH: so the CLI runs from here too (hard links).
        for name in ("pulumi", "pulumi-resource-pulumi-python"):
            try:
                os.link(bin_dir / name, wrappers / name)
            except OSError:
                shutil.copy2(bin_dir / name, wrappers / name)
        self.cli = wrappers / "pulumi"
        # The Kubernetes provider writes the stack's kubeconfig to a temporary file it never removes: each
        # run's temporary files go beside the project (not in it, where tests look for stack files), and with it.
        scratch = root.with_name(root.name + ".tmp")
        scratch.mkdir(exist_ok=True)
        self.env = {
            **os.environ,
            "PATH": os.pathsep.join([str(wrappers), str(bin_dir), os.environ.get("PATH", "")]),
            "PULUMI_HOME": str(root / ".pulumi-home"),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_E2E_EXEC_SCRIPT": str(bin_dir / "pulumi-language-python-exec"),
            "PULUMI_PYTHON_CMD": str(venv / "bin" / "python"),
            "KUBECONFIG": os.devnull,  # only the stack's kubeconfig may be used
            "NO_COLOR": "1",
            "TMPDIR": str(scratch),
        }
        for var in ("PULUMI_ACCESS_TOKEN", "PULUMI_BACKEND_URL", "GOOGLE_APPLICATION_CREDENTIALS"):
            self.env.pop(var, None)
        (root / "state").mkdir()
        self.pulumi("login", f"file://{root / 'state'}")

    def use_program(self, source: Path) -> None:
        """The program files of `source` (this repository, or an earlier version's tree) replace the copy's."""
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "venv", "*.egg-info")
        for name in PROGRAM_FILES:
            shutil.copy2(source / name, self.root / name)
        for name in PROGRAM_DIRS:
            shutil.rmtree(self.root / name, ignore_errors=True)
            if (source / name).is_dir():
                shutil.copytree(source / name, self.root / name, ignore=ignore)

    # -- running the CLI ------------------------------------------------------------------------------------
    def pulumi(
        self,
        *args: str,
        check: bool = True,
        timeout: float = 600,
        stack: str | None = None,
        cwd: Path | None = None,
    ) -> Result:
        """The CLI in this project (`cwd`: in another program of the same backend, `program()`)."""
        flags = ["--non-interactive", *(["--stack", stack] if stack else [])]
        split = args.index("--") if "--" in args else len(args)  # flags go before a `--`
        argv = [str(self.cli), *args[:split], *flags, *args[split:]]
        t0 = time.monotonic()
        proc = subprocess.run(
            argv,
            cwd=cwd or self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        res = Result(argv[1:], proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)
        self.log.append(res)
        if check and proc.returncode != 0:
            raise PulumiError(
                f"pulumi {' '.join(args)} exited {proc.returncode} after {res.seconds:.1f}s\n"
                f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-4000:]}"
            )
        return res

    def program(self, folder: str, name: str, text: str) -> Path:
        """A small Python program of its own beside the project's (`name` in its Pulumi.yaml, `text` its
        __main__.py, the repository's virtualenv), on the same CLI and backend: run it with `pulumi(cwd=...)`."""
        program = self.root.with_name(f"{self.root.name}-{folder}")
        program.mkdir()
        (program / "Pulumi.yaml").write_text(
            f"name: {name}\nruntime:\n  name: python\n  options:\n    virtualenv: venv\n"
        )
        (program / "__main__.py").write_text(text)
        (program / "venv").symlink_to((REPO / ".venv").resolve())
        return program

    def verify_stack(self, stack: str, program: Path, *args: str) -> tuple[int, dict[str, Any], str]:
        """`mldiag verify --stack STACK --format json` (exit code, report, stderr), as a user runs it."""
        argv = [sys.executable, "-m", "mldiag", "verify", "--stack", stack, "--project", str(program)]
        run = subprocess.run(
            [*argv, "--format", "json", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return run.returncode, (json.loads(run.stdout) if run.stdout.strip() else {}), run.stderr

    # -- stacks -----------------------------------------------------------------------------------------------
    def stack_file(self, stack: str) -> Path:
        return self.root / "stacks" / f"Pulumi.{stack}.yaml"

    def init_stack(self, stack: str, config: dict[str, Any], secrets: dict[str, str] | None = None) -> None:
        """`pulumi stack init` (passphrase secrets), then the config, then each secret via `config set --secret`."""
        self.pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
        self.set_config(stack, config)
        for path, value in (secrets or {}).items():
            self.pulumi("config", "set", "--secret", "--path", f"{PROJECT}:{path}", "--", value, stack=stack)

    def set_config(self, stack: str, config: dict[str, Any]) -> None:
        """Replaces the plain config keys given (as `ml-diagnostics:<key>`), keeping the salt and secrets."""
        path = self.stack_file(stack)
        doc = stack_file.read_document(path)
        cfg = doc.setdefault("config", {})
        for key, value in config.items():
            old = cfg.get(f"{PROJECT}:{key}")
            cfg[f"{PROJECT}:{key}"] = _keep_secure(old, value)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))

    def config(self, stack: str) -> dict[str, Any]:
        doc = stack_file.read_document(self.stack_file(stack))
        return {k.split(":", 1)[1]: v for k, v in doc.get("config", {}).items()}


def _keep_secure(old: Any, new: Any) -> Any:
    """Deep-merges `new` over `old` where `old` holds `{secure: ...}` values `new` does not mention."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(new)
        for k, v in old.items():
            if k not in out and _has_secure(v):
                out[k] = v
            elif k in out:
                out[k] = _keep_secure(v, out[k])
        return out
    if isinstance(old, list) and isinstance(new, list):
        return [_keep_secure(o, n) for o, n in zip(old, new, strict=False)] + new[len(old) :]
    return new


def _has_secure(v: Any) -> bool:
    if isinstance(v, dict):
        return "secure" in v or any(_has_secure(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_secure(x) for x in v)
    return False
