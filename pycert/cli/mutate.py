"""``pycert mutate``: plant defects in every checker's input and show that each checker rejects them.

Exit 0 when the campaign ran; with ``--expect-reject``, exit 1 when any mutant survived, timed out
or crashed its checker (they are listed), else 2 when a checker could not run here (chromium
missing: its mutants are "not run", which is no rejection and no kill), else 0. Exit 2 on bad input
too. ``--report`` writes the JSON report in the shape of Stryker's mutation-testing-report-schema.
"""

from __future__ import annotations

import argparse
import json

from pycert.cli import add_backend, add_common, help_of
from pycert.core.console import Progress, emit
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, ToolchainMissing
from pycert.core.extras import require
from pycert.core.files import atomic_write
from pycert.core.limits import out_path, seconds
from pycert.core.resources import data_root
from pycert.mutation import operators
from pycert.mutation.campaign import run_campaign
from pycert.mutation.report import render, to_stryker


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mutate", help=help_of("mutate"))
    p.add_argument("--expect-reject", action="store_true",
                   help="exit 1 unless every (non-equivalent) mutant is killed for its expected reason")
    p.add_argument("--only", action="append", default=None, metavar="CLASS",
                   choices=[o.name for o in operators.OPERATORS], help="run only this operator class (repeatable)")
    p.add_argument("--report", type=out_path, default=None, metavar="OUT",
                   help="write the Stryker-schema JSON report here")
    p.add_argument("--timeout", type=seconds, default=900.0, help="seconds per Lean process")
    add_common(p)
    add_backend(p)
    p.set_defaults(func=cmd_mutate)


def cmd_mutate(args: argparse.Namespace) -> int:
    require("prove", "pycert mutate")
    report = run_campaign(data_root(), backend=args.backend, only=set(args.only) if args.only else None, timeout=args.timeout,
                          progress=Progress(enabled=not args.json))
    data = {"summary": report.summary(), "outcomes": [o.model_dump() for o in report.outcomes]}
    incomplete = args.expect_reject and not report.failing and report.not_run_line()
    if not (incomplete and args.json):  # else the results go in the one error object
        emit(args.json, data, lambda: render(report, not_run=not incomplete))  # first: an unwritable --report must not lose the results
    if args.report:
        atomic_write(args.report, (json.dumps(to_stryker(report, data_root()), indent=2) + "\n").encode())
    if args.expect_reject and report.failing:
        return EXIT_REJECTED
    if incomplete:
        err = ToolchainMissing(report.not_run_line())
        err.details = data
        raise err
    return EXIT_OK
