"""The build system's machinery, below the backends that use it: units in import order (``graphlib``),
independent ones in parallel up to the core count, a unit whose import failed skipped, not run
(:func:`schedule`); and the content cache (:class:`BuildCache`), which keeps every compiled module under
a key that hashes its source, the keys of the project modules it imports and the backend's identity, so
an unchanged module is never rebuilt (the wasm backend uses it; Lake keeps its own). Deterministic
failures are cached too: an unchanged mutated module is not re-run by the next mutation campaign.

:mod:`pycert.lean.build` (the entry points, which pick a backend) sits above the backends;
this module sits below them, so the two never import each other in a circle.
"""

from __future__ import annotations

import contextlib
import graphlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from pycert.core.console import plural
from pycert.core.errors import InputError
from pycert.core.files import link_or_copy, publish_dir
from pycert.core.resources import cache_dir, scratch_root
from pycert.lean.diagnostics import CheckResult
from pycert.lean.process import stopping
from pycert.lean.sources import Unit, module_path

OLEAN_SUFFIXES = (".olean", ".olean.private", ".olean.server", ".ilean", ".ir")


# ---------------------------------------------------------------------------- order


def project_deps(units: list[Unit]) -> dict[str, list[str]]:
    names = {u.module for u in units}
    return {u.module: [i for i in u.imports if i in names] for u in units}


def topo_order(deps: dict[str, list[str]]) -> list[str]:
    """Modules ordered so each comes after the project modules it imports; a cycle is an input error."""
    try:
        return list(graphlib.TopologicalSorter(deps).static_order())
    except graphlib.CycleError as exc:
        raise InputError("import cycle: " + " -> ".join(reversed(exc.args[1]))) from None


@contextlib.contextmanager
def _interruptible(pool: ThreadPoolExecutor) -> Iterator[None]:
    """On Ctrl-C or SIGTERM in the main thread: drop queued units, kill the running Lean processes and
    keep the ones waiting for a slot from starting, so the pool's exit does not wait for any Lean run."""
    try:
        yield
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        with stopping():
            pool.shutdown(wait=True)
        raise


def schedule(units: list[Unit], jobs: int, compile_unit: Callable[[Unit], CheckResult],
             progress: Callable[[str], None]) -> list[CheckResult]:
    """Every unit's verdict, compiling each once what it imports has compiled, ``jobs`` at a time."""
    by_name = {u.module: u for u in units}
    deps = project_deps(units)
    order = topo_order(deps)
    sorter = graphlib.TopologicalSorter(deps)
    sorter.prepare()
    results: dict[str, CheckResult] = {}
    running: dict[Future[CheckResult], str] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool, _interruptible(pool):
        while sorter.is_active():
            for m in sorter.get_ready():
                bad = [d for d in deps[m] if not results[d].ok]
                if bad:
                    results[m] = CheckResult(module=m, file=str(by_name[m].path), ok=False, status="skipped",
                                             exit_code=None, seconds=0.0, detail=f"not built: {', '.join(bad)} failed")
                    progress(f"{m}: skipped ({', '.join(bad)} failed)")
                    sorter.done(m)
                else:
                    running[pool.submit(compile_unit, by_name[m])] = m
            if running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    m = running.pop(fut)
                    results[m] = fut.result()
                    sorter.done(m)
    return [results[m] for m in order]


# ---------------------------------------------------------------------------- the cache


def cache_key(identity: str, module: str, source: bytes, dep_keys: Iterable[str]) -> str:
    h = hashlib.sha256()
    for part in (identity.encode(), module.encode(), source, *(k.encode() for k in dep_keys)):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def link_outputs(src_dir: Path, dst_dir: Path, module: str) -> None:
    """Link (or copy) a module's compiled files from one olean tree into another."""
    rel = module_path(module)
    for suffix in OLEAN_SUFFIXES:
        src = src_dir / rel.with_name(rel.name + suffix)
        if src.exists():
            dst = dst_dir / rel.with_name(rel.name + suffix)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.unlink(missing_ok=True)
            link_or_copy(src, dst)


def build_cache_dir() -> Path:
    """Compiled modules by content key: ``$PYCERT_BUILD_CACHE``, else ``<cache>/build``."""
    return Path(os.environ.get("PYCERT_BUILD_CACHE") or cache_dir() / "build")


@contextlib.contextmanager
def fresh_build_cache() -> Iterator[Path]:
    """An empty build cache while the block runs (``$PYCERT_BUILD_CACHE`` pointed at a new directory
    beside the olean trees, so links work, and removed after): Lean checks every module again."""
    before = os.environ.get("PYCERT_BUILD_CACHE")
    fresh = Path(tempfile.mkdtemp(prefix="build-fresh-", dir=scratch_root()))
    os.environ["PYCERT_BUILD_CACHE"] = str(fresh)
    try:
        yield fresh
    finally:
        if before is None:
            os.environ.pop("PYCERT_BUILD_CACHE", None)
        else:
            os.environ["PYCERT_BUILD_CACHE"] = before
        shutil.rmtree(fresh, ignore_errors=True)


def cache_note(results: Sequence[CheckResult]) -> str | None:
    """How many of ``results`` the build cache answered, and what that means; None when Lean ran on all."""
    cached = sum(r.cached for r in results)
    if not cached:
        return None
    return (f"{cached} of {plural(len(results), 'Lean file')} answered from the build cache ({build_cache_dir()}): the "
            "verdicts Lean gave earlier for the same source, imports and toolchain")


class BuildCache:
    """Verdicts and compiled files by content key (:func:`cache_key`)."""

    def __init__(self, identity: str, units: list[Unit], root: Path | None = None) -> None:
        self.root = root or build_cache_dir()
        deps = project_deps(units)
        by_name = {u.module: u for u in units}
        self.keys: dict[str, str] = {}
        for m in topo_order(deps):
            self.keys[m] = cache_key(identity, m, by_name[m].path.read_bytes(), [self.keys[d] for d in deps[m]])

    def has(self, unit: Unit) -> bool:
        """Whether the cache holds a verdict on ``unit``."""
        return (self.root / self.keys[unit.module] / "result.json").is_file()

    def lookup(self, unit: Unit, tree: Path) -> CheckResult | None:
        """The cached verdict on ``unit``, its compiled files linked into ``tree``; None when not cached."""
        entry = self.root / self.keys[unit.module]
        meta = entry / "result.json"
        if not meta.exists():
            return None
        link_outputs(entry, tree, unit.module)
        res = CheckResult.model_validate_json(meta.read_text())
        return res.model_copy(update={"cached": True, "file": str(unit.path)})

    def store(self, unit: Unit, result: CheckResult, outputs: Path) -> None:
        """Keep a deterministic verdict (ok or failed; never a timeout or a crash) with its compiled files."""
        if result.status not in ("ok", "failed"):
            return

        def fill(entry: Path) -> None:
            link_outputs(outputs, entry, unit.module)
            (entry / "result.json").write_text(result.model_dump_json())

        publish_dir(self.root / self.keys[unit.module], fill)


class CacheEntry(BaseModel):
    """One module's build-cache entry as bytes, to send to another machine (a Ray task's result through
    the object store, or the library the driver hands its tasks): no shared disk needed."""

    module: str
    key: str
    files: dict[str, bytes]
    """Path in the entry (``result.json``, ``Pycert/Lists.olean``, ...) -> its bytes."""


def export_entries(cache: BuildCache, modules: Iterable[str]) -> list[CacheEntry]:
    """The entries ``cache`` holds for ``modules`` (a module it has no verdict for is left out)."""
    out = []
    for m in modules:
        entry = cache.root / cache.keys[m]
        if (entry / "result.json").is_file():
            out.append(CacheEntry(module=m, key=cache.keys[m], files={
                f.relative_to(entry).as_posix(): f.read_bytes() for f in entry.rglob("*") if f.is_file()}))
    return out


def import_entries(cache: BuildCache, entries: Iterable[CacheEntry]) -> list[str]:
    """Put ``entries`` into ``cache`` where it lacks them; each must have the key this cache derives for its
    module from its own sources (a machine with another library or toolchain is refused, naming it)."""
    added = []
    for e in entries:
        if cache.keys.get(e.module) != e.key:
            raise InputError(f"{e.module}: built from other sources or with another Lean toolchain than this "
                             "machine's (each machine must run the same pycert and toolchain)")
        target = cache.root / e.key
        if (target / "result.json").is_file():
            continue

        def fill(entry: Path, files: dict[str, bytes] = e.files) -> None:
            for name, data in files.items():
                rel = PurePosixPath(name)
                if rel.is_absolute() or any(part in ("", ".", "..") for part in rel.parts):
                    raise InputError(f"a cache entry holds a file named {name!r}", where=e.module)
                (entry / rel).parent.mkdir(parents=True, exist_ok=True)
                (entry / rel).write_bytes(data)

        if publish_dir(target, fill):
            added.append(e.module)
    return added


def prune_old_trees(root: Path, max_age_s: float = 86400.0) -> None:
    """Olean trees are per build (a later audit reads them); drop the ones nobody can still want."""
    now = time.time()
    for d in root.glob("oleans-*"):
        try:
            if now - d.stat().st_mtime > max_age_s:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass
