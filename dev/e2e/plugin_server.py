"""How the e2e stand-in plugins serve: gRPC on a free 127.0.0.1 port, printed on stdout for the CLI to read,
stopped quietly when the CLI interrupts its plugins at the end (as the real plugins do)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from concurrent import futures

import grpc


def serve(register: Callable[[grpc.Server], None], workers: int = 8) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    register(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: server.stop(grace=None))
    print(port, flush=True)
    server.wait_for_termination()
