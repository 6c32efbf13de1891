"""Lean modules emitted and checked as Ray tasks: one task per module, on a local cluster that pycert
starts or on an existing one (``address``).

A task is given a function that writes its module's source (a shard's, from that shard's
references alone) and checks it with the build system (:func:`pycert.lean.build.build`, the library
coming from the build cache), so Python's emitting and Lean's checking both spread over the
cluster. Ray schedules the tasks (one core each) and retries a task whose worker was lost or whose
Lean was killed (``max_retries``); Lean running out of heap or time is deterministic and is not
retried, but reported by module. The compiled module lands in the content-addressed build cache,
which every worker must see (on one machine it is the same directory; on a cluster,
``$PYCERT_BUILD_CACHE`` on a shared path): the driver's own build of the module that imports them
then finds every one of them there and checks only that module.
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
from pycert.lean import build
from pycert.lean.diagnostics import CheckResult
from pycert.lean.toolchain import scratch_root

RETRIES = 2
"""Tries after the first for a task whose worker was lost or whose Lean was killed by a signal."""
_PASSED = ("PYCERT_", "XDG_CACHE_HOME")
"""Environment the driver hands its workers: where the caches are, which Lean, how many slots."""


@dataclass(frozen=True)
class Work:
    """One module to emit and check on the cluster."""

    module: str
    make: Callable[[], tuple[str, Any]]
    """Writes the module's Lean source; returns it with whatever the driver needs back (figures)."""
    size: str = ""
    """What the module holds, for progress and messages (e.g. "2,000,000 references")."""


class Outcome(BaseModel):
    module: str
    source: str
    extra: Any = None
    result: CheckResult
    node: str = ""
    tries: int = 1


class LeanKilled(Exception):
    """A worker's Lean was killed by a signal (the out-of-memory killer, maybe): worth another try."""


def _check_one(make: Callable[[], tuple[str, Any]], module: str, backend: str | None, timeout: float) -> dict:
    """The task body: emit, check against the library (from the cache), return the verdict."""
    import ray  # the task runs in a Ray worker, which has it imported already

    text, extra = make()
    stage = Path(tempfile.mkdtemp(prefix="ray-", dir=scratch_root()))
    try:
        path = stage / f"{module}.lean"
        path.write_text(text, encoding="utf-8")
        res = build.build(library=library_dir(), files=[path], backend=backend, timeout=timeout, jobs=1)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    r = next((x for x in res.results if x.module == module), None)
    if r is None:
        raise PycertError(f"{module}: the build did not report it")
    if r.status == "resources" and r.cause == "killed":
        raise LeanKilled(r.detail)
    return {"source": text, "extra": extra, "result": r.model_dump(), "node": ray.get_runtime_context().get_node_id()}


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
    """Join the cluster at ``address``, or start a local one on this machine's cores; what was joined."""
    import ray  # 0.3 s to import, and only a sharded proof needs it

    if ray.is_initialized():
        return "the cluster this process joined before"
    env = {k: v for k, v in os.environ.items() if k.startswith(_PASSED)}
    options: dict[str, Any] = dict(log_to_driver=False, configure_logging=False, runtime_env={"env_vars": env})
    # Ray's driver installs its own SIGTERM handler (a crash dump, exit 1): pycert's (remove the
    # temporaries, exit 143) is put back once the cluster is joined.
    on_term = signal.getsignal(signal.SIGTERM)
    try:
        if address:
            reachable(address)
            ray.init(address=address, **options)
            return f"the Ray cluster at {address}"
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(f"cannot start or join a Ray cluster: {str(exc).splitlines()[0]}",
                         where=f"--ray-address {address}" if address else None) from None
    finally:
        if on_term is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_term)
    return f"a local Ray cluster of {os.cpu_count()} cores"


def check_all(works: Sequence[Work], *, backend: str | None, timeout: float, address: str | None = None,
              progress: Callable[[str], None] = lambda _m: None) -> list[Outcome]:
    """Emit and check every module of ``works`` as Ray tasks; outcomes in the order given. A task that
    failed on every try is reported as its module's verdict, never raised."""
    if address is None and "ray" not in sys.modules:  # Ray's own default for a local cluster, set before Ray reads
        os.environ.setdefault("RAY_AUTH_MODE", "token")  # it at import: otherwise it says so on stderr
    import ray  # see connect

    progress(f"cluster: {connect(address)}")
    task = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=[LeanKilled])(_check_one)
    t0 = time.monotonic()
    pending = {task.remote(w.make, w.module, backend, timeout): i for i, w in enumerate(works)}
    out: dict[int, Outcome] = {}
    while pending:
        try:
            done, _ = ray.wait(list(pending), num_returns=1)
        except SystemError as exc:  # pycert's SIGTERM handler raised inside Ray's C code: it comes back wrapped
            if isinstance(exc.__cause__, Terminated):
                raise exc.__cause__ from None
            raise
        i = pending.pop(done[0])
        w = works[i]
        try:
            got = ray.get(done[0])
            out[i] = Outcome(module=w.module, source=got["source"], extra=got["extra"],
                             result=CheckResult.model_validate(got["result"]), node=got["node"])
        except Exception as exc:  # noqa: BLE001 - Ray wraps what the task raised; each is a verdict on the module
            out[i] = Outcome(module=w.module, source="", result=lost(w, exc), tries=RETRIES + 1)
        progress(f"  {w.module}: {out[i].result.summary()}{', ' + w.size if w.size else ''} "
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
