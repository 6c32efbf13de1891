"""The build's entry points: Lean modules compiled in import order on whichever backend, with a content cache.

:func:`build` picks a backend (:func:`pycert.lean.resolve.resolve`) and compiles the library under
``lean/`` (if given) and standalone files against it, in one dependency graph; the backend runs it with
the machinery of :mod:`pycert.lean.scheduler` (order, parallel scheduling, the content cache).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from pycert.core.resources import library_dir, scratch_root
from pycert.lean import batch as batching
from pycert.lean.backend import Backend, BuildOptions, Kind
from pycert.lean.diagnostics import CheckResult
from pycert.lean.resolve import resolve
from pycert.lean.scheduler import BuildCache, project_deps, topo_order
from pycert.lean.sources import file_units, library_units, parse_imports

DEFAULT_TIMEOUT = 1800.0


class BuildResult(BaseModel):
    ok: bool
    backend: Kind
    results: list[CheckResult]
    olean_dir: str
    """A directory holding ``<Module/Path>.olean`` for every module built (for imports and the audit)."""
    seconds: float
    batch_sources: dict[str, str] = {}
    """Batch module -> its source, for the files checked together (:mod:`pycert.lean.batch`)."""

    def by_module(self) -> dict[str, CheckResult]:
        """One verdict per file given (a batched file's is its batch's, its messages on its own lines)."""
        return {r.module: r for r in self.results}

    def compiled(self) -> dict[str, Path]:
        """Every module whose ``.olean`` files the build made, with its source: a batch once, for its files."""
        return {r.compiled_as or r.module: Path(self.batch_sources[r.compiled_as] if r.compiled_as else r.file)
                for r in self.results}


# ---------------------------------------------------------------------------- entry points


def build(
    library: Path | None = None,
    files: Sequence[Path] = (),
    backend: str | Backend | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
    batch: bool = False,
    daemon: bool = False,
) -> BuildResult:
    """Build the library under ``library`` (if given) and check ``files`` against it, in one DAG. With
    ``batch``, small files that import only the library and that the build cache cannot answer are
    checked together, a few to a Lean process (:mod:`pycert.lean.batch`); a batch Lean does not accept
    is checked again file by file, so that each file's verdict is its own. With ``daemon``, the small
    modules go to the warm checker where one is running (:mod:`pycert.lean.daemon`): only for files
    pycert itself wrote, never a stranger's (``pycert verify`` leaves it off)."""
    chosen = resolve(backend)
    t0 = time.monotonic()
    lib = library_units(library) if library else []
    units = lib + file_units(files)
    options = BuildOptions(jobs=max(1, jobs or os.cpu_count() or 1), timeout=timeout,
                           progress=progress or (lambda _m: None), daemon=daemon)
    identity = chosen.cache_identity()
    groups = []
    if batch and identity is not None:
        cache = BuildCache(identity, units)
        groups = batching.plan(units, {u.module for u in units if not cache.has(u)}, {u.module for u in lib},
                               options.jobs)
    if not groups:
        results, tree = chosen.build(library, units, options)
        return BuildResult(ok=all(r.ok for r in results), backend=chosen.kind, results=results, olean_dir=str(tree),
                           seconds=time.monotonic() - t0)
    scratch = Path(tempfile.mkdtemp(prefix="batch-", dir=scratch_root()))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)  # the audit reads the batches' sources
    made = [batching.write(g, scratch) for g in groups]
    batched = {m.module for _, b in made for m in b.members}
    for unit, b in made:
        options.progress(f"{unit.module}: {len(b.members)} files in one Lean module: "
                         + ", ".join(m.module for m in b.members))
    results, tree = chosen.build(library, [u for u in units if u.module not in batched] + [u for u, _ in made], options)
    verdicts = {r.module: r for r in results}
    if refused := [b for _, b in made if not verdicts[b.module].ok]:
        for b in refused:
            options.progress(f"{b.module}: {verdicts[b.module].status}; its files are checked one by one")
        kept = [(u, b) for u, b in made if verdicts[b.module].ok]
        alone = {m.module for b in refused for m in b.members}
        results, tree = chosen.build(library, [u for u in units if u.module not in batched or u.module in alone]
                                     + [u for u, _ in kept], options)
        verdicts, made = {r.module: r for r in results}, kept
    split = {m.module: r for _, b in made for m, r in zip(b.members, batching.split(verdicts[b.module], b))}
    out = [split.get(m) or verdicts[m] for m in topo_order(project_deps(units))]
    return BuildResult(ok=all(r.ok for r in out), backend=chosen.kind, results=out, olean_dir=str(tree),
                       seconds=time.monotonic() - t0, batch_sources={b.module: b.path for _, b in made})


def check_files(
    paths: Sequence[Path], backend: str | Backend | None = None, timeout: float = DEFAULT_TIMEOUT,
    library: Path | None = None, progress: Callable[[str], None] | None = None, jobs: int | None = None,
) -> BuildResult:
    """Check standalone Lean files; when they import the library it is built first (cached)."""
    if library is None and any(
        i == "Pycert" or i.startswith("Pycert.") for p in paths if p.is_file()
        for i in parse_imports(p.read_text(encoding="utf-8"))
    ):
        library = library_dir()
    return build(library=library, files=paths, backend=backend, timeout=timeout, progress=progress, jobs=jobs)
