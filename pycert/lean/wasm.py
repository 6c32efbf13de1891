"""The embedded wasm backend: pycert is its own minimal Lake.

Modules are compiled in import order through the build system (:func:`pycert.lean.scheduler.schedule`),
with the content cache answering for unchanged modules: each by a Lean process of its own
(``lean --json -o``), or, when a build has enough modules to compile, by one long-lived Lean worker per
build thread (:mod:`pycert.lean.worker`), which pays the process's start once, or, when the build asks
for it and one is running, by the warm checker's workers (:mod:`pycert.lean.daemon`), which paid it in
an earlier command. Sources are staged under
a directory the wasm process can see (it mounts only ``/tmp`` and ``/home``) and its diagnostics mapped
back to the user's paths. Lean refuses ``#print axioms`` here (every file is a ``module``), so the
audit's cross-check says it was not run.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from pycert.core.errors import InputError
from pycert.core.resources import cache_dir, scratch_root
from pycert.lean import daemon
from pycert.lean.backend import Backend, BuildOptions, PrintedAxioms, ToolchainInfo
from pycert.lean.scheduler import BuildCache, link_outputs, prune_old_trees, schedule
from pycert.lean.diagnostics import CheckResult, check_result
from pycert.lean.process import run_process
from pycert.lean.sources import Unit, module_path
from pycert.lean.toolchain import Installed, find_installed, node_version
from pycert.lean.worker import LeanWorker, WorkerDied

WORKER_MAX_SOURCE = 4 << 20
"""A source larger than this (a whole trace's instance) gets a process, and the whole heap, to itself. A
fleet's host instance of the conversation trace (36,000-72,000 references, 1.5-3.7 MB) cost a warm worker
5-10 s of CPU and 120-150 MiB more resident memory, against 18-23 s in a fresh process (DEVELOPERS.md,
"A fleet's Lean work"); a worker that runs out of heap is no verdict (its module goes to a fresh process)."""
ONE_THREAD = "-DElab.async=false"
"""Every Lean run elaborates on one thread, as the worker does: on wasm each thread Lean starts is a
new instance of the module (seconds and a gigabyte each; docs/wasm-kernel.md)."""


def worker_mode() -> str:
    """``$PYCERT_LEAN_WORKER``: ``auto`` (the default: workers when a build compiles more than two modules
    per thread), ``on`` or ``off``."""
    mode = os.environ.get("PYCERT_LEAN_WORKER", "auto") or "auto"
    if mode not in ("auto", "on", "off"):
        raise InputError(f"PYCERT_LEAN_WORKER={mode!r}: expected auto, on or off")
    return mode


class _Workers:
    """One Lean worker per build thread, started on the thread's first module and retired when spent."""

    def __init__(self, backend: WasmBackend, tree: Path, use: bool, progress: Callable[[str], None]) -> None:
        self.backend, self.lean_path, self.use, self.progress = backend, f"{backend.lib}:{tree}", use, progress
        self._mine = threading.local()
        self._all: list[LeanWorker] = []
        self._lock = threading.Lock()

    def get(self) -> LeanWorker:
        w: LeanWorker | None = getattr(self._mine, "worker", None)
        if w is None or w.retired:
            if w is not None:
                self.progress(f"Lean worker retired after {w.jobs} modules ({w.usage.rss_kib // 1024:,} MiB resident)")
                w.close()
            w = self._mine.worker = LeanWorker(self.backend.node, self.backend.lean_js, self.lean_path)
            with self._lock:
                self._all.append(w)
        return w

    def drop(self, kill: bool = True) -> None:
        """End this thread's worker, which gives back its machine slot."""
        if (w := getattr(self._mine, "worker", None)) is not None:
            w.close(kill=kill)
            self._mine.worker = None

    def close(self) -> None:
        with self._lock:
            for w in self._all:
                w.close()


class WasmBackend(Backend):
    kind: ClassVar = "wasm"

    def __init__(self, installed: Installed) -> None:
        self.installed = installed
        self.node, self.lean_js, self.lib, self.stamp = installed.node, installed.lean_js, installed.lib, installed.stamp

    def info(self) -> ToolchainInfo:
        return ToolchainInfo(backend="wasm", lean_version=self.stamp.lean_version, lean_commit=self.stamp.lean_commit,
                             node_version=node_version(self.node), node=str(self.node), lean_js=str(self.lean_js),
                             lean_lib=str(self.lib), cache_dir=str(cache_dir()))

    def toolchain_library(self) -> Path:
        return self.lib

    def cache_identity(self) -> str:
        return f"wasm:{self.stamp.integrity}"

    def build(self, library: Path | None, units: list[Unit], options: BuildOptions) -> tuple[list[CheckResult], Path]:
        prune_old_trees(scratch_root())
        tree = Path(tempfile.mkdtemp(prefix="oleans-", dir=scratch_root()))
        atexit.register(shutil.rmtree, tree, ignore_errors=True)  # the run's audit is done by then
        cache = BuildCache(self.cache_identity(), units)
        mode = worker_mode()
        small = sum(not cache.has(u) and u.path.stat().st_size <= WORKER_MAX_SOURCE for u in units)
        checker = None
        if options.daemon and small:
            checker = daemon.session(self.installed)
            if checker is None:  # started now, it is warm sooner for the next command; its start waits for a slot
                daemon.ensure(self.installed)
            options.progress(f"warm checker: pid {checker.pid}" if checker else
                             "warm checker: none running yet; this run checks with fresh Lean processes and starts one "
                             "for the next")
        workers = _Workers(self, tree, checker is None and (mode == "on" or mode == "auto" and small > 2 * options.jobs),
                           options.progress)

        def compile_unit(u: Unit) -> CheckResult:
            if (hit := cache.lookup(u, tree)) is not None:
                options.progress(f"{u.module}: {hit.status} (cached)")
                return hit
            options.progress(f"{u.module}: checking ...")
            res = self._compile(u, tree, cache, options.timeout, workers, checker)
            options.progress(f"{u.module}: {res.summary()}")
            return res

        try:
            return schedule(units, options.jobs, compile_unit, options.progress), tree
        finally:
            workers.close()
            if checker is not None:
                checker.close()

    def _compile(self, u: Unit, tree: Path, cache: BuildCache, timeout: float, workers: _Workers,
                 checker: daemon.Session | None) -> CheckResult:
        rel = module_path(u.module)
        stage = Path(tempfile.mkdtemp(prefix="stage-", dir=scratch_root()))
        try:
            src = stage / "src" / rel.with_suffix(".lean")
            src.parent.mkdir(parents=True)
            shutil.copyfile(u.path, src)
            out = stage / "out" / rel.with_name(rel.name + ".olean")
            out.parent.mkdir(parents=True)
            res = None
            if checker is not None and u.path.stat().st_size <= WORKER_MAX_SOURCE:
                res = _in_checker(checker, u, src, out, tree, timeout)
            elif workers.use and u.path.stat().st_size <= WORKER_MAX_SOURCE:
                try:
                    res = check_result(u.module, str(u.path), workers.get().compile(src, u.module, out, timeout),
                                       str(src))
                except WorkerDied:
                    workers.drop()
                if res is not None and res.status not in ("ok", "failed") and not res.cause == "timeout":
                    workers.drop()  # a crash in a worker that has compiled other modules: not this one's verdict
                    res = None
            if res is None:
                # a worker holds a machine slot while it waits for its next module: this thread's must go before
                # its own process asks for one (two idle workers once held both slots of a 2-core machine while
                # their threads waited for a slot to check a whole trace's instance, for ever)
                workers.drop(kill=False)
                staged_name = str(rel.with_suffix(".lean"))
                env = {**os.environ, "LEAN_PATH": f"{self.lib}:{tree}"}
                argv = [str(self.node), str(self.lean_js), "--json", ONE_THREAD, "-R", ".", "-o", str(out), staged_name]
                res = check_result(u.module, str(u.path), run_process(argv, stage / "src", env, timeout), staged_name)
            cache.store(u, res, stage / "out")
            if res.ok:
                link_outputs(stage / "out", tree, u.module)
            return res
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def print_axioms(self, project: Path | None, modules: list[str], theorems: list[str],
                     timeout: float) -> PrintedAxioms:
        return PrintedAxioms(not_run="on wasm every file is a module and Lean refuses #print axioms; "
                                     "the .olean audit stands alone")


def _in_checker(checker: daemon.Session, u: Unit, src: Path, out: Path, tree: Path, timeout: float) -> CheckResult | None:
    """``u``'s verdict from a warm worker of the daemon; None when a fresh process must give it: no daemon
    answers now, or its worker crashed by itself (out of heap, say, after other jobs: not this module's
    verdict). A worker or daemon killed mid-job leaves the module not checked."""
    conn = checker.connection()
    if conn is None:
        return None
    t0 = time.monotonic()
    try:
        run = conn.compile(src, u.module, out, str(tree), timeout)
    except daemon.CheckerLost as exc:
        checker.drop()
        if not exc.killed:
            return None
        return CheckResult(module=u.module, file=str(u.path), ok=False, status="resources", cause="killed",
                           exit_code=None, seconds=time.monotonic() - t0, detail=(
                               f"{u.path.name}: not checked: {exc}; run the command again (a fresh checker starts), "
                               "or with --no-daemon"))
    res = check_result(u.module, str(u.path), run, str(src))
    if res.status == "crashed" or res.cause == "heap" or res.ok and not out.is_file():
        return None
    return res


def find_wasm() -> WasmBackend | None:
    installed = find_installed()
    return None if installed is None else WasmBackend(installed)
