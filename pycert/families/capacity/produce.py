"""Making capacity certificates: read each trace once, and per capacity compute the cut list, emit the
whole-trace Lean instance and record what pycert's engines expect the kernel to state."""

from __future__ import annotations

import argparse
import re
from fractions import Fraction
from pathlib import Path, PurePosixPath

import numpy as np

from pycert.analysis.requests import prefix_verdict
from pycert.core.console import plural
from pycert.core.errors import InputError
from pycert.core.gate import entries, named
from pycert.core.limits import MAX_PIECE_REFS, MAX_TRACE_BYTES, int_list, int_range
from pycert.data.traces import Trace
from pycert.families.base import Options, Prepared, Producer, Setting, input_file
from pycert.families.capacity import CLAIM, CapacityParams, derive, names
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
from pycert.lean.emit import capacity as emit
from pycert.lean.emit import pieces


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


class CapacityProducer(Producer):
    claim = CLAIM
    options = CapacityOptions
    rides_with = "ceiling"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--capacity-blocks", type=int_list(1), action="extend", default=[], metavar="C[,C...]",
                            help="certify the hit ceiling at these cache capacities, in blocks (under prove ceiling or "
                                 "all, beside the capacity-free ceiling): one certificate per trace and capacity, the "
                                 "optimum kernel-checked both ways for caches with admission control (Belady's MIN with "
                                 "bypass; a prefix cache where the trace is prefix-closed) and for caches that admit "
                                 "every missed block (Belady's MIN); a trace in pieces: the second bound")
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
        refuse_stdin(opts.trace)
        for trace in opts.trace:
            named(trace).check("a trace file", MAX_TRACE_BYTES, missing="no such trace file")
            check_name(trace)
        # As the ceiling family: two traces folding to one name, or a trace over an earlier run's
        # certificate of another trace in --out, would overwrite each other's certificates.
        claimed: dict[str, Path] = {}
        for trace in self.traces(setting):
            name = slug(trace.stem)
            for key in (name, names(trace, 0)[1]):
                if (other := claimed.setdefault(key, trace)) != trace:
                    raise InputError(f"this trace and {other} would both make capacity-{name}-c<C>: rename one of them "
                                     "(a certificate is named by its trace's file name)", where=str(trace))
            mine = re.compile(rf"capacity-{re.escape(name)}-c[0-9]+\.json")
            for cert in (e.path for e in (entries(setting.out_dir, ".json") if setting.out_dir.is_dir() else []) if mine.fullmatch(e.name)):
                earlier = certified_trace(cert)
                if earlier is not None and earlier != trace.name:
                    raise InputError(f"{cert} certifies trace {earlier}, which this trace's certificates would replace: "
                                     "rename the trace or prove into another --out", where=str(trace))

    def prepare(self, setting: Setting) -> list[Prepared]:
        return [p for path, emitted in trace_files(self.traces(setting), setting)
                for p in self._prepare_trace(path, setting, emitted)]

    def _prepare_trace(self, path: Path, setting: Setting, emitted: Path | None = None) -> list[Prepared]:
        trace = read_for_proof(path, setting.options)
        trace_input = (setting.emitted("trace", emitted, sha256=trace.sha256) if emitted is not None
                       else input_file("trace", path, setting.root, sha256=trace.sha256))
        opts: CapacityOptions = setting.options  # type: ignore[assignment]
        distinct = len(np.unique(trace.refs))
        out = []
        limit = min(opts.piece_refs or MAX_PIECE_REFS, MAX_PIECE_REFS)
        for c in capacities(opts, trace):
            params = CapacityParams(capacity_blocks=c, lean_encoding=emit.OPTIMA_ENCODING,
                                    **reading_of(trace))  # type: ignore[arg-type]
            if trace.n_refs > limit or not emit.fits_one(trace.n_refs, distinct):
                setting.progress(f"{trace.name}: cut list at {plural(c, 'block')}, split into pieces of at most "
                                 f"{plural(limit, 'reference')}")
                cuts, points = derive.piece_layout(trace.refs, c, limit)
                params = CapacityParams(capacity_blocks=c, lean_encoding=emit.PIECES_ENCODING, piece_refs=limit,
                                        pieces=len(points) - 1, **reading_of(trace))  # type: ignore[arg-type]
            else:
                verdict, why = prefix_verdict(trace, derive.model(trace.refs, c, admission=True).ends)
                params = params.model_copy(update={"prefix_cache": verdict})
                if verdict != "attained":
                    setting.progress(f"{trace.name}: no prefix cache claimed at {plural(c, 'block')}: {why}")
            instance = CLAIM.instance(params, [trace_input])
            p = Prepared(claim=CLAIM, id=names(path, c)[0], parameters=params, headline="", inputs=[trace_input],
                         located={trace_input.path: path})
            if params.piece_refs is None:
                setting.progress(f"{trace.name}: cut lists and instance at {plural(c, 'block')}")
                text, plan = derive.instance_text(trace, instance.module, c, params.lean_encoding, params.prefix_cache)
                lean_path = setting.emit(Path(instance.path), text)
                p.inputs.append(setting.emitted("lean", Path(instance.path), derived_from="trace"))
                p.lean_file, p.located[instance.path] = lean_path, lean_path
            elif (plan := self._prepare_pieces(p, trace, distinct, cuts, points, setting)) is None:
                out.append(p)
                continue
            p.engine = {"refs": Fraction(plan.refs), "capacity_blocks": Fraction(c), "max_hits": Fraction(plan.max_hits),
                        "cuts": Fraction(plan.cuts)}
            if plan.admission is not None:
                p.engine |= {"admission_hits": Fraction(plan.admission.max_hits),
                             "admission_cuts": Fraction(plan.admission.cuts)}
            ceiling = (plan.admission.max_hits if plan.admission is not None else plan.max_hits) / plan.refs
            p.headline = f"{plural(c, 'block')}: ceiling {ceiling:.6f}" if plan.refs else "empty"
            out.append(p)
        return out

    def _prepare_pieces(self, p: Prepared, trace: Trace, distinct: int, cuts: list[int], points: list[int],
                        setting: Setting) -> emit.Plan | None:
        """Emit and check the pieces as Ray tasks, then write the composition (the instance), which the
        kernel stage checks with the pieces from the build cache. None when a piece did not pass."""
        opts: CapacityOptions = setting.options  # type: ignore[assignment]
        params: CapacityParams = p.parameters  # type: ignore[assignment]
        c, instance = params.capacity_blocks, p.instance
        assert instance is not None
        makers = derive.piece_makers(trace.refs, trace.sha256, instance.module, c, cuts, points)
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
        text, plan = pieces.emit_glue(instance.module, trace.sha256, mods, [o.extra for o in outcomes], distinct)
        written[instance.module] = setting.emit(Path(instance.path), text.encode())
        for m in [instance.module, *mods]:
            rel = Path(lean_dir, f"{m}.lean")
            p.inputs.append(setting.emitted("lean", rel, derived_from="trace"))
            p.located[rel.as_posix()] = written[m]
        p.lean_file, p.parts = written[instance.module], [written[m] for m in mods]
        return plan


PRODUCER = CapacityProducer()
