"""A Python language host (`pulumi-language-python`) for the e2e tier.

The CLI talks to a language host over the LanguageRuntime gRPC service to run the program (`Run`) and to
start Python plugins such as the policy pack (`RunPlugin`). The upstream host is a Go module the module
proxy does not serve (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3 answers 403), so
this one implements the calls the CLI makes for a pip-toolchain project with a prebuilt virtualenv. It runs
the program through `pulumi-language-python-exec`, the script the sdk/v3 module ships for exactly this.

Started by the CLI as `pulumi-language-python [flags] ENGINE_ADDRESS`; prints its port, then serves.
Environment: PULUMI_E2E_EXEC_SCRIPT, the path of `pulumi-language-python-exec`.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from importlib import metadata
from pathlib import Path

from google.protobuf import empty_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

if not __package__:  # started as a script by the CLI (through a wrapper on PATH): make `dev` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from dev.e2e.plugin_server import serve  # noqa: E402

# Exit code of a Python program whose error the SDK already reported to the engine.
_BAIL_EXIT_CODE = 32


def _python(info: language_pb2.ProgramInfo) -> str:
    """The virtualenv's python named by the project's runtime options (relative to its root)."""
    opts = dict(info.options.items()) if info.HasField("options") else {}
    venv = opts.get("virtualenv")
    if not venv:
        return sys.executable
    path = Path(venv)
    if not path.is_absolute():
        path = Path(info.root_directory) / path
    return str(path / "bin" / "python")


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine_address: str) -> None:
        self.engine_address = engine_address

    def Handshake(self, request, context):  # noqa: N802
        if request.engine_address:
            self.engine_address = request.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request, context):  # noqa: N802
        return plugin_pb2.PluginInfo(version=metadata.version("pulumi"))

    def GetRequiredPlugins(self, request, context):  # noqa: N802
        # Plugins are on PATH (ambient); the engine loads them as resources ask for them.
        return language_pb2.GetRequiredPluginsResponse()

    def GetRequiredPackages(self, request, context):  # noqa: N802
        return language_pb2.GetRequiredPackagesResponse()

    def InstallDependencies(self, request, context):  # noqa: N802
        return iter(())  # the virtualenv is prepared by `make venv`

    def RuntimeOptionsPrompts(self, request, context):  # noqa: N802
        return language_pb2.RuntimeOptionsResponse()

    def About(self, request, context):  # noqa: N802
        return language_pb2.AboutResponse(executable=sys.executable, version=sys.version.split()[0])

    def GetProgramDependencies(self, request, context):  # noqa: N802
        deps = [
            language_pb2.DependencyInfo(name=d.metadata["Name"], version=d.version)
            for d in metadata.distributions()
            if d.metadata["Name"].lower().replace("_", "-")
            in ("pulumi", "pulumi-kubernetes", "pulumi-policy")
        ]
        return language_pb2.GetProgramDependenciesResponse(dependencies=deps)

    def Run(self, request, context):  # noqa: N802
        info = request.info
        program = os.path.join(info.program_directory, info.entry_point or ".")
        args = [
            _python(info),
            "-u",
            os.environ["PULUMI_E2E_EXEC_SCRIPT"],
            f"--monitor={request.monitor_address}",
            f"--engine={self.engine_address}",
            f"--project={request.project}",
            f"--root_directory={info.root_directory}",
            f"--stack={request.stack}",
            f"--pwd={request.pwd}",
            f"--dry_run={'true' if request.dryRun else 'false'}",
            f"--parallel={request.parallel}",
            f"--organization={request.organization}",
            program,
            *request.args,
        ]
        env = dict(os.environ)
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        # Program output goes to this host's stdout/stderr, which the CLI shows.
        code = subprocess.run(args, env=env, cwd=request.pwd or None, check=False).returncode
        if code == 0:
            return language_pb2.RunResponse()
        if code == _BAIL_EXIT_CODE:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"Program exited with non-zero exit code: {code}")

    def RunPlugin(self, request, context):  # noqa: N802
        """Runs a Python plugin directory (the policy pack) as `python DIR ARGS`, streaming its output."""
        env = dict(os.environ)
        env.update(kv.split("=", 1) for kv in request.env if "=" in kv)
        proc = subprocess.Popen(
            [_python(request.info), request.info.program_directory, *request.args],
            cwd=request.pwd or None,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out: queue.Queue[language_pb2.RunPluginResponse | None] = queue.Queue()

        def pump(stream, field: str) -> None:
            for chunk in iter(lambda: stream.read1(65536), b""):
                out.put(language_pb2.RunPluginResponse(**{field: chunk}))
            out.put(None)

        pumps = [
            threading.Thread(target=pump, args=(proc.stdout, "stdout"), daemon=True),
            threading.Thread(target=pump, args=(proc.stderr, "stderr"), daemon=True),
        ]
        for t in pumps:
            t.start()
        context.add_callback(proc.kill)
        open_streams = len(pumps)
        while open_streams:
            item = out.get()
            if item is None:
                open_streams -= 1
            else:
                yield item
        yield language_pb2.RunPluginResponse(exitcode=proc.wait())

    def Cancel(self, request, context):  # noqa: N802
        return empty_pb2.Empty()


def main(argv: list[str]) -> None:
    engine = next((a for a in reversed(argv) if not a.startswith("-")), "")
    serve(
        lambda server: language_pb2_grpc.add_LanguageRuntimeServicer_to_server(LanguageHost(engine), server)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
