"""``pycert report``: one static HTML page listing every certificate, with an in-page verifier."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pycert.certify.card import unchecked_label
from pycert.certify.report import report_csv, write_report
from pycert.certify.verify import refuse_unused_inputs
from pycert.cli import add_common, add_root, help_of
from pycert.core.console import Progress, emit, escaped, plural
from pycert.core.errors import UsageError
from pycert.core.extras import MissingExtra, install_hint, missing
from pycert.core.gate import entries
from pycert.core.limits import in_path, out_path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report", help=help_of("report"),
        description="Lists every certificate in the manifest (claim, figures, inputs, limits) with the trace "
                    "engine's hit-rate curve of every trace they name, and a verifier that hashes a dropped "
                    "certificate with the browser's WebCrypto against the manifest. The page makes no "
                    "network requests.",
    )
    p.add_argument("--certs", type=in_path, default=Path("certificates"),
                   help="directory holding the certificates and MANIFEST.sha256 (default: certificates)")
    p.add_argument("--out", type=out_path, default=Path("report.html"), help="page to write (default: report.html)")
    p.add_argument("--no-curves", action="store_true", help="leave out the hit-rate curves (no trace needed)")
    p.add_argument("--csv", action="store_true",
                   help="print the page's tables by cache size as CSV on stdout (one row per cell: its percent, count, "
                        "total, exact fraction and how it is known), in place of writing the page")
    add_root(p)
    add_common(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.csv and args.json:
        raise UsageError("--csv and --json each replace the summary: give one", where="--csv")
    if not args.no_curves and (module := missing("plot")) is not None:
        raise MissingExtra(f"the hit-rate curves need the plot extra ({module} is not installed): "
                           f"{install_hint('plot')}, or give --no-curves", where="pycert report")
    refuse_unused_inputs(dict(args.input), [e.path for e in entries(args.certs, ".json")] if args.certs.is_dir() else [])
    if args.csv:
        text, _, not_verified = report_csv(args.certs, root=args.root, curves=not args.no_curves,
                                           inputs=dict(args.input), progress=Progress(enabled=True))
        for cid, why in not_verified.items():  # stdout is the table: what it leaves out is said on stderr
            sys.stderr.write(escaped(f"pycert: not verified, lends no figure: {cid}: {why}") + "\n")
        emit(False, None, human=lambda: text)
        return 0
    out, count, not_verified = write_report(args.certs, args.out, root=args.root, curves=not args.no_curves,
                                            inputs=dict(args.input), progress=Progress(enabled=not args.json))
    emit(args.json, {"report": str(out), "certificates": count, "not_verified": not_verified},
         human=lambda: render(out, count, not_verified))
    return 0


def render(out: Path, count: int, not_verified: dict[str, str]) -> str:
    if not not_verified:
        return f"wrote {escaped(out)} ({plural(count, 'certificate')}, {'each ' if count > 1 else ''}verified offline)"
    here = {c: why for c, why in not_verified.items() if unchecked_label(why) == "NOT CHECKED"}
    shown = ", ".join(part for part in (
        f"{len(here)} shown marked NOT CHECKED (a trace not on this machine)" if here else "",
        f"{len(not_verified) - len(here)} shown marked NOT VERIFIED" if len(here) < len(not_verified) else "") if part)
    return "\n".join([f"wrote {escaped(out)} ({plural(count, 'certificate')}: {count - len(not_verified)} verified "
                      f"offline, {shown})",
                      *(f"  {'not checked' if c in here else 'not verified'}: {c}: {escaped(why)}"
                        for c, why in not_verified.items())])
