"""Making capacity certificates: read each trace once, and per capacity compute the cut list, emit the
whole-trace Lean instance and record what pycert's engines expect the kernel to state."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path, PurePosixPath

import numpy as np

from pycert.analysis.requests import prefix_verdict
from pycert.core.console import plural
from pycert.core.errors import InputError
from pycert.core.gate import entries, named
from pycert.core.limits import MAX_PIECE_REFS, MAX_TRACE_BYTES, int_list
from pycert.core.schema import InputFile
from pycert.data.traces import Trace
from pycert.families.base import Options, Prepared, Producer, Setting, input_file
from pycert.families.capacity import CLAIM, CURVE_ENCODING, CapacityParams, curve_module, derive, names
from pycert.families.traces import (
    DEFAULT_TRACE,
    certified_trace,
    check_name,
    read_for_proof,
    reading_of,
    refuse_stdin,
    slug,
    trace_files,
)
from pycert.lean import cluster
from pycert.lean.emit import CAPACITY_JOINTS_ENCODING as JOINTS_ENCODING
from pycert.lean.emit import capacity as emit
from pycert.lean.emit import curve, joints


class CapacityOptions(Options):
    trace: list[Path] = []
    """Traces to certify (the ceiling family's ``--trace``); none: the embedded synthetic trace."""
    capacity_blocks: list[int] = []
    capacity_tokens: list[int] = []
    """Capacities in tokens, each turned into whole blocks of ``block_tokens``."""
    block_tokens: int | None = None
    """The ceiling family's ``--block-tokens``: tokens a block holds; default: what the trace says."""
    trace_format: str = "auto"
    """The ceiling family's ``--format``."""
    required: bool = False
    """``pycert prove capacity``: a run with no capacity is a usage error (under ``prove ceiling`` or
    ``prove all`` it makes no capacity certificate)."""
    piece_refs: int | None = None
    """``--shard-refs``: the most references a piece holds, never above :data:`~pycert.core.limits.MAX_PIECE_REFS`
    (None: one instance when the trace fits one, else pieces of at most that)."""
    ray_address: str | None = None
    """The Ray cluster the pieces are checked on (None: a local one pycert starts)."""


def capacities(opts: CapacityOptions, trace: Trace) -> list[int]:
    """The capacities in blocks for ``trace``: ``--capacity-blocks`` as given, then each ``--capacity-tokens``
    in whole blocks, in order, once each."""
    blocks = list(opts.capacity_blocks)
    if opts.capacity_tokens:
        bt = trace.block_tokens  # read with --block-tokens, which had to agree with the trace
        if bt is None:
            raise InputError("the trace format does not say how many tokens a block holds: give --block-tokens",
                             where=trace.name)
        for tokens in opts.capacity_tokens:
            if tokens // bt < 1:
                raise InputError(f"a capacity of {tokens} tokens holds no whole block of {bt} tokens", where=trace.name)
            blocks.append(tokens // bt)
    return list(dict.fromkeys(blocks))


def refuse_overwrites(given: list[Path], traces: list[Path], out_dir: Path,
                      stems: Callable[[Path], tuple[str, str]]) -> None:
    """Refuse, before anything runs, a ``--trace`` that cannot be read or names no certificate, and, as the
    ceiling family does, two traces whose certificates (``<stem>-c<C>.json``) or Lean modules (``stems``: the
    certificate stem and the module stem of a trace) would be one, or a trace over an earlier run's
    certificate of another trace in ``out_dir``: they would overwrite each other's certificates."""
    refuse_stdin(given)
    for trace in given:
        named(trace).check("a trace file", MAX_TRACE_BYTES, missing="no such trace file")
        check_name(trace)
    claimed: dict[str, Path] = {}
    for trace in traces:
        stem, module = stems(trace)
        for key in (stem, module):
            if (other := claimed.setdefault(key, trace)) != trace:
                raise InputError(f"this trace and {other} would both make {stem}-c<C>: rename one of them "
                                 "(a certificate is named by its trace's file name)", where=str(trace))
        mine = re.compile(rf"{re.escape(stem)}-c[0-9]+\.json")
        for cert in (e.path for e in (entries(out_dir, ".json") if out_dir.is_dir() else []) if mine.fullmatch(e.name)):
            earlier = certified_trace(cert)
            if earlier is not None and earlier != trace.name:
                raise InputError(f"{cert} certifies trace {earlier}, which this trace's certificates would replace: "
                                 "rename the trace or prove into another --out", where=str(trace))


class CapacityProducer(Producer):
    claim = CLAIM
    options = CapacityOptions
    rides_with = "ceiling"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--capacity-blocks", type=int_list(1), action="extend", default=[], metavar="C[,C...]",
                            help="certify the optimum at these cache capacities, in blocks (under prove ceiling or "
                                 "all, beside the ceiling, the best at any size): one certificate per trace and capacity, the "
                                 "optimum kernel-checked both ways for caches with bypass (Belady's MIN with "
                                 "bypass; a prefix cache where the trace is prefix-closed) and for caches that store "
                                 "every missed block (Belady's MIN); a trace in pieces: the first optimum, both ways; under prove "
                                 "isolation-cost, the capacities a per-tenant salt's cost is certified at")
        parser.add_argument("--capacity-tokens", type=int_list(1), action="extend", default=[], metavar="T[,T...]",
                            help="the same at capacities in tokens, each in whole blocks of the trace's block size "
                                 "(what it says, or --block-tokens)")

    def options_from(self, args: argparse.Namespace, everything: bool = False) -> CapacityOptions:
        return CapacityOptions(trace=getattr(args, "trace", []), capacity_blocks=args.capacity_blocks,
                               capacity_tokens=args.capacity_tokens, block_tokens=getattr(args, "block_tokens", None),
                               trace_format=getattr(args, "format", "auto"),
                               required=args.family == self.claim.name, piece_refs=getattr(args, "shard_refs", None),
                               ray_address=getattr(args, "ray_address", None))

    def traces(self, setting: Setting) -> list[Path]:
        opts: CapacityOptions = setting.options  # type: ignore[assignment]
        if not (opts.capacity_blocks or opts.capacity_tokens):
            return []
        return list(opts.trace) or [setting.out_dir / DEFAULT_TRACE]

    def check(self, setting: Setting) -> None:
        opts: CapacityOptions = setting.options  # type: ignore[assignment]
        if opts.required and not (opts.capacity_blocks or opts.capacity_tokens):
            raise InputError("give the capacities to certify: --capacity-blocks C[,C...] or --capacity-tokens T[,T...]")
        if (opts.capacity_blocks or opts.capacity_tokens) and opts.piece_refs is not None and opts.piece_refs < 2:
            raise InputError(f"--shard-refs {opts.piece_refs}: a piece of a trace checked at a capacity holds at least "
                             "2 references (it shares its ends with its neighbours)")
        refuse_overwrites(opts.trace, self.traces(setting), setting.out_dir,
                          lambda trace: (f"capacity-{slug(trace.stem)}", names(trace, 0)[1]))

    def prepare(self, setting: Setting) -> list[Prepared]:
        return [p for path, emitted in trace_files(self.traces(setting), setting)
                for p in self._prepare_trace(path, setting, emitted)]

    def _prepare_trace(self, path: Path, setting: Setting, emitted: Path | None = None) -> list[Prepared]:
        trace = read_for_proof(path, setting.options)
        trace_input = (setting.emitted("trace", emitted, sha256=trace.sha256) if emitted is not None
                       else input_file("trace", path, setting.root, sha256=trace.sha256))
        opts: CapacityOptions = setting.options  # type: ignore[assignment]
        distinct = len(np.unique(trace.refs))
        limit = min(opts.piece_refs or MAX_PIECE_REFS, MAX_PIECE_REFS)
        if trace.n_refs <= limit and emit.fits_one(trace.n_refs, distinct):
            return [p for run in curve.chunks(capacities(opts, trace))
                    for p in self._prepare_curve(path, trace, trace_input, run, setting)]
        out = []
        for c in capacities(opts, trace):
            setting.progress(f"{trace.name}: cut list and witness with bypass at {plural(c, 'block')}, split "
                             f"into pieces of at most {plural(limit, 'reference')}")
            cuts, points = derive.joint_layout(trace.refs, c, limit)
            params = CapacityParams(capacity_blocks=c, lean_encoding=JOINTS_ENCODING, piece_refs=limit,
                                    pieces=len(points) - 1, **reading_of(trace))  # type: ignore[arg-type]
            p = self._prepared(path, trace_input, params)
            if (plan := self._prepare_pieces(p, trace, distinct, cuts, points, setting)) is not None:
                self._expect(p, plan)
            out.append(p)
        return out

    def _prepare_curve(self, path: Path, trace: Trace, trace_input: InputFile, run: list[int],
                       setting: Setting) -> list[Prepared]:
        """One instance file for every capacity of ``run`` (the trace sorted once), and a certificate per capacity
        resting on it, each with its own headline."""
        module = curve_module(PurePosixPath(trace_input.path), run)
        setting.progress(f"{trace.name}: cut lists and witnesses at {', '.join(map(str, run))} blocks, one instance "
                         f"({module})")
        text, plans = derive.curve_text(trace, module, run)
        every = []
        for c in run:
            verdict, why = prefix_verdict(trace, derive.model(trace.refs, c, admission=True).ends)
            if verdict != "attained":
                setting.progress(f"{trace.name}: no prefix cache claimed at {plural(c, 'block')}: {why}")
            every.append(CapacityParams(capacity_blocks=c, lean_encoding=CURVE_ENCODING, curve=run, prefix_cache=verdict,
                                        **reading_of(trace)))  # type: ignore[arg-type]
        rel = Path(CLAIM.instance(every[0], [trace_input]).path)  # the same file for every capacity of the run
        lean_path = setting.emit(rel, text)
        lean_input = setting.emitted("lean", rel, derived_from="trace")
        out = []
        for params, plan in zip(every, plans):
            p = self._prepared(path, trace_input, params)
            p.inputs.append(lean_input)
            p.lean_file, p.located[rel.as_posix()] = lean_path, lean_path
            self._expect(p, plan)
            out.append(p)
        return out

    def _prepared(self, path: Path, trace_input: InputFile, params: CapacityParams) -> Prepared:
        return Prepared(claim=CLAIM, id=names(path, params.capacity_blocks)[0], parameters=params, headline="",
                        inputs=[trace_input], located={trace_input.path: path})

    @staticmethod
    def _expect(p: Prepared, plan: emit.Plan) -> None:
        """What pycert's engines expect the kernel to state, and the run table's figure."""
        c = plan.capacity
        p.engine = {"refs": Fraction(plan.refs), "capacity_blocks": Fraction(c)}
        if plan.cuts or plan.free or plan.admission is None:  # a trace in pieces both ways states one model only
            p.engine |= {"max_hits": Fraction(plan.max_hits), "cuts": Fraction(plan.cuts)}
        if plan.admission is not None:
            p.engine |= {"bypass_hits": Fraction(plan.admission.max_hits),
                         "bypass_cuts": Fraction(plan.admission.cuts)}
        # the optimum with bypass where the run states that model (``bypass_hit_rate``), else the optimum of caches
        # that store every missed block (``max_hit_rate``)
        admission = plan.admission is not None
        rate = (plan.admission.max_hits if admission else plan.max_hits) / plan.refs if plan.refs else 0
        name = "optimum with bypass" if admission else "optimum"
        p.headline = f"{plural(c, 'block')}: {name} {rate:.6f}" if plan.refs else "empty"

    def _prepare_pieces(self, p: Prepared, trace: Trace, distinct: int, cuts: list[int], points: list[int],
                        setting: Setting) -> emit.Plan | None:
        """Emit and check the pieces (each with the blocks open where it starts, :mod:`pycert.lean.emit.joints`) as
        Ray tasks, then write the composition (the instance), which the kernel stage checks with the pieces from
        the build cache. None when a piece did not pass."""
        opts: CapacityOptions = setting.options  # type: ignore[assignment]
        params: CapacityParams = p.parameters  # type: ignore[assignment]
        c, instance = params.capacity_blocks, p.instance
        assert instance is not None
        makers = derive.joint_makers(trace.refs, trace.sha256, instance.module, c, cuts, points)
        mods = [m for m, _, _ in makers]
        works = [cluster.Work(m, make, size=plural(n, "reference")) for m, make, n in makers]
        setting.progress(f"{instance.module}: {plural(trace.n_refs, 'reference')} in {len(mods)} pieces at {plural(c, 'block')}")
        outcomes = cluster.check_all(works, backend=setting.backend, timeout=setting.timeout, address=opts.ray_address,
                                     progress=setting.progress)
        lean_dir = PurePosixPath(instance.path).parent
        written = {o.module: setting.emit(Path(lean_dir, f"{o.module}.lean"), o.source.encode())
                   for o in outcomes if o.source}
        if not p.judge_parts([o.result for o in outcomes]):
            return None
        text, plan = joints.emit_joint_glue(instance.module, trace.sha256, mods, [o.extra for o in outcomes], distinct)
        written[instance.module] = setting.emit(Path(instance.path), text.encode())
        for m in [instance.module, *mods]:
            rel = Path(lean_dir, f"{m}.lean")
            p.inputs.append(setting.emitted("lean", rel, derived_from="trace"))
            p.located[rel.as_posix()] = written[m]
        p.lean_file, p.parts = written[instance.module], [written[m] for m in mods]
        return plan


PRODUCER = CapacityProducer()
