"""``pycert trace stats|mrc|offload|plot|convert|generate``: exact cache figures of a block-reference trace.

Every analysis takes an optional TRACE in any layout of :mod:`pycert.data.formats` (gzip or zstd too;
``-`` reads stdin); without one it uses the embedded seeded synthetic trace
(:func:`pycert.data.synthetic.default_trace`).
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction
from pathlib import Path

from pydantic import BaseModel

from pycert.analysis.cachesim import HitCurve, lru_hit_curve
from pycert.analysis.stats import TraceStats, trace_stats
from pycert.analysis.offload import offload_report
from pycert.analysis.plot import FORMATS, hit_rate_figure, log_capacities, trace_curves
from pycert.cli import add_common, help_of
from pycert.cli.offload_view import OFFLOAD_HEADROOMS, offload_csv, render_offload
from pycert.core.console import Progress, csv_text, emit, plural, table, warn
from pycert.core.errors import EXIT_OK, InputError, UsageError
from pycert.core.exact import Ratio
from pycert.core.extras import require
from pycert.core.files import atomic_write, special
from pycert.core.limits import (
    MAX_BELADY_POINTS,
    MAX_GENERATE_REQUESTS,
    in_path,
    int_list,
    int_range,
    out_path,
    seed,
)
from pycert.data import synthetic
from pycert.data.convert import SIDECAR, convert, sidecar
from pycert.data.formats import FORMAT_CHOICES
from pycert.data.traces import Trace, coarsen, read_trace


class MrcPoint(BaseModel):
    """Hit figures at one capacity (blocks). Belady (OPT, from the one-pass curve) is absent when it
    was not asked for."""

    capacity: int
    lru_hits: int
    lru_hit_rate: Ratio
    belady_hits: int | None = None
    belady_hit_rate: Ratio | None = None


class MrcResult(BaseModel):
    """``pycert trace mrc``: LRU and Belady/MIN at the listed capacities, the unbounded cache, and with
    ``--all`` both at every capacity: ``lru_hits_at[c]`` for c = 0 .. max_stack_distance and
    ``opt_hits_at[c]`` for c = 0 .. max_opt_stack_distance; beyond its end each stays at
    ``unbounded_hits``. The OPT fields are absent with ``--no-belady``."""

    stats: TraceStats
    max_stack_distance: int
    max_opt_stack_distance: int | None = None
    unbounded_hits: int
    unbounded_hit_rate: Ratio
    points: list[MrcPoint]
    lru_hits_at: list[int] | None = None
    opt_hits_at: list[int] | None = None


class GenerateResult(BaseModel):
    path: str
    seed: int
    stats: TraceStats


def _nonneg_int(text: str) -> int:
    return int_range(0)(text)


def _positive_int(text: str) -> int:
    return int_range(1)(text)


def _capacity_list(text: str) -> list[int]:
    return int_list(0)(text)


def _figure_path(text: str) -> Path:
    """An output path whose suffix names a format the figure can be written in."""
    path = out_path(text)
    if path.suffix.lower().lstrip(".") not in FORMATS:
        raise argparse.ArgumentTypeError(f"{text}: the name must end in {', '.join('.' + f for f in FORMATS)} "
                                         "(the suffix picks the format)")
    return path


def _add_csv(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--csv", action="store_true", help=f"{what} as CSV on stdout (a header row; the figures of --json)")


def _trace_args(p: argparse.ArgumentParser) -> None:
    add_common(p)
    trace_input(p, required=False)
    p.add_argument("--granularity", type=_positive_int, default=1, metavar="K",
                   help="merge K consecutive blocks of a request into one before any figure (default 1)")


def trace_input(p: argparse.ArgumentParser, required: bool) -> None:
    """TRACE, ``--format`` and ``--block-tokens``: how a trace is read, the same for every trace command."""
    default = "" if required else (f" (default: the embedded synthetic trace, seed 0, {synthetic.DEFAULT_REQUESTS} "
                                   "requests)")
    p.add_argument("trace", nargs=None if required else "?", type=in_path, default=None, metavar="TRACE",
                   help="a trace: one JSON request a line (its hash_ids or prompt_token_ids), Mooncake, Qwen-Bailian "
                        f"or AIPerf JSONL, or one id per line; gzip or zstd too; - reads stdin{default}")
    p.add_argument("--format", choices=FORMAT_CHOICES, default="auto",
                   help="the trace's layout (default: auto, by the first line; docs/formats.md)")
    p.add_argument("--block-tokens", type=_positive_int, default=None, metavar="B",
                   help="tokens a block: how prompts' token ids are cut into blocks (default 16); for a layout with "
                        "input_length and hash_ids it must agree with their lengths; for block ids alone it sets it")
    p.add_argument("--sort", action="store_true",
                   help="read the requests in timestamp order, not file order (each request needs a timestamp)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("trace", help=help_of("trace"))
    tsub = p.add_subparsers(dest="action", metavar="ACTION")
    tsub.required = True

    s = tsub.add_parser("stats", help="refs, distinct, cold-miss floor and ceiling (exact rationals)")
    _trace_args(s)
    s.set_defaults(func=cmd_stats)

    m = tsub.add_parser("mrc", help="exact hit rates by capacity: LRU, and the optimum at C blocks of caches that store "
                                    "every miss (Belady's MIN), one pass each; the ceiling")
    _trace_args(m)
    m.add_argument("-c", "--capacity", type=_capacity_list, action="extend", default=None, metavar="N[,N...]",
                   help="capacities in blocks (repeatable; default: powers of 4 until LRU equals unbounded)")
    m.add_argument("--no-belady", action="store_true", help="skip the optimum (Belady's MIN, its one-pass curve)")
    m.add_argument("--all", action="store_true",
                   help="also give the LRU and the optimum's (Belady's MIN) hit count at every capacity (JSON; with "
                        "--csv, a row per capacity)")
    _add_csv(m, "one row per capacity")
    m.set_defaults(func=cmd_mrc)

    o = tsub.add_parser("offload", help="offload report at a GPU capacity in tokens, with the granularity control",
                        description=OFFLOAD_HEADROOMS)
    _trace_args(o)
    o.add_argument("--capacity-tokens", type=_positive_int, required=True, metavar="T",
                   help="GPU KV capacity in tokens")
    o.add_argument("--host-tokens", type=_nonneg_int, default=None, metavar="T",
                   help="host-tier capacity in tokens (default: unbounded)")
    o.add_argument("--control-k", type=_positive_int, default=4, metavar="K",
                   help="granularity-control factor: the report again with K-times larger blocks (1: none; default 4)")
    o.add_argument("--certs", type=in_path, default=None, metavar="DIR",
                   help="certificates of this trace (pycert prove ceiling --trace T --capacity-blocks G): each "
                        "figure they prove, verified offline, is marked kernel-checked (default: every figure computed)")
    _add_csv(o, "one row per figure and block size, with its exact value and evidence")
    o.set_defaults(func=cmd_offload)

    g = tsub.add_parser("plot", help="figure of LRU and the optimum (Belady's MIN) at every capacity, with the ceiling")
    _trace_args(g)
    g.add_argument("-o", "--output", type=_figure_path, default=Path("hit_rates.png"),
                   help="where to write it; .png, .svg or .pdf, as the name says (default hit_rates.png)")
    g.add_argument("--points", type=int_range(0, MAX_BELADY_POINTS), default=12,
                   help="log-spaced capacities whose Belady hit counts the output lists (default 12; 0: none; "
                        f"at most {MAX_BELADY_POINTS}); the plotted line is exact at every capacity")
    g.set_defaults(func=cmd_plot)

    c = tsub.add_parser("convert", help="write any trace as the canonical one-id-per-line file, with its source's sha256")
    add_common(c)
    trace_input(c, required=True)
    c.add_argument("-o", "--output", type=out_path, required=True, metavar="OUT",
                   help=f"the ids file to write; the record of its source goes beside it, to OUT{SIDECAR}")
    c.set_defaults(func=cmd_convert)

    w = tsub.add_parser("generate", help="write a seeded synthetic Mooncake-format trace (shared prefixes, sessions)")
    add_common(w)
    w.add_argument("-o", "--output", type=out_path, required=True, help="JSONL path to write")
    w.add_argument("--seed", type=seed, default=0)
    w.add_argument("--requests", type=int_range(1, MAX_GENERATE_REQUESTS), default=synthetic.DEFAULT_REQUESTS,
                   help=f"requests to generate (default {synthetic.DEFAULT_REQUESTS}, at most {MAX_GENERATE_REQUESTS:,})")
    w.set_defaults(func=cmd_generate)


def load(args: argparse.Namespace, progress: Progress) -> Trace:
    """The trace a command names, read as its flags say (without one: the embedded synthetic trace)."""
    if args.trace is None:
        if args.format not in ("auto", "mooncake"):
            raise InputError(f"the embedded synthetic trace is in the mooncake layout, not {args.format}",
                             where="--format")
        trace = synthetic.default_trace(block_tokens=args.block_tokens)
    else:
        progress(f"reading {args.trace}")
        trace = read_trace(args.trace, args.format, args.block_tokens, args.sort)
        if trace.disorder:
            warn(trace.disorder)
    return coarsen(trace, getattr(args, "granularity", 1))


def _share(count: int, total: int, unit: str) -> str:
    """A share as people read it: the rate, then the count and the total in their unit (never a reduced fraction)."""
    return f"{count / total:.6f} = {count:,} of {total:,} {unit}"


def _stats_rows(st: TraceStats) -> list[tuple[str, str]]:
    shape = f"{st.format}" + (f", {st.requests:,} requests" if st.requests is not None else "")
    shape += f", granularity x{st.granularity}" if st.granularity > 1 else ""
    block = "not known" if st.block_tokens is None else f"{st.block_tokens:,} tokens"
    block += f" ({st.block_rule})" if st.block_rule else " (the layout does not say: give --block-tokens)"
    rows = [("trace", st.name), ("sha256", st.sha256), ("format", shape), ("block size", block),
            ("refs", f"{st.refs:,}"), ("distinct", f"{st.distinct:,}"),
            ("cold-miss floor", _share(st.distinct, st.refs, "block references (first uses)")),
            ("ceiling", _share(st.refs - st.distinct, st.refs, "block references"))]
    if st.reused_tokens is not None and st.prompt_tokens:
        rows.append(("ceiling in tokens", _share(st.reused_tokens, st.prompt_tokens, "prompt tokens")))
    if st.prefix_closed is not None:
        rows.append(("prefix-closed", "yes" if st.prefix_closed else "no"))
    if st.order is not None and st.order != "file":
        rows.append(("request order", st.order if st.order == "timestamp" else "file (timestamps out of order)"))
    if st.sessions is not None or st.hosts is not None:
        rows.append(("sessions, hosts", f"{st.sessions or 0:,}, {st.hosts or 0:,}"))
    if st.tenants is not None:
        rows.append(("tenants", f"{st.tenants.count:,}; cross-tenant references (a block another tenant used "
                                f"before): {st.tenants.cross_tenant_refs:,} of {st.refs:,}"))
        rows += [(f"tenant {t.tenant!r}", f"{plural(t.requests, 'request')}, {plural(t.refs, 'reference')}, "
                                          f"{t.cross_tenant_refs:,} cross-tenant") for t in st.tenants.per_tenant]
    return rows


def cmd_stats(args: argparse.Namespace) -> int:
    st = trace_stats(load(args, Progress(enabled=not args.json)))
    emit(args.json, st, lambda: table(["figure", "value"], _stats_rows(st)))
    return EXIT_OK


def mrc_result(trace: Trace, capacities: list[int] | None, belady: bool, every: bool,
               progress: Progress) -> MrcResult:
    from pycert.analysis.optcurve import (
        opt_hit_curve,  # numba loads only for the commands that need it
    )

    progress(f"LRU stack distances over {trace.n_refs:,} references")
    curve: HitCurve = lru_hit_curve(trace.refs)
    opt: HitCurve | None = None
    if belady:
        progress(f"OPT stack distances over {trace.n_refs:,} references")
        opt = opt_hit_curve(trace.refs)
    if capacities is None:
        capacities = [1]
        while capacities[-1] < curve.max_distance:  # up to the first where LRU is as good as unbounded
            capacities.append(capacities[-1] * 4)
    points = []
    for c in sorted(set(capacities)):
        point = MrcPoint(capacity=c, lru_hits=curve.hits(c), lru_hit_rate=Ratio.of(curve.hit_rate(c)))
        if opt is not None:
            point.belady_hits, point.belady_hit_rate = opt.hits(c), Ratio.of(opt.hit_rate(c))
        points.append(point)
    unbounded = curve.refs - curve.distinct
    return MrcResult(stats=trace_stats(trace), max_stack_distance=curve.max_distance,
                     max_opt_stack_distance=None if opt is None else opt.max_distance, unbounded_hits=unbounded,
                     unbounded_hit_rate=Ratio.of(Fraction(unbounded, curve.refs)), points=points,
                     lru_hits_at=curve.hits_at.tolist() if every else None,
                     opt_hits_at=opt.hits_at.tolist() if every and opt is not None else None)


def _render_mrc(res: MrcResult) -> str:
    rows = [(f"{p.capacity:,}", f"{p.lru_hit_rate.decimal:.6f}", f"{p.lru_hits:,}",
             "-" if p.belady_hit_rate is None else f"{p.belady_hit_rate.decimal:.6f}",
             "-" if p.belady_hits is None else f"{p.belady_hits:,}") for p in res.points]
    opt = "" if res.max_opt_stack_distance is None else f" (OPT {res.max_opt_stack_distance:,})"
    lines = [f"{res.stats.name}: {res.stats.refs:,} refs, {res.stats.distinct:,} distinct, "
             f"max stack distance {res.max_stack_distance:,}{opt}",
             table(["capacity (blocks)", "LRU hit rate", "LRU hits", "optimum storing every miss (Belady)",
                    "its hits"], rows),
             f"the ceiling, the best at any size (a cache of unbounded size): "
             f"{_share(res.unbounded_hits, res.stats.refs, 'block references')} (1 - distinct/refs)",
             "The optimum at C blocks with bypass (a cache that may skip storing a missed block: `pycert prove "
             "capacity`, or `trace offload`) can be higher than the optimum storing every miss."]
    return "\n".join(lines)


def _one_output(args: argparse.Namespace) -> None:
    if args.csv and args.json:
        raise UsageError("--csv and --json each replace the table: give one", where="--csv")


def _rate_cells(hits: int, refs: int) -> tuple[float, str]:
    """``hits / refs`` as :func:`pycert.cli.offload_view.cells` gives a :class:`Ratio` of it, without making one (a row per capacity)."""
    g = math.gcd(hits, refs)
    return hits / refs, f"{hits // g}/{refs // g}"


def _mrc_csv(res: MrcResult) -> str:
    heads = ["trace", "sha256", "refs", "capacity_blocks", "lru_hits", "lru_hit_rate", "lru_hit_rate_exact",
             "belady_hits", "belady_hit_rate", "belady_hit_rate_exact"]
    st = res.stats
    if res.lru_hits_at is None:
        rows = [(p.capacity, p.lru_hits, p.belady_hits) for p in res.points]
    else:  # --all: every capacity up to where both curves have reached the unbounded cache
        lru, opt = res.lru_hits_at, res.opt_hits_at
        last = max(len(lru), len(opt or [])) - 1
        rows = [(c, lru[min(c, len(lru) - 1)], None if opt is None else opt[min(c, len(opt) - 1)])
                for c in range(1, last + 1)]
    return csv_text(heads, [(st.name, st.sha256, st.refs, c, lru_hits, *_rate_cells(lru_hits, st.refs),
                             *(("", "", "") if opt_hits is None else (opt_hits, *_rate_cells(opt_hits, st.refs))))
                            for c, lru_hits, opt_hits in rows])


def cmd_mrc(args: argparse.Namespace) -> int:
    _one_output(args)
    progress = Progress(enabled=not (args.json or args.csv))
    res = mrc_result(load(args, progress), args.capacity, not args.no_belady, args.all, progress)
    emit(args.json, res, lambda: _mrc_csv(res) if args.csv else _render_mrc(res))
    return EXIT_OK


def cmd_offload(args: argparse.Namespace) -> int:
    _one_output(args)
    trace = load(args, Progress(enabled=not (args.json or args.csv)))
    rep = offload_report(trace, args.capacity_tokens, args.host_tokens, args.control_k)
    if args.certs is not None:
        from pycert.certify.evidence import with_evidence  # verify and every family: only with --certs (0.25 s)

        rep = with_evidence(rep, trace.path, args.certs)
    note = (f"\nx{rep.control_k} (control): the trace has no request boundaries (one id per line), so every "
            f"{rep.control_k} consecutive references of the whole trace are merged, across what may have been requests; "
            "the trace in its request layout gives a control that merges within requests only"
            if rep.control is not None and trace.requests is None else "")
    emit(args.json, rep, lambda: offload_csv(rep) if args.csv else render_offload(rep) + note)
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    require("plot", "pycert trace plot")
    progress = Progress(enabled=not args.json)
    trace = load(args, progress)
    progress(f"LRU and OPT stack distances over {trace.n_refs:,} references")
    curve, opt = trace_curves(trace)
    belady = {c: opt.hits(c) for c in log_capacities(curve.max_distance, args.points)}
    block = f", {trace.block_tokens} tokens/block" if trace.block_tokens else ""
    title = (f"{Path(trace.name).name}\nsha256 {trace.sha256[:16]}..., {trace.n_refs:,} refs, "
             f"granularity x{trace.granularity}{block}")
    atomic_write(args.output, hit_rate_figure(curve, opt, title, fmt=args.output.suffix.lower().lstrip("."),
                                              block_tokens=trace.block_tokens))
    data = {"path": str(args.output), "stats": trace_stats(trace),
            "belady_hits": {str(c): h for c, h in belady.items()}}
    emit(args.json, data, lambda: f"wrote {args.output}")
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    res = convert(load(args, Progress(enabled=not args.json)), args.output)
    beside = "" if special(args.output) else f" and {sidecar(args.output)}"
    emit(args.json, res, lambda: f"wrote {args.output} ({plural(res.refs, 'reference')}, sha256 {res.output_sha256})"
                                 f"{beside}: from {res.source} ({res.format}, sha256 {res.source_sha256})")
    return EXIT_OK


def cmd_generate(args: argparse.Namespace) -> int:
    path = synthetic.write_trace(args.output, seed=args.seed, requests=args.requests)
    res = GenerateResult(path=str(path), seed=args.seed, stats=trace_stats(read_trace(path, "mooncake")))
    emit(args.json, res, lambda: table(["figure", "value"], _stats_rows(res.stats)))
    return EXIT_OK
