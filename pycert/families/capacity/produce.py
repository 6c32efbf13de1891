"""Making capacity certificates: read each trace once, and per capacity compute the cut list, emit the
whole-trace Lean instance and record what pycert's engines expect the kernel to state."""

from __future__ import annotations

import argparse
import re
from fractions import Fraction
from pathlib import Path

from pycert.core.errors import InputError
from pycert.core.files import check_input
from pycert.core.limits import int_list, int_range
from pycert.data import synthetic
from pycert.data.traces import Trace, read_trace
from pycert.families.base import Options, Prepared, Producer, Setting, input_file
from pycert.families.capacity import CLAIM, CapacityParams, instance_text, names
from pycert.families.ceiling import DEFAULT_TRACE, slug
from pycert.families.ceiling.produce import certified_trace
from pycert.lean.emit.capacity import OPTIMUM_ENCODING


class CapacityOptions(Options):
    trace: list[Path] = []
    """Traces to certify (the ceiling family's ``--trace``); none: the embedded synthetic trace."""
    capacity_blocks: list[int] = []
    capacity_tokens: list[int] = []
    """Capacities in tokens, each turned into whole blocks of ``block_tokens``."""
    block_tokens: int | None = None
    """Tokens a block holds; default: what the trace's format says (Mooncake: 512)."""
    required: bool = False
    """``pycert prove capacity``: a run with no capacity is a usage error (under ``prove ceiling`` or
    ``prove all`` it makes no capacity certificate)."""


def capacities(opts: CapacityOptions, trace: Trace) -> list[int]:
    """The capacities in blocks for ``trace``: ``--capacity-blocks`` as given, then each ``--capacity-tokens``
    in whole blocks, in order, once each."""
    blocks = list(opts.capacity_blocks)
    if opts.capacity_tokens:
        bt = opts.block_tokens or trace.block_tokens
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
                            help="also certify the hit ceiling at these cache capacities, in blocks: one certificate "
                                 "per trace and capacity (Belady's MIN hit count, kernel-checked as the optimum: "
                                 "an upper bound and a policy that reaches it)")
        parser.add_argument("--capacity-tokens", type=int_list(1), action="extend", default=[], metavar="T[,T...]",
                            help="the same at capacities in tokens, each in whole blocks of --block-tokens")
        parser.add_argument("--block-tokens", type=int_range(1), default=None, metavar="B",
                            help="tokens per block for --capacity-tokens (default: the trace format's, Mooncake 512)")

    def options_from(self, args: argparse.Namespace, everything: bool = False) -> CapacityOptions:
        return CapacityOptions(trace=getattr(args, "trace", []), capacity_blocks=args.capacity_blocks,
                               capacity_tokens=args.capacity_tokens, block_tokens=args.block_tokens,
                               required=args.family == self.claim.name)

    def traces(self, setting: Setting) -> list[Path]:
        opts: CapacityOptions = setting.options  # type: ignore[assignment]
        if not (opts.capacity_blocks or opts.capacity_tokens):
            return []
        return list(opts.trace) or [setting.out_dir / DEFAULT_TRACE]

    def check(self, setting: Setting) -> None:
        opts: CapacityOptions = setting.options  # type: ignore[assignment]
        if opts.required and not (opts.capacity_blocks or opts.capacity_tokens):
            raise InputError("give the capacities to certify: --capacity-blocks C[,C...] or --capacity-tokens T[,T...]")
        if opts.block_tokens is not None and not opts.capacity_tokens:
            raise InputError("--block-tokens applies to --capacity-tokens, and none was given")
        for trace in opts.trace:
            check_input(trace, "a trace file", missing="no such trace file")
            if not slug(trace.stem):
                raise InputError("a trace's file name needs a letter or digit (it names the certificate)", where=str(trace))
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
            for cert in sorted(setting.out_dir.glob(f"capacity-{name}-c*.json")):
                earlier = certified_trace(cert) if mine.fullmatch(cert.name) else None
                if earlier is not None and earlier != trace.name:
                    raise InputError(f"{cert} certifies trace {earlier}, which this trace's certificates would replace: "
                                     "rename the trace or prove into another --out", where=str(trace))

    def prepare(self, setting: Setting) -> list[Prepared]:
        out = []
        for path in self.traces(setting):
            if path == setting.out_dir / DEFAULT_TRACE:  # the embedded default, regenerated byte-identically
                emitted = setting.emit(DEFAULT_TRACE, synthetic.to_jsonl(synthetic.generate(0)))
                out += self._prepare_trace(emitted, setting, DEFAULT_TRACE)
            else:
                out += self._prepare_trace(path, setting)
        return out

    def _prepare_trace(self, path: Path, setting: Setting, emitted: Path | None = None) -> list[Prepared]:
        trace = read_trace(path)
        trace_input = (setting.emitted("trace", emitted, sha256=trace.sha256) if emitted is not None
                       else input_file("trace", path, setting.root, sha256=trace.sha256))
        out = []
        for c in capacities(setting.options, trace):  # type: ignore[arg-type]
            setting.progress(f"{trace.name}: cut list and instance at {c} blocks")
            params = CapacityParams(capacity_blocks=c, lean_encoding=OPTIMUM_ENCODING)
            instance = CLAIM.instance(params, [trace_input])
            text, plan = instance_text(trace.refs, trace.sha256, instance.module, c)
            lean_path = setting.emit(Path(instance.path), text)
            out.append(Prepared(
                claim=CLAIM, id=names(path, c)[0], parameters=params,
                engine={"refs": Fraction(plan.refs), "capacity_blocks": Fraction(c), "max_hits": Fraction(plan.max_hits),
                        "cuts": Fraction(plan.cuts)},
                headline=f"{c} blocks: ceiling {plan.max_hits / plan.refs:.6f}" if plan.refs else "empty",
                inputs=[trace_input, setting.emitted("lean", Path(instance.path), derived_from="trace")],
                lean_file=lean_path, located={trace_input.path: path, instance.path: lean_path}))
        return out


PRODUCER = CapacityProducer()
