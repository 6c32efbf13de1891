"""The bounds of ``pycert leak serve`` and ``pycert leak gateway``'s server (:mod:`pycert.leak.httpd`), on loopback:
an idle flood (connections that send half a request line and wait, more of them than the server holds at once)
does not keep a client's request out, a connection past its deadline is closed, one beyond the cap while every
other is busy is answered 503, and nothing prints a traceback. Bounded: a few hundred sockets, seconds."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from pycert.leak.httpd import Handler, Server

CAP = 16


@pytest.fixture
def server() -> Iterator[Server]:
    lines: list[str] = []
    release = threading.Event()

    def ping(h: Handler) -> None:
        h.send_json(200, {"pong": True})

    def slow(h: Handler) -> None:  # a long generation: busy until the test lets it go
        release.wait(10)
        h.send_json(200, {"done": True})

    def echo(h: Handler) -> None:
        h.send_json(200, {"bytes": len(h.body())})

    srv = Server(0, {("GET", "/ping"): ping, ("GET", "/slow"): slow, ("POST", "/echo"): echo}, log=lines.append,
                 max_connections=CAP,
                 deadlines={"request": 1.0, "body": 1.0})
    srv.lines, srv.release = lines, release  # type: ignore[attr-defined]
    thread = srv.run_in_thread()
    yield srv
    release.set()
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def ping(srv: Server, timeout: float = 5.0) -> int:
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=timeout)
    try:
        conn.request("GET", "/ping")
        resp = conn.getresponse()
        body = json.loads(resp.read())
        assert body == {"pong": True} if resp.status == 200 else "error" in body
        return resp.status
    finally:
        conn.close()


def idle(srv: Server, count: int) -> list[socket.socket]:
    """``count`` connections that send half a request line and wait."""
    out = []
    for _ in range(count):
        s = socket.create_connection(srv.server_address[:2], timeout=5)
        s.sendall(b"GET /pi")
        out.append(s)
    return out


def test_a_request_is_answered_under_an_idle_flood(server: Server, capfd: pytest.CaptureFixture[str]) -> None:
    flood = idle(server, 10 * CAP)  # ten times what the server holds at once
    try:
        t0 = time.monotonic()
        answers = [ping(server) for _ in range(20)]
        assert answers == [200] * 20 and time.monotonic() - t0 < 10
        assert len(server.open) <= CAP
        more = idle(server, 3 * CAP)  # a second wave while the first is still open
        assert ping(server) == 200
        flood += more
    finally:
        for s in flood:
            s.close()
    out = capfd.readouterr()
    assert "Traceback" not in out.out + out.err and not any("Traceback" in line for line in server.lines)  # type: ignore[attr-defined]


def test_a_connection_past_its_deadline_is_closed(server: Server) -> None:
    [s] = idle(server, 1)
    s.settimeout(5)
    t0 = time.monotonic()
    assert s.recv(1024) == b""  # the server closed it, without an answer to half a request line
    assert 0.9 < time.monotonic() - t0 < 4
    s.close()
    body = socket.create_connection(server.server_address[:2], timeout=5)  # headers sent, the body never
    body.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    body.settimeout(5)
    assert body.recv(1024) == b""
    body.close()


def test_beyond_the_cap_with_every_connection_busy_is_503(server: Server) -> None:
    busy = []
    for _ in range(CAP):
        c = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
        c.request("GET", "/slow")
        busy.append(c)
    deadline = time.monotonic() + 5
    while sum(ph == "busy" for ph, _ in list(server.open.values())) < CAP and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ping(server) == 503
    server.release.set()  # type: ignore[attr-defined]
    assert [json.loads(c.getresponse().read()) for c in busy] == [{"done": True}] * CAP
    for c in busy:
        c.close()
    assert ping(server) == 200
