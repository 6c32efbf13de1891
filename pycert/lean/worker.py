"""pycert's Lean worker: one wasm Lean process that compiles module after module.

Every wasm Lean process pays about 7 s to start (Node parses the 89 MB ``lean.js``; Emscripten links
the 137 MB module twice, on the main thread and on the thread Lean runs on) before it reads a file: on
a cold library of small modules that was half of the build (docs/fixed-costs.md). The worker is
``lean --run PycertWorker.lean``, whose program calls ``Lean.Elab.runFrontend`` on each module: the
function the ``lean`` executable itself runs on a file, so a module gets the same elaboration, kernel
check and ``.olean`` files, and the process's start is paid once per worker. Its own import of
``Lean.Elab.Frontend`` costs about what one start does, so a worker is worth it from the second module.

Jobs go in as files (the wasm Lean cannot read a pipe on standard input); Lean's messages and one
``{"pycert_done": n, ...}`` line per job come back on its standard output. A worker holds one of the
machine's Lean slots for as long as it lives. Lean never frees what a compiled module leaves behind
(``runFrontend`` keeps its snapshots for the process's life), so a worker is retired once its memory
passes :data:`RETIRE_RSS_MIB`; a job it did not finish is not a verdict on the module: the caller runs
that module again in a process of its own (:func:`pycert.lean.wasm.WasmBackend`).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from pycert.core.resources import scratch_root, worker_source
from pycert.lean.process import ProcessRun, forget, machine_slot, spawn

RETIRE_RSS_MIB = 2800
"""A worker whose resident memory passed this after a job takes no more: the wasm heap stops at 2 GiB, on
top of the 0.85 GiB a fresh process holds (docs/fixed-costs.md). The whole library took one worker to 2.5 GiB."""
RETIRE_JOBS = 40
"""Nor does one that has compiled this many modules."""
ALIVE = '{"pycert_alive":true}'
"""What a waiting worker prints every 5 s: a write that fails when its owner died ends it (``PycertWorker.lean``)."""
_STDERR_LINES = 200
"""How much of a worker's standard error is kept (it prints a debug line for every import)."""


def answer(line: str, n: int) -> dict | None:
    """The worker's closing line for job ``n`` (``{"pycert_done": n, "ok": ..., "error"?: ...}``), or None for
    any other line (Lean's messages are JSON objects too, with other keys)."""
    if '"pycert_done"' not in line:
        return None
    try:
        done = json.loads(line)
    except ValueError:
        return None
    if not isinstance(done, dict) or done.get("pycert_done") != n or not set(done) <= {"pycert_done", "ok", "error"}:
        return None
    return done


class WorkerDied(Exception):
    """The worker ended (or was killed) before it answered a job."""


class LeanWorker:
    """One worker process; :meth:`compile` one module at a time, then :meth:`close`."""

    def __init__(self, node: Path, lean_js: Path, lean_path: str, slot: bool = True) -> None:
        """``slot``: hold a machine slot for the worker's life (a build's worker); without, the owner takes
        one around each job (the warm checker, whose idle workers must not keep other runs waiting)."""
        self._slot = contextlib.ExitStack()
        if slot:
            self._slot.enter_context(machine_slot(scratch_root()))
        try:
            self.dir = Path(tempfile.mkdtemp(prefix="worker-", dir=scratch_root()))
            (self.dir / "jobs").mkdir()
            shutil.copyfile(worker_source(), self.dir / "PycertWorker.lean")
            env = {**os.environ, "LEAN_PATH": lean_path}
            self.proc, self.usage = spawn([str(node), str(lean_js), "--run", "PycertWorker.lean",
                                           str(self.dir / "jobs")], self.dir, env)
        except BaseException:
            self._slot.close()
            raise
        self.jobs = 0
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        threading.Thread(target=self._read, args=(self.proc.stdout, self._lines.put), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self._stderr.append, False), daemon=True).start()

    @staticmethod
    def _read(stream, put, end: bool = True) -> None:  # noqa: ANN001 - a text stream and a sink
        for line in stream:
            put(line)
        if end:
            put(None)

    @property
    def retired(self) -> bool:
        return (self.proc.poll() is not None or self.jobs >= RETIRE_JOBS
                or self.usage.rss_kib // 1024 > RETIRE_RSS_MIB)

    def compile(self, source: Path, module: str, olean: Path, timeout: float, search_path: str = "") -> ProcessRun:
        """Compile ``source`` as ``module`` into ``olean`` (and its siblings), its imports found on
        ``search_path`` (directories joined by ``:``, before the toolchain; empty: the worker's own
        ``LEAN_PATH``); Lean's messages as a :class:`ProcessRun`. Raises :class:`WorkerDied` when the
        worker ended without answering (the module's verdict is then another process's to give); a timeout
        kills the worker. A job the worker could not run to Lean's verdict (a file it could not read or
        write) comes back with no exit code and the reason on standard error: a crash, not a refusal."""
        n, self.jobs = self.jobs, self.jobs + 1
        t0, cpu0 = time.monotonic(), self.usage.cpu_s
        job = self.dir / "jobs" / f"{n}.job"
        tmp = job.with_suffix(".tmp")
        tmp.write_text(f"{source}\t{module}\t{olean}\t{search_path}")
        tmp.rename(job)
        out: list[str] = []
        deadline = t0 + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.close(kill=True)
                return ProcessRun(exit_code=None, stdout="".join(out), stderr=self.stderr(), timed_out=True,
                                  timeout=timeout, seconds=time.monotonic() - t0)
            if line is None:
                self.proc.wait()
                interrupted = forget(self.proc, self.usage)
                said = next((ln.strip() for ln in reversed(out) if "error" in ln), "")[:300]
                raise WorkerDied(f"the Lean worker ended (exit {self.proc.returncode}"
                                 f"{', interrupted' if interrupted else ''}) while compiling {module}"
                                 f"{': ' + said if said else ''}")
            if (done := answer(line, n)) is not None:
                break
            if line.strip() != ALIVE:
                out.append(line)
        if "error" in done:
            return ProcessRun(exit_code=None, stdout="".join(out), stderr=f"Error: pycert's Lean worker: {done['error']}",
                              timed_out=False, timeout=timeout, seconds=time.monotonic() - t0)
        return ProcessRun(exit_code=0 if done["ok"] is True else 1, stdout="".join(out), stderr="", timed_out=False,
                          timeout=timeout, seconds=time.monotonic() - t0, cpu_s=round(self.usage.cpu_s - cpu0, 1),
                          peak_rss_mib=self.usage.peak_kib // 1024)

    def stderr(self) -> str:
        return "".join(self._stderr)

    def close(self, kill: bool = False) -> None:
        """End the worker (its group killed if asked, or if it does not stop by itself) and give its slot
        back; a second call does nothing."""
        try:
            if self.proc.poll() is None:
                if not kill:
                    (self.dir / "jobs" / f"{self.jobs}.tmp").write_text("stop")
                    (self.dir / "jobs" / f"{self.jobs}.tmp").rename(self.dir / "jobs" / f"{self.jobs}.job")
                try:
                    self.proc.wait(timeout=0 if kill else 5)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            forget(self.proc, self.usage)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            self._slot.close()
