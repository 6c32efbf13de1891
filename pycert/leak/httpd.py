"""The small HTTP layer ``pycert leak serve`` and ``pycert leak gateway`` share: the standard library's
threading server on 127.0.0.1, JSON and event-stream answers, bounded request bodies.

A thread per connection (``ThreadingHTTPServer``), so that a long generation does not hold up a
``/v1/models``; the engine underneath batches concurrent requests itself. Bodies are read with their
``Content-Length`` only, up to :data:`MAX_BODY_BYTES`; a client that sends more, none, or a chunked
body is answered 413 or 411 before anything is parsed.

Every connection is bounded (the gateway is the isolation boundary between tenants, and a few hundred
connections that sent half a request line and waited once exhausted thread creation here, dropping a
tenant's request and printing a traceback each): at most :data:`MAX_CONNECTIONS` at once; a connection has
:data:`REQUEST_SECONDS` from when it opens, or its last answer ends, to send a request line and headers (the
idle timeout and the header deadline in one) and :data:`BODY_SECONDS` for the body; past either the server
closes it. A connection beyond the cap closes the one that has waited longest for its request, when one is
waiting, so an idle flood cannot keep a client's request out; when every connection is busy answering, it
is answered 503 and closed, without a thread. Nothing a client does prints a traceback.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pycert.core.errors import InputError
from pycert.leak.wire import error_body, event

MAX_BODY_BYTES = 4 << 20
"""A 65,536-token prompt of 7-digit ids is under 600 KB."""
LOOPBACK = "127.0.0.1"
MAX_CONNECTIONS = 64
"""Connections served at once (a thread each); the engine batches at most a few dozen requests anyway."""
REQUEST_SECONDS = 10.0
"""From a connection's opening, or the end of its last answer, to the end of its next request's headers."""
BODY_SECONDS = 30.0
"""From the end of a request's headers to the end of its body (4 MiB at 140 KB/s)."""
SEND_SECONDS = 30.0
"""The most one write to a client may wait for it to read (a stalled reader of a stream is closed)."""


class HttpError(Exception):
    """An answer other than 200, with vLLM's error body."""

    def __init__(self, code: int, message: str, kind: str = "BadRequestError", param: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.kind, self.param = code, message, kind, param


class Handler(BaseHTTPRequestHandler):
    """Routes ``(method, path)`` to the server's ``routes``; turns :class:`HttpError` into its answer."""

    protocol_version = "HTTP/1.1"
    server: Server
    timeout = SEND_SECONDS  # the socket's: a read or a write that waits this long ends the connection

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        self.server.log(f"{self.address_string()} {format % args}")

    def handle_one_request(self) -> None:
        self.server.phase(self, "request")
        super().handle_one_request()
        self.server.phase(self, "request")  # the answer is sent: the next request's clock starts

    def parse_request(self) -> bool:
        ok = super().parse_request()
        self.server.phase(self, "busy")
        return ok

    def body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise HttpError(411, "send the body with a Content-Length, not chunked")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise HttpError(411, "a Content-Length is required") from None
        if not 0 <= length <= MAX_BODY_BYTES:
            raise HttpError(413, f"the body is {length} bytes; at most {MAX_BODY_BYTES} are read")
        self.server.phase(self, "body")
        try:
            data = self.rfile.read(length)
        finally:
            self.server.phase(self, "busy")
        if len(data) != length:
            self.close_connection = True
            raise HttpError(408, f"the body ended after {len(data)} of its {length} bytes, or took more than "
                                 f"{BODY_SECONDS:g} s")
        return data

    def send_json(self, code: int, obj: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        """Headers of an event stream; the body ends when the connection closes."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def send_event(self, obj: dict | str) -> None:
        self.wfile.write(event(obj))
        self.wfile.flush()

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        route = self.server.routes.get((method, path))
        try:
            if route is None:
                known = {p for _, p in self.server.routes}
                raise HttpError(405 if path in known else 404,
                                f"{method} {path}: not served here" + ("" if path in known else " (no such route)"),
                                "NotFoundError" if path not in known else "BadRequestError")
            route(self)
        except HttpError as err:
            self.send_json(err.code, error_body(err.message, err.code, err.kind, err.param))
        except InputError as err:
            self.send_json(400, error_body(err.message, 400, param=err.where))
        except OSError:  # the client went away mid-answer, or the server closed it: nothing left to tell it
            self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802 (the base class's name)
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")


Route = Callable[[Handler], None]


_DEADLINES = {"request": REQUEST_SECONDS, "body": BODY_SECONDS}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, port: int, routes: dict[tuple[str, str], Route], log: Callable[[str], None],
                 host: str = LOOPBACK, max_connections: int = MAX_CONNECTIONS,
                 deadlines: dict[str, float] | None = None) -> None:
        self.routes, self.log = routes, log
        self.max_connections, self.deadlines = max_connections, {**_DEADLINES, **(deadlines or {})}
        self.lock = threading.RLock()  # a refusal under it ends its connection through shutdown_request
        self.open: dict[socket.socket, tuple[str, float]] = {}
        """Each connection being served: its phase (``request``, ``body``, ``busy``) and since when."""
        self.refused = self.closed = 0
        try:
            super().__init__((host, port), Handler)
        except OSError as exc:
            raise InputError(f"cannot listen: {exc.strerror or exc}", where=f"{host}:{port}") from None

    def phase(self, handler: Handler, name: str) -> None:
        with self.lock:
            if handler.connection in self.open:
                self.open[handler.connection] = (name, time.monotonic())

    def _close(self, conn: socket.socket) -> None:
        """End a connection whose thread is waiting on it: its read sees the end and the thread returns."""
        self.closed += 1
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            if len(self.open) >= self.max_connections:
                waiting = [(t, c) for c, (ph, t) in self.open.items() if ph == "request"]
                if not waiting:
                    self.refused += 1
                    self._refuse(request)
                    return
                oldest = min(waiting, key=lambda w: w[0])[1]  # the longest wait for a request makes room
                self._close(oldest)
                self.open.pop(oldest, None)
            self.open[request] = ("request", time.monotonic())
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # no thread to be had: answered as at the cap
            with self.lock:
                self.open.pop(request, None)
                self.refused += 1
            self._refuse(request)

    def _refuse(self, request: socket.socket) -> None:
        data = json.dumps(error_body(f"more than {self.max_connections} connections at once: try again",
                                     503, "ServiceUnavailableError")).encode()
        try:
            request.settimeout(1.0)
            request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                            b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
        except OSError:
            pass
        self.shutdown_request(request)

    def shutdown_request(self, request: Any) -> None:
        with self.lock:
            self.open.pop(request, None)
        super().shutdown_request(request)

    def service_actions(self) -> None:
        """Between accepts (every half second at most): close the connections past their phase's deadline."""
        now = time.monotonic()
        with self.lock:
            late = [c for c, (ph, t) in self.open.items() if ph in self.deadlines and now - t > self.deadlines[ph]]
            for conn in late:
                self._close(conn)
                self.open[conn] = ("closed", now)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed: one line in the log, never a traceback (a client cannot print one here)."""
        exc = sys.exc_info()[1]
        self.log(f"{client_address[0] if client_address else '?'}: connection ended: {type(exc).__name__}: "
                 f"{' '.join(str(exc).split())[:120]}")

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def run_in_thread(self) -> threading.Thread:
        """Serve from a daemon thread (tests, the in-process audit of a started server)."""
        t = threading.Thread(target=self.serve_forever, name="pycert-http", daemon=True)
        t.start()
        return t
