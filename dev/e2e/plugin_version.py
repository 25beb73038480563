"""Prints the version a provider plugin reports to the engine (ResourceProvider.GetPluginInfo), the same
call the Pulumi CLI makes: start the binary, read the port it prints, ask, stop it.

Usage: python dev/e2e/plugin_version.py BINARY
  exit 1 with the reason when the plugin does not answer; exit 3 when this python cannot ask (no grpc or
  pulumi SDK: a system python without the project's venv), which is not an answer about the plugin
"""

from __future__ import annotations

import subprocess
import sys

CANNOT_ASK = 3

try:
    import grpc
    from google.protobuf import empty_pb2
    from pulumi.runtime.proto import provider_pb2_grpc
except ImportError as missing:
    CANNOT_ASK_REASON: str | None = f"{sys.executable} cannot ask it: {missing}"
else:
    CANNOT_ASK_REASON = None


def plugin_version(binary: str, timeout: float = 30.0) -> str:
    proc = subprocess.Popen([binary], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"{binary} printed {port!r} instead of a port")
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=timeout)
            info = provider_pb2_grpc.ResourceProviderStub(channel).GetPluginInfo(
                empty_pb2.Empty(), timeout=timeout
            )
        return info.version
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    if CANNOT_ASK_REASON is not None:
        print(CANNOT_ASK_REASON, file=sys.stderr)
        return CANNOT_ASK
    try:
        print(plugin_version(argv[0]))
    except (OSError, RuntimeError, grpc.RpcError, grpc.FutureTimeoutError) as exc:
        print(f"no answer from {argv[0]}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
