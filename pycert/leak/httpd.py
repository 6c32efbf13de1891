"""The small HTTP layer ``pycert leak serve`` and ``pycert leak gateway`` share: the standard library's
threading server on 127.0.0.1, JSON and event-stream answers, bounded request bodies.

A thread per connection (``ThreadingHTTPServer``), so that a long generation does not hold up a
``/v1/models``; the engine underneath batches concurrent requests itself. Bodies are read with their
``Content-Length`` only, up to :data:`MAX_BODY_BYTES`; a client that sends more, none, or a chunked
body is answered 413 or 411 before anything is parsed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pycert.core.errors import InputError
from pycert.leak.wire import error_body, event

MAX_BODY_BYTES = 4 << 20
"""A 65,536-token prompt of 7-digit ids is under 600 KB."""
LOOPBACK = "127.0.0.1"


class HttpError(Exception):
    """An answer other than 200, with vLLM's error body."""

    def __init__(self, code: int, message: str, kind: str = "BadRequestError", param: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.kind, self.param = code, message, kind, param


class Handler(BaseHTTPRequestHandler):
    """Routes ``(method, path)`` to the server's ``routes``; turns :class:`HttpError` into its answer."""

    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        self.server.log(f"{self.address_string()} {format % args}")

    def body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise HttpError(411, "send the body with a Content-Length, not chunked")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise HttpError(411, "a Content-Length is required") from None
        if not 0 <= length <= MAX_BODY_BYTES:
            raise HttpError(413, f"the body is {length} bytes; at most {MAX_BODY_BYTES} are read")
        return self.rfile.read(length)

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
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away mid-answer: nothing left to tell it

    def do_GET(self) -> None:  # noqa: N802 (the base class's name)
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")


Route = Callable[[Handler], None]


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, routes: dict[tuple[str, str], Route], log: Callable[[str], None],
                 host: str = LOOPBACK) -> None:
        self.routes, self.log = routes, log
        try:
            super().__init__((host, port), Handler)
        except OSError as exc:
            raise InputError(f"cannot listen: {exc.strerror or exc}", where=f"{host}:{port}") from None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def run_in_thread(self) -> threading.Thread:
        """Serve from a daemon thread (tests, the in-process audit of a started server)."""
        t = threading.Thread(target=self.serve_forever, name="pycert-http", daemon=True)
        t.start()
        return t
