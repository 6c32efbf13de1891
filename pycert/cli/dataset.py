"""``pycert dataset first-touch``: the first-touch dataset made (``--out DIR``) or checked (``--check DIR``).

Exit codes: 0 made, or every row and certificate agrees; 1 a certificate did not hold, or the first
row, cell, file or engine count that disagrees (named: row id, column, expected, found); 2 a missing or
malformed input (the trace, the directory, its log); 3 a Lean check that ran out of memory or time.
"""

from __future__ import annotations

import argparse

from pycert.cli import add_backend, add_common, help_of
from pycert.core.console import Progress, emit, table, to_jsonable
from pycert.core.errors import EXIT_OK, Rejected, UsageError
from pycert.core.limits import in_path, int_range, out_dir, seconds
from pycert.leak.first_touch import MAX_RAMP_BLOCKS, MAX_WORKLOADS

DEFAULT_RAMP_BLOCKS = 9
DEFAULT_TRACE_ROWS = 29


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dataset", help=help_of("dataset"))
    actions = p.add_subparsers(dest="action", metavar="DATASET", parser_class=type(p))
    actions.required = True
    f = actions.add_parser(
        "first-touch", help="first-touch prefill rows: a synthetic ramp on a real engine and Mooncake workloads",
        description="Make the first-touch dataset in DIR (--out): the ramp's rows measured on transformers' engine "
                    "(CPU), the trace's workloads kernel-checked, every row's certificate, first_touch.csv (and "
                    "Parquet where pyarrow is installed), a README card; or check one (--check): every row and "
                    "certificate derived again, exit 0 only if all agree. docs/dataset.md says what each row means.")
    mode = f.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=out_dir, metavar="DIR", help="make the dataset here (replaces an earlier one)")
    mode.add_argument("--check", type=in_path, metavar="DIR", help="check the dataset in DIR")
    mode.add_argument("--reprove", type=in_path, metavar="DIR",
                      help="prove the dataset's certificates in DIR again from its recorded log, without the engine "
                           "(after a change of the Lean library), and write its table again")
    f.add_argument("--trace", type=in_path, default=None, metavar="CONVERSATION",
                   help="the Mooncake conversation trace (JSONL) the Mooncake rows are read off")
    f.add_argument("--ramp-blocks", type=int_range(1, MAX_RAMP_BLOCKS), default=DEFAULT_RAMP_BLOCKS,
                   help=f"with --out: the ramp's blocks of 256 tokens, four rows each (default {DEFAULT_RAMP_BLOCKS})")
    f.add_argument("--trace-rows", type=int_range(0, MAX_WORKLOADS), default=DEFAULT_TRACE_ROWS,
                   help=f"with --out: workloads read off the trace (default {DEFAULT_TRACE_ROWS}; 0: none, no trace)")
    f.add_argument("--seed", type=int_range(0, (1 << 63) - 1), default=0,
                   help="with --out: the model's and the prompts' seed (default 0)")
    f.add_argument("--no-engine", action="store_true",
                   help="with --check: do not run the engine again (the rows are derived from the recorded log)")
    f.add_argument("--kernel", action="store_true",
                   help="with --check: also rebuild every certificate's Lean module and re-run the kernel and the axiom "
                        "audit on it (one build: two instance files), as pycert verify --kernel does")
    f.add_argument("--timeout", type=seconds, default=1800.0, help="seconds per Lean process, or per verify")
    add_common(f)
    add_backend(f)
    f.set_defaults(func=run)


def _refuse(flags: dict[str, bool], mode: str) -> None:
    for flag, given in flags.items():
        if given:
            raise UsageError(f"only with {mode}", where=flag)


def run(args: argparse.Namespace) -> int:
    progress = Progress(enabled=not args.json, force=True)  # minutes of engine and Lean: say so
    plan_flags = {"--ramp-blocks": args.ramp_blocks != DEFAULT_RAMP_BLOCKS,
                  "--trace-rows": args.trace_rows != DEFAULT_TRACE_ROWS, "--seed": args.seed != 0}
    if args.check is not None:
        _refuse(plan_flags, "--out")
        from pycert.dataset.check import check_dataset  # the engine's and the verifier's imports: this mode only

        res = check_dataset(args.check, args.trace, engine=not args.no_engine, kernel=args.kernel,
                            backend=args.backend, timeout=args.timeout, progress=progress)
        if res.rejection is not None:
            err = Rejected(res.rejection)
            err.details = {"result": to_jsonable(res)}
            raise err
        emit(args.json, res, lambda: "\n".join([f"AGREES: {res.rows} rows of {res.dataset} "
                                                f"(checked: {', '.join(res.checked)})", *(f"note: {n}" for n in res.notes)]))
        return EXIT_OK
    _refuse({"--no-engine": args.no_engine, "--kernel": args.kernel}, "--check")
    from pycert.dataset.build import generate, reprove  # torch, transformers and the build: these modes only

    if args.reprove is not None:
        _refuse(plan_flags, "--out")
        made = reprove(args.reprove, args.trace, backend=args.backend, timeout=args.timeout, progress=progress)
    else:
        made = generate(args.trace, args.out, ramp_blocks=args.ramp_blocks, trace_rows=args.trace_rows,
                        seed=args.seed, backend=args.backend, timeout=args.timeout, progress=progress)
    s = made.summary

    def human() -> str:
        stages = table(["stage", "seconds"], [(k, f"{v:.1f}") for k, v in made.seconds.items()])
        return (f"{stages}\n\nMADE: {made.rows} rows in {made.out}\n"
                f"synthetic rows with first_touch_cut == engine_closed_form_cut: {s.engine_equal} of {s.synthetic}; "
                f"== closed_form_cut: {s.equal} of {s.synthetic}"
                + (f" (they differ at n = {', '.join(map(str, s.differ_at))})" if s.differ_at else "")
                + (f"\nMooncake rows: mean cut {s.mean_cut}, {s.below_floor} of {s.mooncake} below 0.30" if s.mooncake else "")
                + f"\ncheck it: pycert dataset first-touch --check {made.out}"
                + (f" --trace {args.trace}" if s.mooncake else ""))

    emit(args.json, made, human)
    return EXIT_OK
