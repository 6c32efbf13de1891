"""``pycert prove``: run the pipeline for all families or one, and write the certificates."""

from __future__ import annotations

import argparse

from pycert import prove
from pycert.cli import add_backend, add_common, report_error
from pycert.core.console import Progress, emit, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, EXIT_RESOURCES
from pycert.families import FAMILIES
from pycert.lean import build


def register(sub: argparse._SubParsersAction) -> None:
    from pycert.core.limits import MAX_SHARD_REFS, in_path, int_range, out_dir, seconds

    p = sub.add_parser("prove", help="build, solve, kernel-check, audit and write certificates")
    p.add_argument("family", choices=("all", *FAMILIES), help="which family (or all)")
    p.add_argument("--trace", type=in_path, action="append", default=[], metavar="PATH",
                   help="also certify the hit ceiling of this trace (repeatable); default: the synthetic trace only")
    p.add_argument("--out", type=out_dir, default=None,
                   help="certificate directory (default: ./certificates, or certificates/ when run from a checkout); "
                        "everything a certificate names is kept under it (emitted Lean, the synthetic trace, the "
                        "pooling instance) except a --trace from outside it, named by its file name")
    p.add_argument("--timeout", type=seconds, default=build.DEFAULT_TIMEOUT, help="seconds per Lean process")
    p.add_argument("--shard-refs", type=int_range(1, MAX_SHARD_REFS), default=None, metavar="N",
                   help="references per shard of a trace (default: chosen from measured memory; a trace that "
                        "fits one Lean process is one file)")
    p.add_argument("--ray-address", default=None, metavar="ADDRESS",
                   help="the Ray cluster that checks the shards of a big trace (default: a local one on this "
                        "machine's cores, started by pycert and stopped when it exits)")
    add_common(p)
    add_backend(p)
    p.set_defaults(func=cmd_prove)


def render(res: prove.ProveResult) -> str:
    stages = table(["stage", "status", "seconds", "detail"],
                   [(s.name, s.status, f"{s.seconds:.1f}", s.detail[:90]) for s in res.stages])
    rows = table(["certificate", "figure", "status", "claim"],
                 [(r.certificate, r.figure, r.status, r.claim[:110]) for r in res.rows])
    verdict = "ALL HOLD" if res.ok else "REJECTED" if res.rejected else "NOT CHECKED"
    unchecked = "".join(f"\nnot checked: {u}" for u in res.unchecked)
    return f"{stages}\n\n{rows}\n\n{verdict}: {len(res.written)} certificates written{unchecked}"


def cmd_prove(args: argparse.Namespace) -> int:
    families = list(FAMILIES) if args.family == "all" else [args.family]
    res = prove.prove(families, args.trace, backend=args.backend, out_dir=args.out, timeout=args.timeout,
                      shard_refs=args.shard_refs, ray_address=args.ray_address,
                      progress=Progress(enabled=not args.json, force=True))
    emit(args.json, res, lambda: render(res))
    if res.rejected:
        return EXIT_REJECTED
    if res.unchecked:  # nothing was refused: a check ran out of memory or time
        if not args.json:
            report_error(res.unchecked[0], None, EXIT_RESOURCES, as_json=False)
        return EXIT_RESOURCES
    return EXIT_OK
