"""The warm checker's daemon process (``python -m pycert.lean.daemon.server KEY``): it takes its key's lock,
listens on its socket, serves its owner's connections, keeps a pool of warm Lean workers and exits when
idle. See :mod:`pycert.lean.daemon` for what it trusts and what it is trusted with."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from pycert.core.resources import package_parent, scratch_root
from pycert.lean.daemon import retire_stale
from pycert.lean.daemon.wire import (
    MAX_IDLE_S,
    PROTOCOL,
    Answer,
    Hello,
    Request,
    Started,
    Welcome,
    WorkerInfo,
    checker_key,
    idle_seconds,
    paths,
    peer_uid,
    read,
    send,
)
from pycert.lean.process import machine_slot
from pycert.lean.toolchain import Installed, find_installed
from pycert.lean.worker import LeanWorker, WorkerDied

WARMUP = "theorem pycertWarmup : (2 : Nat) ^ 70 % 7 = 2 ∧ [3, 1, 2].length = 3 := by decide\n"
"""A first job for a new worker, so that the wasm code a check runs (elaboration, the kernel, writing the
.olean files) is compiled before a command's first module arrives."""
KILLS = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
"""Signals by which a person or the out-of-memory killer ends a worker (not a crash of its own)."""



class _Pool:
    """Warm workers, each taking a machine slot only while it starts (:meth:`Server._run` says why not for a
    job). One is started when a job finds none; another (up to the machine's Lean slots) as soon as a job
    finds every one busy: that job still takes the first to be free (a start takes 10-12 s of CPU), and the
    next command's files run side by side (a small trace's ceiling and capacity files: the longer of the two
    instead of their sum)."""

    def __init__(self, installed: Installed, size: int, log) -> None:  # noqa: ANN001
        self.installed, self.size, self.log = installed, size, log
        self.cv = threading.Condition()
        self.idle: list[LeanWorker] = []
        self.busy: list[LeanWorker] = []
        self.starting = 0
        self.failed = ""
        self.closed = False

    def _start(self) -> None:
        try:
            with machine_slot(scratch_root()):
                w = LeanWorker(self.installed.node, self.installed.lean_js, str(self.installed.lib), slot=False)
                probe = w.dir / "PycertWarmup.lean"
                probe.write_text(WARMUP)
                t0 = time.monotonic()
                run = w.compile(probe, "PycertWarmup", w.dir / "PycertWarmup.olean", 600.0)
                if run.exit_code != 0:
                    w.close(kill=True)
                    raise WorkerDied(f"the warm-up module did not check: {run.stderr or run.stdout}"[:500])
                self.log(f"worker {w.proc.pid} warm in {time.monotonic() - t0:.1f} s of its first job, "
                         f"{w.usage.cpu_s:.1f} s CPU, {w.usage.rss_kib // 1024} MiB")
        except Exception as exc:  # noqa: BLE001 - reported to the jobs that wait, and logged
            with self.cv:
                self.starting -= 1
                self.failed = f"a Lean worker could not start: {exc}"
                self.cv.notify_all()
            self.log(self.failed)
            return
        with self.cv:
            self.starting -= 1
            self.failed = ""
            if self.closed:
                w.close(kill=True)
            else:
                self.idle.append(w)
            self.cv.notify_all()

    def _spawn(self) -> None:
        """Start a worker in the background (the caller holds ``cv``)."""
        self.starting += 1
        self.failed = ""
        threading.Thread(target=self._start, daemon=True).start()

    def acquire(self) -> LeanWorker:
        """A warm worker for one job (raises :class:`WorkerDied` when none could start)."""
        spawned = False
        with self.cv:
            while True:
                if self.closed:
                    raise WorkerDied("the warm checker is stopping")
                if self.idle:
                    w = self.idle.pop()
                    self.busy.append(w)
                    return w
                live = len(self.busy) + self.starting
                if live == 0:
                    if spawned and self.failed:
                        raise WorkerDied(self.failed)
                    self._spawn()
                    spawned = True
                elif live < self.size and not self.starting:
                    self._spawn()
                    spawned = True
                self.cv.wait(0.25)

    def release(self, w: LeanWorker) -> None:
        with self.cv:
            self.busy.remove(w)
            if w.retired or self.closed:
                self.log(f"worker {w.proc.pid} retired after {w.jobs} jobs ({w.usage.rss_kib // 1024} MiB)")
                threading.Thread(target=w.close, kwargs={"kill": self.closed}, daemon=True).start()
            else:
                self.idle.append(w)
            self.cv.notify_all()

    def info(self) -> tuple[list[WorkerInfo], int]:
        with self.cv:
            return ([WorkerInfo(pid=w.proc.pid, jobs=w.jobs, rss_mib=w.usage.rss_kib // 1024, busy=w in self.busy)
                     for w in [*self.idle, *self.busy]], self.starting)

    def close(self) -> None:
        with self.cv:
            self.closed = True
            workers = [*self.idle, *self.busy]
            self.idle.clear()
            self.cv.notify_all()
        for w in workers:
            w.close(kill=True)


class Server:
    """The daemon: accepts its owner's connections on its socket and runs their jobs on the pool."""

    def __init__(self, key: str, installed: Installed, idle_s: float, prewarm: bool = True) -> None:
        self.key, self.idle_s, self.prewarm = key, idle_s, prewarm
        self.sock_path, self.lock_path, _ = paths(key)
        self.lock_fd: int | None = None
        self.started = time.time()
        self.last = time.monotonic()
        self.active = 0
        """Open connections: a build holds one while it runs, and the daemon does not exit under it."""
        self.running = 0
        self.jobs = 0
        self.stop = threading.Event()
        self.retiring = False
        """A newer key from the same home serves now: exit once no command holds a connection."""
        self.home = str(package_parent())
        self._lock = threading.Lock()
        slots = max(1, int(os.environ.get("PYCERT_LEAN_SLOTS", os.cpu_count() or 1)))
        self.pool = _Pool(installed, slots, self.log)

    @staticmethod
    def log(message: str) -> None:
        sys.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {message}\n")
        sys.stderr.flush()

    def _touch(self, connections: int = 0, running: int = 0) -> None:
        """Count open connections and jobs in flight; a job's start and end reset the idle clock (a status
        request does not: asking does not keep it alive)."""
        with self._lock:
            self.active += connections
            self.running += running
            if running:
                self.last = time.monotonic()

    def welcome(self) -> Welcome:
        workers, starting = self.pool.info()
        with self._lock:
            idle_for = 0.0 if self.running else time.monotonic() - self.last
        return Welcome(protocol=PROTOCOL, key=self.key, home=self.home, pid=os.getpid(), started=self.started,
                       idle_s=self.idle_s,
                       idle_for_s=round(idle_for, 1), jobs=self.jobs, workers=workers, starting=starting)

    def claim(self) -> bool:
        """Take the key's lock for the daemon's life; False when another daemon of this key holds it."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.lock_fd = fd
        return True

    def serve(self) -> None:
        """Serve until stopped, idle for :attr:`idle_s`, or the socket's path is taken or removed (call
        :meth:`claim` first)."""
        assert self.lock_fd is not None
        self.sock_path.unlink(missing_ok=True)  # a dead daemon's: this one holds the key's lock
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            listener.bind(str(self.sock_path))
        finally:
            os.umask(old)
        os.chmod(self.sock_path, 0o600)
        listener.listen(16)
        inode = os.stat(self.sock_path).st_ino
        self.log(f"listening on {self.sock_path} (key {self.key[:16]}, idle {self.idle_s:.0f} s)")
        if self.prewarm:
            with self.pool.cv:
                self.pool._spawn()  # warm from the start: the command that started it is the first of several
        threading.Thread(target=self._retire_stale, daemon=True).start()
        try:
            while not self.stop.is_set():
                ready, _, _ = select.select([listener], [], [], 1.0)
                if ready:
                    conn, _ = listener.accept()
                    threading.Thread(target=self._handle, args=(conn,), daemon=True).start()
                with self._lock:
                    idle = self.active == 0 and time.monotonic() - self.last > self.idle_s
                    retired = self.active == 0 and self.retiring
                if idle or retired:
                    self.log("retired by a daemon of a newer pycert, library or toolchain: exiting" if retired
                             else f"idle for {self.idle_s:.0f} s: exiting")
                    break
                try:
                    if os.stat(self.sock_path).st_ino != inode:
                        break  # another daemon of this key took the path (its lock was free): it serves now
                except OSError:
                    self.log("the socket was removed: exiting")
                    break
        finally:
            listener.close()
            with contextlib.suppress(OSError):
                if os.stat(self.sock_path).st_ino == inode:
                    self.sock_path.unlink()
            self.pool.close()
            os.close(self.lock_fd)
            self.lock_fd = None

    def _handle(self, conn: socket.socket) -> None:
        self._touch(connections=+1)
        try:
            with conn, conn.makefile("rwb") as f:
                if (uid := peer_uid(conn)) != os.getuid():
                    self.log(f"refused a connection from uid {uid}")
                    return
                hello = read(f, Hello)
                send(f, self.welcome())
                if hello.protocol != PROTOCOL or hello.key != self.key:
                    return
                while True:
                    try:
                        req = read(f, Request)
                    except ConnectionError:
                        return
                    if req.op == "status":
                        send(f, self.welcome())
                    elif req.op == "stop":  # answered first: the process may end as soon as the flag is up
                        self.log("stop requested")
                        send(f, self.welcome())
                        self.stop.set()
                        return
                    elif req.op == "retire":
                        self.log("retire requested: exiting once no command holds a connection")
                        self.retiring = True
                        send(f, self.welcome())
                        return
                    elif req.op == "idle":
                        if 1.0 <= req.idle_s <= MAX_IDLE_S:
                            self.log(f"idle time set to {req.idle_s:.0f} s")
                            with self._lock:
                                self.idle_s, self.last = req.idle_s, time.monotonic()
                        send(f, self.welcome())
                    else:
                        self._compile(req, conn, f)
        except (OSError, ConnectionError) as exc:
            self.log(f"a connection ended: {exc}")
        finally:
            self._touch(connections=-1)

    def _compile(self, req: Request, conn: socket.socket, f) -> None:  # noqa: ANN001
        self._touch(running=+1)
        try:
            self._run(req, conn, f)
        finally:
            self._touch(running=-1)

    def _run(self, req: Request, conn: socket.socket, f) -> None:  # noqa: ANN001
        """One job on a warm worker. It takes no machine slot: the worker holds its memory whether it works or
        waits, so a slot would protect nothing, and a warm job would wait behind another run's cold process
        (seen here: 66 s for a 1 s job). A worker's start takes one (:meth:`_Pool._start`)."""
        try:
            w = self.pool.acquire()
        except WorkerDied as exc:
            send(f, Answer(lost=str(exc)))
            return
        gone = threading.Event()
        try:
            send(f, Started())
            threading.Thread(target=self._watch, args=(conn, w, gone), daemon=True).start()
            try:
                answer = Answer(run=w.compile(Path(req.source), req.module, Path(req.olean), req.timeout,
                                              req.search_path))
            except WorkerDied as exc:
                code = w.proc.returncode
                answer = Answer(lost=f"{exc}; {w.stderr()[-2000:]}".strip("; "),
                                killed=code is not None and code < 0 and -code in KILLS)
                self.log(f"worker {w.proc.pid} lost on {req.module}: {exc}")
            finally:
                gone.set()
            with self._lock:
                self.jobs += 1
            send(f, answer)
        finally:
            gone.set()
            self.pool.release(w)

    def _retire_stale(self) -> None:
        """Retire the daemons of this home under other keys (:func:`pycert.lean.daemon.retire_stale`)."""
        try:
            if pids := retire_stale(self.key, self.home):
                self.log(f"asked the daemons of an older key from {self.home} to retire: {pids}")
        except Exception as exc:  # noqa: BLE001 - they still exit when idle
            self.log(f"could not retire older daemons: {exc}")

    @staticmethod
    def _watch(conn: socket.socket, w: LeanWorker, done: threading.Event) -> None:
        """Kill the job's worker when its client goes away (Ctrl-C): the job's work is for no one."""
        while not done.is_set():
            ready, _, _ = select.select([conn], [], [], 0.5)
            if ready and not done.is_set():
                try:
                    data = conn.recv(1, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    w.close(kill=True)
                    return
                time.sleep(0.5)  # a request sent early: it is read after this job


def serve_main(key: str) -> int:
    """The daemon process: take the key's lock (else another daemon of this key lives: leave), then serve."""
    installed = find_installed()
    if installed is None:
        Server.log("no wasm toolchain installed")
        return 2
    mine = checker_key(installed)
    if mine != key:
        Server.log(f"this code's key is {mine[:16]}, not the {key[:16]} asked for: not serving")
        return 2
    server = Server(key, installed, idle_seconds())
    if not server.claim():
        return 0  # another daemon of this key started first: it serves
    signal.signal(signal.SIGTERM, lambda *_: server.stop.set())
    signal.signal(signal.SIGINT, lambda *_: server.stop.set())
    server.serve()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(2)
    if os.fork():  # the spawning command does not wait; the daemon is no child of it
        os._exit(0)
    sys.exit(serve_main(sys.argv[1]))
