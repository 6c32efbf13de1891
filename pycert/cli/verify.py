"""``pycert verify CERT... [--kernel] [--input NAME=PATH]``: re-check certificates offline.

Exit 0 when every certificate holds, 1 when any is rejected (one line per rejection: the field,
what was expected, what was found; under ``--json`` each a ``Rejection``), even when an input of it
or another is missing; 2 when nothing was rejected but a certificate or an input it names is missing,
malformed or outside the certificate's directory, or an
``--input`` names a file no certificate names; 3 when nothing was rejected but a check did not run to its
end (out of memory or time, or pycert itself failed: NOT CHECKED); 5 when the only thing that stopped a
check is a trace from outside a certificate's directory that is not on this machine ("not checked: trace
not here"; every other certificate holds). For 2, 3 and 5, after the report, one line names the first such
problem (under ``--json``: the error object, with the per-certificate results under ``results``).
"""

from __future__ import annotations

import argparse
import contextlib

from pycert.certify.verify import VerifyResult, refuse_unused_inputs, verify_certificates
from pycert.cli import add_backend, add_common, add_root, help_of
from pycert.core.console import Progress, emit, escaped, out, to_jsonable
from pycert.core.errors import (
    EXIT_NOT_HERE,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_RESOURCES,
    EXIT_USAGE,
    InputError,
    NotHere,
    ResourcesExhausted,
    UsageError,
)
from pycert.core.limits import in_path, seconds
from pycert.lean.scheduler import fresh_build_cache


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "verify", help=help_of("verify"),
        description="Recompute every figure from the named inputs (whose sha256 must match; inputs are read only "
                    "inside the certificate's directory, and an external one where --input puts it or by its file "
                    "name beside that directory), derive the claim, the theorem list, the limits and each figure's evidence again, "
                    "and require every theorem to be a public theorem of pycert's own library with the "
                    "statement its source declares. --kernel also rebuilds, re-audits the named theorems "
                    "and re-pins their statements. 'expected' is the reference (manifest, file on disk, "
                    "recomputed value, the library); 'found' is what the certificate holds.",
    )
    p.add_argument("certs", nargs="+", type=in_path, metavar="CERT", help="certificate JSON files")
    p.add_argument("--kernel", action="store_true",
                   help="also rebuild the library and the certificate's Lean files, re-run the axiom audit on the "
                        "named theorems and recompute their statements and type digests (Lean files unchanged "
                        "since an earlier run are answered from the build cache, $PYCERT_BUILD_CACHE, and the "
                        "result says so)")
    p.add_argument("--fresh", action="store_true",
                   help="with --kernel: an empty build cache for this run, so Lean checks every file again "
                        "(minutes: every module of the library)")
    p.add_argument("--manifest", type=in_path, default=None,
                   help="manifest to check against (default: MANIFEST.sha256 beside each certificate)")
    p.add_argument("--timeout", type=seconds, default=1800.0, help="seconds per Lean file under --kernel")
    add_root(p)
    add_common(p)
    add_backend(p, "Lean backend for --kernel")
    p.set_defaults(func=run)


def exit_code(results: list[VerifyResult]) -> int:
    if any(r.status == "rejected" for r in results):
        return EXIT_REJECTED
    if any(r.status == "not-checked" for r in results):
        return EXIT_RESOURCES
    if any(r.status in ("missing-input", "input-error") for r in results):
        return EXIT_USAGE
    return EXIT_NOT_HERE if any(r.status == "not-here" for r in results) else EXIT_OK


def render(results: list[VerifyResult]) -> str:
    lines = []
    for r in results:  # each path and string from the directory escaped alone: none can start a line or move the cursor
        label = {"ok": "ok", "rejected": "REJECTED", "not-checked": "NOT CHECKED", "missing-input": "MISSING",
                 "input-error": "BAD INPUT", "not-here": "NOT CHECKED"}[r.status]
        cert = escaped(r.certificate)
        lines.append(f"{label:<9} {cert}" + (f"  (checked: {', '.join(r.checked)})" if r.ok else ""))
        lines += [f"  {cert}: {escaped(f.render())}" for f in r.failures]
        lines += [f"  {cert}: {escaped(e)}" for e in [*r.unchecked, *r.errors]]
        lines += [f"  {cert}: missing input: {escaped(m)}" for m in r.missing]
        lines += [f"  {cert}: not checked: {escaped(m)}" for m in r.not_here]
        lines += [f"  note: {escaped(n)}" for n in r.notes]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.fresh and not args.kernel:
        raise UsageError("--fresh only means something with --kernel (a plain verify runs no Lean)", where="--fresh")
    refuse_unused_inputs(dict(args.input), args.certs)
    progress = Progress(enabled=not args.json, force=args.kernel)  # --kernel runs Lean for minutes: say so
    with fresh_build_cache() if args.fresh else contextlib.nullcontext():
        results = verify_certificates(args.certs, root=args.root, manifest=args.manifest, kernel=args.kernel,
                                      backend=args.backend, timeout=args.timeout, inputs=dict(args.input),
                                      progress=progress)
    code = exit_code(results)
    if code not in (EXIT_USAGE, EXIT_RESOURCES, EXIT_NOT_HERE):
        emit(args.json, results, human=lambda: render(results))
        return code
    if not args.json:
        out(render(results))
    statuses = {EXIT_RESOURCES: ("not-checked",), EXIT_USAGE: ("missing-input", "input-error")}.get(code, ("not-here",))
    bad = [r for r in results if r.status in statuses]
    first = bad[0]
    more = f" ({len(bad)} of {len(results)} certificates could not be checked)" if len(results) > 1 else ""
    kind = {EXIT_RESOURCES: ResourcesExhausted, EXIT_USAGE: InputError}.get(code, NotHere)
    err = kind(f"{first.first_problem()}{more}", where=first.certificate)
    err.details = {"results": to_jsonable(results)}
    raise err
