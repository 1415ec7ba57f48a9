"""A real HTTP endpoint on loopback for tests of webhook alerts and OpenLineage's HTTP transport.

Why a real server rather than a mocked client: the code under test posts with its own HTTP
client (and its own timeouts, retries and headers), and a test should see what went over the
wire. Only the standard library: a `ThreadingHTTPServer` on 127.0.0.1, port 0, so parallel tests
never collide on a port.

Modes: "ok" answers 200 `{}`; "error" answers 500; "hang" records the request and answers
nothing until the receiver closes, to prove a sender's timeout. Every request is recorded before
it is answered, and `wait_for` waits on a condition with a deadline, so no test sleeps.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("ok", "error", "hang")
# A hanging handler waits for the receiver to close; this bounds it even if a test leaks one.
HANG_LIMIT = 300.0


class Headers(dict[str, str]):
    """Request headers with lower-case keys, looked up in any case (HTTP header names are)."""

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


@dataclass(frozen=True)
class Received:
    """One request as it arrived: `body` is the raw bytes, as sent (possibly gzip-encoded)."""

    method: str
    path: str
    headers: Headers
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON, decompressed first if it came `Content-Encoding: gzip`."""
        gzipped = self.headers.get("content-encoding", "").lower() == "gzip"
        return json.loads(gzip.decompress(self.body) if gzipped else self.body)


@dataclass
class Receiver:
    """What the `receiver` context yields: its `url`, the `requests` recorded so far, in order."""

    url: str
    mode: str
    requests: list[Received] = field(default_factory=list)
    _arrived: threading.Condition = field(default_factory=threading.Condition)
    _release: threading.Event = field(default_factory=threading.Event)

    def _record(self, request: Received) -> None:
        with self._arrived:
            self.requests.append(request)
            self._arrived.notify_all()

    def wait_for(self, n: int, timeout: float = 30) -> list[Received]:
        """Wait until at least `n` requests have arrived and return a copy of them all; raise
        `AssertionError` saying how many did arrive if `timeout` seconds pass first."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= n, timeout):
                paths = [r.path for r in self.requests]
                raise AssertionError(f"expected {n} request(s) within {timeout}s, {len(paths)} arrived: {paths}")
            return list(self.requests)


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The body by Content-Length, or chunk by chunk (a streaming client sends no length)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while size := int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()  # the CRLF after each chunk
        while handler.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers, then the blank line
            pass
        return b"".join(chunks)
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


def _handler(state: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            headers = Headers((k.lower(), v) for k, v in self.headers.items())
            state._record(Received(self.command, self.path, headers, _read_body(self)))
            if state.mode == "hang":
                state._release.wait(HANG_LIMIT)
                self.close_connection = True
                return  # no answer: the connection closes when the receiver does
            code, body = (200, b"{}") if state.mode == "ok" else (500, b'{"error": "receiver mode error"}')
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_PUT = do_PATCH = do_GET = _handle

        def log_message(self, format: str, *args: Any) -> None:
            """Silent: one line per request on stderr would drown the test output."""

    return Handler


@contextmanager
def receiver(mode: str = "ok") -> Iterator[Receiver]:
    """Serve on 127.0.0.1 (a free port) for the duration of the block; yield the `Receiver`.

    At exit the hanging handlers are released first, so the server stops promptly in every mode;
    handler threads are daemons and never hold the test process open."""
    if mode not in MODES:
        raise ValueError(f"receiver mode {mode!r}: expected one of {MODES}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.daemon_threads = True
    state = Receiver(url=f"http://127.0.0.1:{server.server_address[1]}/hook", mode=mode)
    server.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state._release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
