"""``pycert audit``: the axiom-free audit of what the kernel accepted (the compiled .olean files).

By default it builds the library under ``lean/`` (and any FILE given: instance files) through the
build system, which answers from its cache when nothing changed, and audits every module built.
``--olean-dir`` audits an existing tree instead. Exit 0 when every theorem passes, 1 when any is
rejected, 2 on bad input. ``--sarif`` also writes a SARIF 2.1.0 log for CI annotations.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pycert.audit import axioms as au
from pycert.audit.sarif import to_sarif
from pycert.cli import add_backend, add_common, help_of
from pycert.core.console import Progress, emit, plural, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, InputError, Rejected
from pycert.core.files import atomic_write
from pycert.core.limits import out_path, seconds
from pycert.core.resources import library_dir
from pycert.lean import build
from pycert.lean.resolve import resolve
from pycert.lean.sources import library_modules, module_name


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help=help_of("audit"))
    p.add_argument("files", nargs="*", type=Path, metavar="FILE", help="instance files to build and audit too")
    p.add_argument("--library", type=Path, default=None, help="library root (default: pycert's own lean/, the installed one or the checkout's)")
    p.add_argument("--olean-dir", type=Path, default=None,
                   help="audit this compiled tree instead of building (modules: --module, else every .olean there)")
    p.add_argument("--module", action="append", default=[], metavar="NAME", help="with --olean-dir: a module to audit")
    p.add_argument("--toolchain-lib", type=Path, default=None,
                   help="the toolchain's .olean library (default: the active backend's)")
    p.add_argument("--sarif", type=out_path, default=None, metavar="OUT", help="also write a SARIF 2.1.0 log here")
    p.add_argument("--timeout", type=seconds, default=build.DEFAULT_TIMEOUT, help="seconds per Lean process")
    add_common(p)
    add_backend(p)
    p.set_defaults(func=cmd_audit)


def tree_modules(olean_dir: Path) -> list[str]:
    """Every module compiled in a tree (``._*`` files are macOS metadata, not modules)."""
    if not olean_dir.is_dir():
        raise InputError("no such directory", where=str(olean_dir))
    return sorted(module_name(olean_dir, p) for p in olean_dir.rglob("*.olean") if not p.name.startswith("._"))


def _from_tree(args: argparse.Namespace, library: Path) -> tuple[au.AuditReport, dict[str, Path]]:
    modules = args.module or tree_modules(args.olean_dir)
    if not modules:
        raise InputError("no .olean files to audit", where=str(args.olean_dir))
    lib = args.toolchain_lib or resolve(args.backend).toolchain_library()
    sources = library_modules(library) if library.is_dir() else {}
    sources.update({p.stem: p for p in args.files})
    declared = au.module_declarations({m: sources[m] for m in modules if m in sources})
    report = au.audit_modules(modules, [args.olean_dir, lib], declared_theorems=declared)
    return report, sources


def _from_build(args: argparse.Namespace, library: Path) -> tuple[au.AuditReport, dict[str, Path]]:
    backend = resolve(args.backend)
    res = build.build(library=library if library.is_dir() else None, files=args.files, backend=backend,
                      timeout=args.timeout, progress=Progress(enabled=not args.json))
    if not res.ok:
        bad = ", ".join(f"{r.module} ({r.status})" for r in res.results if not r.ok)
        raise Rejected(f"the kernel rejected {bad}: fix that first (`pycert build`)")
    report = au.audit_build(res, backend, library)
    return report, {r.module: Path(r.file) for r in res.results}


def render(report: au.AuditReport) -> str:
    lines = []
    if report.findings:
        rows = [(f.subject, f.constant, f.reason, f"{f.module}:{f.line}" if f.line else f.module or "-",
                 " -> ".join(f.chain)) for f in report.findings]
        lines.append(table(["declaration", "offending constant", "why", "where", "path"], rows))
    rows = [(m.module, m.theorems, m.level) for m in report.modules]
    lines.append(table(["module", "theorems", "read from"], rows))
    lines.append(
        f"{'PASS' if report.ok else 'FAIL'}: {plural(report.declarations_audited, 'theorem')} audited, "
        f"{plural(report.constants_walked, 'constant')} walked in {plural(report.modules_loaded, 'module')}, "
        f"axioms seen: {', '.join(report.axioms_seen) or 'none'}, {report.seconds:.2f} s "
        f"({report.trusted_toolchain_bodies} toolchain bodies taken on trust: the toolchain ships no .olean.private)"
    )
    lines.append(f"#print axioms cross-check: {report.cross_check}")
    return "\n".join(lines)


def cmd_audit(args: argparse.Namespace) -> int:
    library = args.library or library_dir()
    if args.module and args.olean_dir is None:
        raise InputError("--module needs --olean-dir")
    report, sources = _from_tree(args, library) if args.olean_dir else _from_build(args, library)
    if args.sarif:
        atomic_write(args.sarif, (to_sarif(report, sources, root=Path.cwd()).dump() + "\n").encode("utf-8"))
    emit(args.json, report, lambda: render(report))
    return EXIT_OK if report.ok else EXIT_REJECTED
