"""Running one Lean process: a machine-wide slot, its own process group, a timeout that kills the group.

A wasm Lean takes a core and 3-4 GB; several pycert processes at once (tests, a prove run) would
otherwise oversubscribe a 2-core machine into swapping or the OOM killer, so every Lean process
first takes one of ``$PYCERT_LEAN_SLOTS`` (default: the core count) flock'd slot files.

Output is captured, not streamed: ``lean --json`` output is parsed after the run (one JSON object a
line), and the progress lines pycert prints are its own. (``subprocess-tee``, which streams a
child's output to the terminal and a log at once, does not fit: nothing here is shown raw, and its
``run`` cannot kill a process group on timeout.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel

from pycert.core.resources import scratch_root

HEAP_MARKERS = ("out of memory", "Out of memory", "Aborted(OOM)", "Cannot enlarge memory", "Maximum memory size",
                "bad_alloc", "Cannot allocate memory", "Array buffer allocation failed", "memory access out of bounds")
"""What Node, Emscripten, GMP and Lean print when the heap runs out (the wasm heap stops at 2 GiB)."""
_LONG_LINE = 400
"""Longer lines are code, not messages: Node prints the offending line of the one-line ``lean.js``."""


class ProcessRun(BaseModel):
    exit_code: int | None
    """None after a timeout; negative (``-signal``) when a signal ended the process."""
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    timeout: float = 0.0
    interrupted: bool = False
    """Killed by :func:`kill_running` (Ctrl-C or SIGTERM in pycert), so its exit says nothing about Lean."""
    cpu_s: float = 0.0
    """CPU seconds of the process, as last read while it ran (up to half a second short)."""
    peak_rss_mib: int = 0
    """Its peak resident memory (``VmHWM``), as last read while it ran."""

    def _lines(self) -> list[str]:
        return [ln.strip() for ln in (self.stderr + "\n" + self.stdout).splitlines()
                if ln.strip() and not ln.startswith("[DEBUG") and len(ln) <= _LONG_LINE]

    def heap_exhausted(self) -> str | None:
        """The line saying the heap ran out, if one does. Out of memory in a pthread worker, the wasm
        Lean dies with an uncaught C++ exception (``std::bad_alloc``) that Node can only print as the
        exception's address, a bare number on stderr after "worker sent an error!" (seen here on a
        7,999,395-reference trace, at 5 GB of RSS, after 335 s)."""
        said = next((ln for ln in self._lines() if any(m in ln for m in HEAP_MARKERS)), None)
        if said is None and "worker sent an error!" in self.stderr:
            thrown = next((ln.strip() for ln in self.stderr.splitlines() if ln.strip().isdigit()), None)
            if thrown is not None:
                said = f"an uncaught C++ exception at {thrown}, as std::bad_alloc is reported"
        return said

    def died(self) -> bool:
        """Whether the process died mid-run (a JavaScript exception such as Node's "Maximum call stack size
        exceeded"), which exits 1 as Lean does after an error: what it printed before is not the whole file's
        verdict (seen on a batch of mutants, where every declaration after the crash read as accepted)."""
        return any(m in self.stderr for m in ("RangeError:", "RuntimeError:", "Node.js v"))

    def crash_detail(self) -> str:
        """The line that best says why the process died (Lean's PANIC, Node's out-of-memory ...)."""
        lines = self._lines()
        for ln in lines:
            if "PANIC" in ln or "out of memory" in ln or "RangeError" in ln or "Error:" in ln:
                return ln
        return lines[-1] if lines else f"exit {self.exit_code}"


class NotStarted(Exception):
    """A Lean run that was still waiting to start when its build was interrupted (:func:`stopping`)."""


_STOP = threading.Event()
"""Set while an interrupted build winds down: a run waiting for a slot gives up instead of starting."""


@contextlib.contextmanager
def machine_slot(slot_dir: Path, poll_s: float = 0.5) -> Iterator[None]:
    """Hold one of ``$PYCERT_LEAN_SLOTS`` machine-wide slots (flock'd files in ``slot_dir``)."""
    slots = max(1, int(os.environ.get("PYCERT_LEAN_SLOTS", os.cpu_count() or 1)))
    while True:
        if _STOP.is_set():
            raise NotStarted("interrupted while waiting for a Lean slot")
        for i in range(slots):
            fh = open(slot_dir / f"slot-{i}.lock", "a")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
            return
        time.sleep(poll_s)


_LIVE: set[int] = set()
"""Process groups of Lean runs in flight (worker threads start them; the main thread may kill them)."""
_KILLED: set[int] = set()
"""Those of them :func:`kill_running` killed: their runs were interrupted, not crashed."""
_ENDERS: dict[int, Callable[[], None]] = {}
"""Lean runs in flight elsewhere (a job of the warm checker), each by a function that ends it."""
_LIVE_LOCK = threading.Lock()


def kill_running() -> None:
    """Kill every Lean process group in flight, and end every job this process has in the warm checker.
    Ctrl-C and SIGTERM reach only the main thread, and a Lean in its own session not at all: without this
    the interrupted run would wait for each one."""
    with _LIVE_LOCK:
        groups = list(_LIVE)
        _KILLED.update(groups)
        enders = list(_ENDERS.values())
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    for end in enders:
        end()


@contextlib.contextmanager
def ended_by(end: Callable[[], None]) -> Iterator[None]:
    """While the block runs, :func:`kill_running` calls ``end`` (a run this process does not own as a
    child); the block does not start while an interrupted build winds down."""
    with _LIVE_LOCK:
        if _STOP.is_set():
            raise NotStarted("interrupted before the Lean job started")
        _ENDERS[id(end)] = end
    try:
        yield
    finally:
        with _LIVE_LOCK:
            _ENDERS.pop(id(end), None)


@contextlib.contextmanager
def stopping() -> Iterator[None]:
    """While an interrupted build waits for its worker threads: the Lean processes in flight are
    killed, and a run still waiting for a slot does not start (it raises :class:`NotStarted`), so
    Ctrl-C takes effect at once rather than after the next module's run."""
    _STOP.set()
    try:
        kill_running()
        yield
    finally:
        _STOP.clear()


def run_process(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float) -> ProcessRun:
    """Run ``argv`` in its own process group, in a machine slot; on timeout the whole group is killed.

    The timeout counts from the start of the process, not from the wait for a slot.
    """
    with machine_slot(scratch_root()):
        return _run_process(argv, cwd, env, timeout)


class Usage:
    """The peak resident memory and the CPU seconds of one process, read from ``/proc`` every half
    second while it runs (Linux; elsewhere both stay 0). ``getrusage`` cannot tell one child's peak
    from another's, and a shard's own peak is what its size is chosen by."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kib, self.rss_kib, self.cpu_s = pid, 0, 0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        while True:
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
                stat = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                return
            fields = {ln.split(":")[0]: ln.split()[1] for ln in status.splitlines() if ln.startswith(("VmHWM:", "VmRSS:"))}
            self.peak_kib = max(self.peak_kib, int(fields.get("VmHWM", 0)))
            self.rss_kib = int(fields.get("VmRSS", 0))
            self.cpu_s = (int(stat[11]) + int(stat[12])) / tick
            if self._stop.wait(0.5):
                return

    def stop(self) -> None:
        self._stop.set()


def spawn(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen, Usage]:
    """Start a Lean process in its own process group, known to :func:`kill_running` while it lives (end it
    with :func:`forget`), with its memory and CPU sampled."""
    with _LIVE_LOCK:  # so that kill_running, which holds it, sees every process that starts
        if _STOP.is_set():
            raise NotStarted("interrupted before the Lean process started")
        proc = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True, errors="replace",
        )
        usage = Usage(proc.pid)
        _LIVE.add(proc.pid)
    return proc, usage


def forget(proc: subprocess.Popen, usage: Usage) -> bool:
    """Stop sampling a process that has ended; whether :func:`kill_running` was what ended it."""
    usage.stop()
    with _LIVE_LOCK:
        _LIVE.discard(proc.pid)
        interrupted = proc.pid in _KILLED
        _KILLED.discard(proc.pid)
    return interrupted


def _run_process(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float) -> ProcessRun:
    t0 = time.monotonic()
    proc, usage = spawn(argv, cwd, env)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    except BaseException:  # Ctrl-C: do not leave a 3 GB Lean behind
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        interrupted = forget(proc, usage)
    return ProcessRun(exit_code=None if timed_out else proc.returncode, stdout=out, stderr=err,
                      seconds=time.monotonic() - t0, timed_out=timed_out, timeout=timeout, interrupted=interrupted,
                      cpu_s=round(usage.cpu_s, 1), peak_rss_mib=usage.peak_kib // 1024)
