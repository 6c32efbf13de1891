"""Lean modules emitted and checked as Ray tasks: one task per module, on a local cluster that pycert
starts (bound to the loopback) or on an existing one (``address``).

A task is given a function that writes its module's source (a shard's, from that shard's
references alone) and checks it with the build system (:func:`pycert.lean.build.build`), so Python's
emitting and Lean's checking both spread over the cluster. Ray schedules the tasks (one core each)
and retries a task whose worker was lost or whose Lean was killed (``max_retries``); Lean running
out of heap or time is deterministic and is not retried, but reported by module.

Nothing travels through a shared disk: the driver builds the library first and puts its compiled
files in Ray's object store once; each task seeds its own machine's build cache from them, and returns
its module's compiled files and verdict as its result, which the driver puts into its own build cache
under the key it derives itself (a machine with another library or toolchain is refused). The driver's
build of the module that imports them then finds every one of them there and checks only that module.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pycert.core.errors import InputError, PycertError, Terminated
from pycert.core.resources import library_dir
from pycert.lean import build, daemon, scheduler
from pycert.lean.backend import Backend
from pycert.lean.diagnostics import CheckResult
from pycert.lean.emit.packed_trace import check_module
from pycert.lean.resolve import resolve
from pycert.lean.sources import file_units, library_units
from pycert.lean.toolchain import scratch_root

LOOPBACK = "127.0.0.1"
RETRIES = 2
"""Tries after the first for a task whose worker was lost or whose Lean was killed by a signal."""
_PASSED = ("PYCERT_", "XDG_CACHE_HOME", "TMPDIR")
"""Environment the driver hands the workers of a local cluster (the same machine): where the caches are,
which Lean, how many slots. The nodes of an existing cluster keep their own."""


@dataclass(frozen=True)
class Work:
    """One module to emit and check on the cluster."""

    module: str
    make: Callable[[], tuple[str, Any]]
    """Writes the module's Lean source; returns it with whatever the driver needs back (figures)."""
    size: str = ""
    """What the module holds, for progress and messages (e.g. "2,000,000 references")."""
    weight: int = 1
    """Its expected cost (references), by which :func:`check_all` deals grouped modules to tasks."""


class Outcome(BaseModel):
    module: str
    source: str
    extra: Any = None
    result: CheckResult
    node: str = ""
    tries: int = 1


class TaskResult(BaseModel):
    """What a task sends back through the object store: the module's source and verdict, its compiled
    files (none from a backend that keeps its own build tree), the node that checked it."""

    source: str
    extra: Any = None
    result: CheckResult
    entry: scheduler.CacheEntry | None
    node: str


class LeanKilled(Exception):
    """A worker's Lean was killed by a signal (the out-of-memory killer, maybe): worth another try."""


def _check_many(items: list[tuple[Callable[[], tuple[str, Any]], str]], backend: str | None, timeout: float,
                library: list[scheduler.CacheEntry]) -> list[TaskResult]:
    """The task body: seed this machine's build cache with the library, emit each module, check them against
    it in one build (one thread: one Lean worker, or the warm checker, takes them one after another), and
    return each verdict with the module's compiled files."""
    import ray  # the task runs in a Ray worker, which has it imported already

    chosen = resolve(backend)
    identity = chosen.cache_identity()
    if identity is not None:
        scheduler.import_entries(scheduler.BuildCache(identity, library_units(library_dir())), library)
    made = [(module, *make()) for make, module in items]
    stage = Path(tempfile.mkdtemp(prefix="ray-", dir=scratch_root()))
    try:
        paths = []
        for module, text, _ in made:
            paths.append(stage / f"{module}.lean")
            paths[-1].write_text(text, encoding="utf-8")
        res = build.build(library=library_dir(), files=paths, backend=chosen, timeout=timeout, jobs=1,
                          daemon=daemon.enabled())
        verdicts = {x.module: x for x in res.results}
        if missing := [module for module, _, _ in made if module not in verdicts]:
            raise PycertError(f"{missing[0]}: the build did not report it")
        if killed := [verdicts[m].detail for m, _, _ in made if verdicts[m].status == "resources"
                      and verdicts[m].cause == "killed"]:
            raise LeanKilled(killed[0])
        entries: dict[str, scheduler.CacheEntry] = {}
        if identity is not None:
            cache = scheduler.BuildCache(identity, library_units(library_dir()) + file_units(paths))
            entries = {e.module: e for e in scheduler.export_entries(cache, [m for m, _, _ in made])}
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    node = ray.get_runtime_context().get_node_id()
    return [TaskResult(source=text, extra=extra, result=verdicts[module], entry=entries.get(module), node=node)
            for module, text, extra in made]


TASK_MODULES = 8
"""The most modules a grouped task checks: its progress line comes when it ends, and its Lean worker grows
120-150 MiB a host instance of the conversation trace (retired past 2,800 MiB: DEVELOPERS.md)."""


def groups(weights: Sequence[int], slots: int, most: int = TASK_MODULES) -> list[list[int]]:
    """Indices dealt into ``slots`` groups (more where ``most`` a group would not hold them all), heaviest first,
    each to the lightest group so far that holds fewer than ``most`` (longest processing time first): on a
    cluster of as many cores as modules each module is a task of its own."""
    n = len(weights)
    count = max(1, min(slots, n), -(-n // most))
    loads = [0] * count
    out: list[list[int]] = [[] for _ in range(count)]
    for i in sorted(range(n), key=lambda i: -weights[i]):
        g = min((g for g in range(count) if len(out[g]) < most), key=lambda g: (loads[g], g))
        loads[g] += weights[i]
        out[g].append(i)
    return [g for g in out if g]


def _library(backend: Backend, progress: Callable[[str], None]) -> list[scheduler.CacheEntry]:
    """The library, built here (from the cache when it can), as the entries every task seeds its cache with."""
    identity = backend.cache_identity()
    if identity is None:
        return []
    units = library_units(library_dir())
    res = build.build(library=library_dir(), backend=backend, progress=lambda m: progress("  " + m))
    if not res.ok:
        bad = ", ".join(f"{r.module} ({r.status})" for r in res.results if not r.ok)
        raise PycertError(f"the Lean library does not build: {bad}")
    return scheduler.export_entries(scheduler.BuildCache(identity, units), [u.module for u in units])


def _keep(backend: Backend, module: str, source: str, entry: scheduler.CacheEntry | None) -> None:
    """Put a task's compiled module into this machine's build cache, under the key derived here."""
    identity = backend.cache_identity()
    if identity is None or entry is None:
        return
    stage = Path(tempfile.mkdtemp(prefix="ray-", dir=scratch_root()))
    try:
        path = stage / f"{module}.lean"
        path.write_text(source, encoding="utf-8")
        scheduler.import_entries(scheduler.BuildCache(identity, library_units(library_dir()) + file_units([path])), [entry])
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def reachable(address: str, timeout: float = 10.0) -> None:
    """Refuse, in seconds, a ``HOST:PORT`` (or ``ray://HOST:PORT``) that accepts no connection: Ray itself
    retries an unreachable head for minutes before it gives up."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", "local" and the like: Ray's own answer
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot reach the Ray cluster: {getattr(exc, 'strerror', None) or exc}",
                         where=f"--ray-address {address}") from None


def connect(address: str | None) -> str:
    """Join the cluster at ``address``, or start a local one on this machine's cores whose every port
    (GCS, raylet, workers, object manager) listens on the loopback, with no dashboard; what was joined."""
    if address is None and "ray" not in sys.modules:  # read by Ray at import: set them before
        os.environ.setdefault("RAY_AUTH_MODE", "token")  # Ray's default for a local cluster (else it says so)
        # Ray binds its servers to the node's IP, and resolves 127.0.0.1 to the machine's outward address
        # unless clusters are off, as on macOS and Windows: then a local cluster stays on the loopback.
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    # pycert reads every task's result and reports the first error in one line; the errors of tasks left
    # unread behind it are not news, and Ray would print each as an "Unhandled error" traceback
    os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
    import ray  # 0.3 s to import, and only a sharded proof needs it

    if ray.is_initialized():
        return "the cluster this process joined before"
    env = {k: v for k, v in os.environ.items() if k.startswith(_PASSED)} if address is None else {}
    options: dict[str, Any] = dict(log_to_driver=False, configure_logging=False, runtime_env={"env_vars": env})
    # Ray's driver installs its own SIGTERM handler (a crash dump, exit 1): pycert's (remove the
    # temporaries, exit 143) is put back once the cluster is joined.
    on_term = signal.getsignal(signal.SIGTERM)
    try:
        if address:
            reachable(address)
            ray.init(address=address, **options)
            return f"the Ray cluster at {address}"
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, _node_ip_address=LOOPBACK, **options)
        if (ip := ray.util.get_node_ip_address()) != LOOPBACK:
            ray.shutdown()
            raise InputError(f"the local Ray cluster would listen on {ip}, not on the loopback: start pycert "
                             "in a fresh process, or start a cluster yourself and pass --ray-address")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(f"cannot start or join a Ray cluster: {str(exc).splitlines()[0]}",
                         where=f"--ray-address {address}" if address else None) from None
    finally:
        if on_term is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_term)
    return f"a local Ray cluster of {os.cpu_count()} cores on {LOOPBACK}"


def check_all(works: Sequence[Work], *, backend: str | None, timeout: float, address: str | None = None,
              progress: Callable[[str], None] = lambda _m: None, grouped: bool = False) -> list[Outcome]:
    """Emit and check every module of ``works`` as Ray tasks, one task a module; with ``grouped``, as many
    tasks as the cluster has cores (more where each would check over :data:`TASK_MODULES`), the modules dealt
    to them by weight (:func:`groups`), so that a
    task's later modules go to a Lean worker it has warmed (or the warm checker's) rather than each paying
    a process's start (a fleet's hosts: DEVELOPERS.md, "A fleet's Lean work"). Outcomes in the order given.
    A task that failed on every try is reported as its modules' verdict, never raised."""
    for w in works:  # a name a task could not write is refused here, before any task runs
        check_module(w.module)
    chosen = resolve(backend)
    progress("library, for the cluster's tasks ...")
    library = _library(chosen, progress)
    progress(f"cluster: {connect(address)}")
    import ray  # see connect

    task = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=[LeanKilled])(_check_many)
    slots = int(ray.cluster_resources().get("CPU", 1)) if grouped else len(works)
    t0 = time.monotonic()
    shipped = ray.put(library)
    pending = {task.remote([(works[i].make, works[i].module) for i in g], backend, timeout, shipped): g
               for g in groups([w.weight for w in works], slots)}
    out: dict[int, Outcome] = {}
    while pending:
        try:
            done, _ = ray.wait(list(pending), num_returns=1)
        except SystemError as exc:  # pycert's SIGTERM handler raised inside Ray's C code: it comes back wrapped
            if isinstance(exc.__cause__, Terminated):
                raise exc.__cause__ from None
            raise
        group = pending.pop(done[0])
        try:
            got = [TaskResult.model_validate(r) for r in ray.get(done[0])]
        except Exception as exc:  # noqa: BLE001 - Ray wraps what the task raised; each is a verdict on its modules
            try:
                for i in group:
                    out[i] = Outcome(module=works[i].module, source="", result=lost(works[i], exc), tries=RETRIES + 1)
            except PycertError:  # the run ends on it: the other tasks' work is for nothing
                for ref in pending:
                    ray.cancel(ref, force=True)
                raise
        else:
            for i, r in zip(group, got):
                _keep(chosen, works[i].module, r.source, r.entry)
                out[i] = Outcome(module=works[i].module, source=r.source, extra=r.extra, result=r.result, node=r.node)
        for i in group:
            w = works[i]
            progress(f"  {w.module}: {out[i].result.summary()}{', ' + w.size if w.size else ''}"
                     f"{' on node ' + out[i].node[:12] if out[i].node else ''} "
                     f"[{len(out)} of {len(works)} done, {time.monotonic() - t0:.0f} s]")
    return [out[i] for i in range(len(works))]


def lost(w: Work, exc: BaseException) -> CheckResult:
    """The verdict on a module whose task failed on every try: killed or lost is a failure of resources
    (nothing was refused); anything else is a crash, named."""
    import ray  # see connect

    cause = getattr(exc, "cause", None)
    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(cause, PycertError):
        raise cause
    first = (str(cause or exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
    killed = isinstance(cause, LeanKilled) or isinstance(exc, (ray.exceptions.WorkerCrashedError,
                                                              ray.exceptions.OutOfMemoryError,
                                                              ray.exceptions.NodeDiedError))
    detail = (f"{w.module}{' (' + w.size + ')' if w.size else ''}: lost on every one of {RETRIES + 1} tries "
              f"({type(cause or exc).__name__}: {first})")
    return CheckResult(module=w.module, file=f"{w.module}.lean", ok=False, exit_code=None, seconds=0.0,
                       status="resources" if killed else "crashed", cause="killed" if killed else None, detail=detail)
