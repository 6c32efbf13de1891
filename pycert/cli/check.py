"""``pycert check`` and ``pycert build``: run Lean files or the library on the chosen backend."""

from __future__ import annotations

import argparse
from pathlib import Path

from pycert.cli import add_backend, add_common, help_of
from pycert.core.console import Progress, emit, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, EXIT_RESOURCES
from pycert.core.limits import in_path, int_range, seconds
from pycert.core.resources import library_dir
from pycert.lean import build


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("check", help=help_of("check"))
    c.add_argument("files", nargs="+", type=in_path, metavar="FILE")
    _options(c)
    c.set_defaults(func=cmd_check)
    b = sub.add_parser("build", help=help_of("build"))
    b.add_argument("--library", type=Path, default=None, help="library root (default: the repository's lean/)")
    _options(b)
    b.set_defaults(func=cmd_build)


def _options(p: argparse.ArgumentParser) -> None:
    add_common(p)
    add_backend(p)
    p.add_argument("--timeout", type=seconds, default=build.DEFAULT_TIMEOUT, help="seconds per Lean process")
    p.add_argument("--jobs", type=int_range(1, 256), default=None, help="parallel Lean processes (default: core count)")


def cmd_check(args: argparse.Namespace) -> int:
    res = build.check_files(args.files, backend=args.backend, timeout=args.timeout, jobs=args.jobs,
                             progress=Progress(enabled=not args.json))
    return _report(args, res)


def cmd_build(args: argparse.Namespace) -> int:
    res = build.build(library=args.library or library_dir(), backend=args.backend, timeout=args.timeout,
                       jobs=args.jobs, progress=Progress(enabled=not args.json))
    return _report(args, res)


def render(res: build.BuildResult) -> str:
    rows = [(r.module, r.status + (" (cached)" if r.cached else ""), f"{r.seconds:.1f}") for r in res.results]
    lines = [table(["module", "result", "seconds"], rows)]
    for r in res.results:
        lines += [d.render() for d in r.failures]
        if r.detail:
            lines.append(f"{r.file}: {r.detail}")
    lines.append(f"{'ok' if res.ok else 'FAILED'} on {res.backend} in {res.seconds:.1f} s")
    return "\n".join(lines)


def _report(args: argparse.Namespace, res: build.BuildResult) -> int:
    emit(args.json, res, lambda: render(res))
    if res.ok:
        return EXIT_OK
    bad = [r.status for r in res.results if not r.ok]
    if "resources" in bad and set(bad) <= {"resources", "skipped"}:
        return EXIT_RESOURCES  # nothing was refused: a check ran out of memory or time
    return EXIT_REJECTED
