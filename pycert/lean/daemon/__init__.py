"""The warm checker: pycert's Lean worker kept alive between commands, for the user who started it.

A wasm Lean process pays 4-5 s of CPU to start and about as much again to import ``Lean.Elab.Frontend``
before it reads a file (DEVELOPERS.md, "Fixed costs"); a small trace's instance files cost 1-5 s each
once that is paid. So ``pycert prove`` hands its small modules to a daemon that keeps Lean workers
(:class:`pycert.lean.worker.LeanWorker`) warm: the first command that wants it and finds none starts it
(and checks its own files the way it always did: a daemon still starting would make that first command
slower, not faster), later commands find it warm. It exits after :data:`IDLE_S` without a job.

Where it lives: ``<scratch>/daemon/`` (``/tmp/pycert-<uid>/daemon``, a directory only its owner can
enter), one Unix socket per key (``<key>.sock``, mode 0600), its lock and its log beside it. Never a
network port. Whom it serves: a peer whose uid (``SO_PEERCRED``) is its own, and that names its key; the
client checks the daemon's uid the same way. The key hashes pycert's own code (every Python file and
the worker's Lean program), the Lean library's sources and the toolchain (its pinned package, the
loader and the Node that run it, the Python that runs the daemon): an upgrade of any of them is never
answered by an old daemon, whose socket has another name (it exits when idle).

What it trusts, and what it is trusted with: it compiles the files its owner's pycert names, with
their imports found where that command's build put them (a search path per job), into the command's
own files; it keeps nothing of a job but a warm Lean (each job imports afresh: a module changed
between jobs is read as it is now; ``tests/test_daemon.py``). Its answer is Lean's own messages and
verdict, read by the client exactly as a process's. A job it could not run to Lean's verdict is never a
verdict on the module: a worker that crashed by itself is replaced and the module checked again by a
fresh process of the command's own; a worker or daemon that was killed (a person, ``pycert daemon
stop``, the out-of-memory killer) leaves the module "not checked" (exit 3), and the next command starts a
fresh one. ``pycert verify`` never uses it: a stranger's certificate is checked by fresh processes that
no earlier job has touched (its Lean files could run code in a long-lived process).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from pycert.core.errors import InputError
from pycert.core.resources import package_parent
from pycert.lean.daemon.wire import (
    IDLE_S,
    MAX_IDLE_S,
    MAX_LINE,
    PROTOCOL,
    Answer,
    Hello,
    Request,
    Started,
    Welcome,
    WorkerInfo,
    checker_key,
    daemon_dir,
    enabled,
    idle_seconds,
    paths,
    peer_uid,
    read,
    send,
)
from pycert.lean.process import ProcessRun, ended_by
from pycert.lean.toolchain import Installed

__all__ = ["IDLE_S", "MAX_IDLE_S", "CheckerLost", "DaemonStatus", "Session", "checker_key", "daemon_dir", "enabled", "ensure",
           "idle_seconds", "log_path", "retire_stale", "session", "start", "status", "stop"]

STARTED_SLACK_S = 120.0
"""Past its job's own time limit, how long a client waits for an answer before it calls the daemon lost."""

# ---------------------------------------------------------------------------- the client


class CheckerLost(Exception):
    """The daemon ended a job without Lean's verdict; ``killed``: by a signal, not by a crash of its own."""

    def __init__(self, message: str, killed: bool) -> None:
        super().__init__(message)
        self.killed = killed


class Connection:
    """One connection to the daemon (one per build thread): a job at a time."""

    def __init__(self, sock: socket.socket, f, welcome: Welcome) -> None:  # noqa: ANN001 - its binary file
        self.sock, self.f, self.welcome = sock, f, welcome
        self.ended = False

    def _end(self) -> None:
        self.ended = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def request(self, req: Request) -> Welcome:
        send(self.f, req)
        return read(self.f, Welcome)

    def compile(self, source: Path, module: str, olean: Path, search_path: str, timeout: float) -> ProcessRun:
        """Lean's run of ``source`` in a warm worker. Raises :class:`CheckerLost` when the daemon or its
        worker ended without Lean's verdict; Ctrl-C (:func:`pycert.lean.process.kill_running`) ends the job
        and gives an interrupted run."""
        t0 = time.monotonic()
        with ended_by(self._end):
            try:
                send(self.f, Request(op="compile", source=str(source), module=module, olean=str(olean),
                                      search_path=search_path, timeout=timeout))
                answer = self._answer(timeout)
            except (OSError, ConnectionError) as exc:
                if self.ended:
                    return ProcessRun(exit_code=None, stdout="", stderr="", seconds=time.monotonic() - t0,
                                      timed_out=False, timeout=timeout, interrupted=True)
                raise CheckerLost(f"the warm checker ended, or stopped answering, while checking {module} ({exc})",
                                  killed=True) from None
        if answer.run is None:
            raise CheckerLost(f"the warm checker's worker ended while checking {module}: {answer.lost}",
                              killed=answer.killed)
        return answer.run

    def _answer(self, timeout: float) -> Answer:
        line = self.f.readline(MAX_LINE)  # Started, after any wait for a worker and a machine slot
        if not line:
            raise ConnectionError("closed")
        try:
            Started.model_validate_json(line)
        except ValidationError:
            try:
                return Answer.model_validate_json(line)  # no worker could start
            except ValidationError:
                raise ConnectionError("a malformed answer") from None
        self.sock.settimeout(timeout + STARTED_SLACK_S)
        try:
            return read(self.f, Answer)
        finally:
            self.sock.settimeout(None)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.f.close()
            self.sock.close()


def connect(sock_path: Path, key: str) -> Connection | None:
    """A connection to the daemon at ``sock_path`` that answers ``key``, or None (none there, another
    user's, another key's, or one that is going away). With ``key`` empty, the connection only carries
    the daemon's welcome, which names its key."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(10.0)
        s.connect(str(sock_path))
        if peer_uid(s) != os.getuid():
            raise ConnectionError("the socket's owner is another user")
        f = s.makefile("rwb")
        send(f, Hello(protocol=PROTOCOL, key=key))
        welcome = read(f, Welcome)
        s.settimeout(None)
        conn = Connection(s, f, welcome)
        if welcome.protocol != PROTOCOL or (key and welcome.key != key):
            conn.close()
            return None
        return conn
    except (OSError, ConnectionError, ValueError):
        s.close()
        return None


def _alive(lock_path: Path) -> bool:
    """Whether a daemon holds the key's lock (it is starting, serving or exiting)."""
    try:
        fd = os.open(lock_path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def spawn(key: str, idle_s: float) -> None:
    """Start the daemon for ``key`` in the background (this process does not wait for it): a detached
    process, its own session, not a child of this one (so that a Ray worker's exit does not take it)."""
    _sock, _lock, log = paths(key)
    home = str(package_parent())  # the same pycert this command runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH")) if p),
           "PYCERT_DAEMON_IDLE": repr(idle_s)}
    with open(log, "ab") as out:
        os.chmod(log, 0o600)
        subprocess.Popen([sys.executable, "-m", "pycert.lean.daemon.server", key], stdin=subprocess.DEVNULL, stdout=out,
                         stderr=out, cwd=daemon_dir(), env=env, start_new_session=True, close_fds=True)


class Session:
    """A build's use of the daemon: one connection per build thread, made on first use."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.pid = 0
        self.sock_path, self.lock_path, _ = paths(key)
        self._mine = threading.local()
        self._all: list[Connection] = []
        self._lock = threading.Lock()

    def connection(self) -> Connection | None:
        conn = getattr(self._mine, "conn", None)
        if conn is None:
            conn = connect(self.sock_path, self.key)
            if conn is not None:
                self._mine.conn = conn
                with self._lock:
                    self._all.append(conn)
        return conn

    def drop(self) -> None:
        """Forget this thread's connection (after the daemon lost a job: the next job opens a new one)."""
        if (conn := getattr(self._mine, "conn", None)) is not None:
            conn.close()
            self._mine.conn = None

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()


def session(installed: Installed) -> Session | None:
    """A :class:`Session` with this pycert's daemon when one is running and answers, else None."""
    key = checker_key(installed)
    s = Session(key)
    conn = s.connection()
    if conn is None:
        return None
    s.pid = conn.welcome.pid
    return s


def ensure(installed: Installed, idle_s: float | None = None) -> None:
    """Start this pycert's daemon in the background unless one is alive (serving, starting or stopping); it
    exits after ``idle_s`` without a job (default: :func:`idle_seconds`)."""
    idle_s = idle_seconds() if idle_s is None else idle_s  # a bad $PYCERT_DAEMON_IDLE: this command's error
    key = checker_key(installed)
    sock, lock, _ = paths(key)
    if not _alive(lock):
        spawn(key, idle_s)


# ---------------------------------------------------------------------------- status, start, stop


class DaemonStatus(BaseModel):
    socket: str
    current: bool
    """Whether it answers this pycert (its key), or was started by another version or checkout."""
    pid: int
    key: str
    uptime_s: float
    idle_s: float
    idle_for_s: float
    jobs: int
    workers: list[WorkerInfo]
    starting: int


def _every() -> Iterator[tuple[Path, str]]:
    for sock in sorted(daemon_dir().glob("*.sock")):
        yield sock, sock.stem


def _ask(sock: Path, op: Literal["status", "stop", "retire"], only: Callable[[Welcome], bool] = lambda _w: True,
         ) -> Welcome | None:
    """Ask the daemon at ``sock``, whatever its key, for its status, to stop or to retire (if ``only`` its
    welcome): a first connection learns its key from its welcome (it serves no request under another key),
    a second one asks."""
    first = connect(sock, "")
    if first is None:
        return None  # no daemon there, or another user's
    first.close()
    if not only(first.welcome):
        return None
    conn = connect(sock, first.welcome.key)
    if conn is None:
        return None
    try:
        return conn.welcome if op == "status" else conn.request(Request(op=op))
    except (OSError, ConnectionError):
        return None
    finally:
        conn.close()


def status(installed: Installed | None) -> list[DaemonStatus]:
    """Every daemon of this user that answers, by key; ``current`` marks this pycert's."""
    mine = checker_key(installed) if installed is not None else ""
    out = []
    for sock, _name in _every():
        w = _ask(sock, "status")
        if w is not None:
            out.append(DaemonStatus(socket=str(sock), current=w.key == mine, pid=w.pid, key=w.key,
                                    uptime_s=round(time.time() - w.started, 1), idle_s=w.idle_s,
                                    idle_for_s=w.idle_for_s, jobs=w.jobs, workers=w.workers, starting=w.starting))
    return out


def stop(installed: Installed | None, every: bool) -> list[int]:
    """Stop this pycert's daemon (``every``: all of this user's, and the locks and logs of those no longer
    running); the pids that were asked and answered."""
    mine = checker_key(installed) if installed is not None else ""
    stopped = []
    for sock, name in _every():
        if every or name == mine[:32]:
            if (w := _ask(sock, "stop")) is not None:
                stopped.append(w.pid)
    if every:
        for lock in daemon_dir().glob("*.lock"):
            if not _alive(lock):
                for leftover in (lock, lock.with_suffix(".log")):
                    leftover.unlink(missing_ok=True)
    return stopped


def retire_stale(key: str, home: str) -> list[int]:
    """Retire this user's daemons started from ``home`` under another key (an older pycert, library or
    toolchain at the same place): each exits once no command holds a connection to it, so that a command of
    the old code still running keeps its checker, and the memory comes back without waiting for the idle
    time. The pids that were asked."""
    return [w.pid for sock, name in _every() if name != key[:32]
            if (w := _ask(sock, "retire", lambda w: w.home == home and w.key != key)) is not None]


def start(installed: Installed, wait_s: float = 600.0, idle_s: float | None = None) -> DaemonStatus:
    """Start this pycert's daemon if it is not running, and wait until one worker is warm; ``idle_s``: its
    idle time from now on (a daemon already running takes it too)."""
    ensure(installed, idle_s)
    key = checker_key(installed)
    deadline = time.monotonic() + wait_s
    told = idle_s is None
    while time.monotonic() < deadline:
        for st in status(installed):
            if st.current and not told and (conn := connect(Path(st.socket), key)) is not None:
                with contextlib.suppress(OSError, ConnectionError):
                    told = conn.request(Request(op="idle", idle_s=idle_s)).idle_s == idle_s
                conn.close()
            if st.current and st.workers and told:
                return next(s for s in status(installed) if s.current)
        time.sleep(0.25)
    raise InputError(f"the warm checker did not get a warm Lean worker in {wait_s:.0f} s "
                     f"(its log: {paths(key)[2]})")


def log_path(installed: Installed) -> Path:
    return paths(checker_key(installed))[2]


