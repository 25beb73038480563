"""The server half every loopback fake shares: 127.0.0.1 on a free port, optionally TLS, stopped on exit.

A fake subclasses `LoopbackServer`, lists the HTTP methods it answers in `METHODS` (others get the standard
library's 501) and implements `_handle(handler, method)`; every fake answers with `send` or `send_json`.
"""

from __future__ import annotations

import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self


def send(
    h: BaseHTTPRequestHandler,
    status: int,
    data: bytes,
    content_type: str,
    headers: dict[str, str] | None = None,
) -> None:
    """One whole answer: status, content type and length, any other headers, the body."""
    h.send_response(status)
    h.send_header("Content-Type", content_type)
    h.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        h.send_header(name, value)
    h.end_headers()
    h.wfile.write(data)


def send_json(
    h: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None
) -> None:
    send(h, status, json.dumps(body).encode(), "application/json", headers)


class LoopbackServer:
    METHODS: ClassVar[tuple[str, ...]] = ("GET",)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _tls: bool = False

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"{'https' if self._tls else 'http'}://{host}:{port}"

    def start(self, tls: tuple[str, str] | None = None) -> Self:
        """`tls`: (certificate chain file, key file) to serve HTTPS."""
        fake = self

        def answer(method: str):
            return lambda handler: fake._handle(handler, method)

        methods: dict[str, Any] = {f"do_{m}": answer(m) for m in self.METHODS}
        handler = type("Handler", (BaseHTTPRequestHandler,), {"log_message": lambda *_: None, **methods})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
            self._tls = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
