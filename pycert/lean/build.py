"""The build's entry points: Lean modules compiled in import order on whichever backend, with a content cache.

:func:`build` picks a backend (:func:`pycert.lean.resolve.resolve`) and compiles the library under
``lean/`` (if given) and standalone files against it, in one dependency graph; the backend runs it with
the machinery of :mod:`pycert.lean.scheduler` (order, parallel scheduling, the content cache).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from pycert.core.resources import library_dir
from pycert.lean.backend import Backend, BuildOptions, Kind
from pycert.lean.diagnostics import CheckResult
from pycert.lean.resolve import resolve
from pycert.lean.sources import file_units, library_units, parse_imports

DEFAULT_TIMEOUT = 1800.0


class BuildResult(BaseModel):
    ok: bool
    backend: Kind
    results: list[CheckResult]
    olean_dir: str
    """A directory holding ``<Module/Path>.olean`` for every module built (for imports and the audit)."""
    seconds: float

    def by_module(self) -> dict[str, CheckResult]:
        return {r.module: r for r in self.results}


# ---------------------------------------------------------------------------- entry points


def build(
    library: Path | None = None,
    files: Sequence[Path] = (),
    backend: str | Backend | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> BuildResult:
    """Build the library under ``library`` (if given) and check ``files`` against it, in one DAG."""
    chosen = resolve(backend)
    t0 = time.monotonic()
    units = (library_units(library) if library else []) + file_units(files)
    options = BuildOptions(jobs=max(1, jobs or os.cpu_count() or 1), timeout=timeout,
                           progress=progress or (lambda _m: None))
    results, tree = chosen.build(library, units, options)
    return BuildResult(ok=all(r.ok for r in results), backend=chosen.kind, results=results, olean_dir=str(tree),
                       seconds=time.monotonic() - t0)


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
