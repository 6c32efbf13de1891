"""``pycert prove all|FAMILY [options]``: run the pipeline for all families or one, and publish the
certificates. Each family declares its own options (``pycert prove ceiling --trace T``), so an option
a family does not take is a usage error; ``all`` takes every family's."""

from __future__ import annotations

import argparse

from pycert import prove
from pycert.cli import add_backend, add_common, help_of, report_error
from pycert.core.console import Progress, emit, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, EXIT_RESOURCES
from pycert.core.limits import out_dir, seconds
from pycert.lean.build import DEFAULT_TIMEOUT
from pycert.families import FAMILIES, producer

OUT_HELP = ("certificate directory (default: ./certificates, or certificates/ when run from a checkout); "
            "everything a certificate names is kept under it (emitted Lean, the synthetic trace, the pooling "
            "instance) except a --trace from outside it, named by its file name")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prove", help=help_of("prove"))
    families = p.add_subparsers(dest="family", metavar="FAMILY", parser_class=type(p))
    families.required = True
    for name in ("all", *FAMILIES):
        help_ = "every family" if name == "all" else f"the {name} family"
        f = families.add_parser(name, help=help_, description=f"Prove {help_}.")
        for chosen in FAMILIES if name == "all" else (name,):
            producer(chosen).add_options(f)
        f.add_argument("--out", type=out_dir, default=None, help=OUT_HELP)
        f.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, help="seconds per Lean process")
        add_common(f)
        add_backend(f)
        f.set_defaults(func=cmd_prove)


def render(res: prove.ProveResult) -> str:
    stages = table(["stage", "status", "seconds", "detail"],
                   [(s.name, s.status, f"{s.seconds:.1f}", s.detail[:90]) for s in res.stages])
    rows = table(["certificate", "figure", "status", "claim"],
                 [(r.certificate, r.figure, r.status, r.claim[:110]) for r in res.rows])
    verdict = "ALL HOLD" if res.ok else "REJECTED" if res.rejected else "NOT CHECKED"
    unchecked = "".join(f"\nnot checked: {u}" for u in res.unchecked)
    return f"{stages}\n\n{rows}\n\n{verdict}: {len(res.written)} certificates written{unchecked}"


def cmd_prove(args: argparse.Namespace) -> int:
    everything = args.family == "all"
    jobs = [(producer(name), producer(name).options_from(args, everything))
            for name in (FAMILIES if everything else (args.family,))]
    res = prove.prove(jobs, backend=args.backend, out_dir=args.out, timeout=args.timeout,
                      progress=Progress(enabled=not args.json, force=True))
    emit(args.json, res, lambda: render(res))
    if res.rejected:
        return EXIT_REJECTED
    if res.unchecked:  # nothing was refused: a check ran out of memory or time
        if not args.json:
            report_error(res.unchecked[0], None, EXIT_RESOURCES, as_json=False)
        return EXIT_RESOURCES
    return EXIT_OK
