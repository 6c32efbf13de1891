"""Making hit-ceiling certificates: read each trace once, emit its whole-trace Lean instance."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from pycert.core.console import plural, share_of
from pycert.core.errors import InputError
from pycert.core.gate import named
from pycert.core.limits import MAX_SHARD_REFS, MAX_TRACE_BYTES, in_path, int_range, too_many_parts
from pycert.data.formats import FORMAT_CHOICES
from pycert.families.base import Instance, Options, Prepared, Producer, Setting, input_file
from pycert.families.ceiling import CLAIM, CeilingParams, engine_figures, instance_text, names
from pycert.families.traces import (
    DEFAULT_TRACE,
    certified_trace,
    check_name,
    read_for_proof,
    reading_of,
    refuse_stdin,
    trace_files,
)
from pycert.lean import cluster
from pycert.lean.emit import shards
from pycert.lean.emit.packed_trace import ENCODING

if TYPE_CHECKING:  # the families name the type through pycert.families.traces, the one reader
    from pycert.families.traces import Trace


class CeilingOptions(Options):
    trace: list[Path] = []
    """Traces to certify."""
    synthetic: bool = False
    """Certify the embedded synthetic trace too (``prove all``; alone when no trace is given)."""
    shard_refs: int | None = None
    """References per shard of a big trace (None: chosen from measured memory)."""
    ray_address: str | None = None
    """The Ray cluster shards are checked on (None: a local one pycert starts)."""
    trace_format: str = "auto"
    """``--format``: the layout of every ``--trace``."""
    block_tokens: int | None = None
    """``--block-tokens``: how a prompts trace is cut into blocks; for a layout with lengths it must agree
    with them; the capacity family turns ``--capacity-tokens`` into blocks of it."""
    sort: bool = False
    """``--sort``: every trace's requests in timestamp order (the certificate records it)."""


class CeilingProducer(Producer):
    summary = ("Prove the ceiling of each --trace (the embedded synthetic trace by default): the best hit rate any "
               "cache reaches at any size, since every first reference to a block misses, kernel-checked on every "
               "reference of the trace (sharded on Ray past what one Lean process holds). With --capacity-blocks or "
               "--capacity-tokens, the optimum at each capacity too (pycert prove capacity --help).")
    claim = CLAIM
    options = CeilingOptions

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--trace", type=in_path, action="append", default=[], metavar="PATH",
                            help="a trace to certify (repeatable; any layout --format reads: one JSON request a line with "
                                 "its hash_ids or prompt_token_ids, Mooncake, Qwen-Bailian or AIPerf JSONL, or one "
                                 "64-bit block id per line; gzip or zstd too); default: the embedded synthetic trace")
        parser.add_argument("--shard-refs", type=int_range(1, MAX_SHARD_REFS), default=None, metavar="N",
                            help="references per shard of a trace (default: chosen from measured memory; a trace "
                                 "that fits one Lean process is one file); for a trace checked at a capacity, the most "
                                 "references a piece holds, the blocks open where it starts included (at least the capacity + 2; at "
                                 "most, and by default, 524,288)")
        parser.add_argument("--format", choices=FORMAT_CHOICES, default="auto",
                            help="the layout of every --trace (default: auto, by its first line; docs/formats.md); the "
                                 "certificate records it")
        parser.add_argument("--block-tokens", type=int_range(1), default=None, metavar="B",
                            help="tokens a block: how a prompts trace is cut into blocks (default 16; the certificate "
                                 "records it), and the block size --capacity-tokens counts in; for a layout with "
                                 "input_length and hash_ids it must agree with their lengths")
        parser.add_argument("--sort", action="store_true",
                            help="read every --trace's requests in timestamp order, not file order (each request "
                                 "needs a timestamp; the certificate records it)")
        parser.add_argument("--ray-address", default=None, metavar="ADDRESS",
                            help="the Ray cluster that checks the shards of a big trace (default: a local one on "
                                 "this machine's cores, started by pycert and stopped when it exits)")

    def options_from(self, args: argparse.Namespace, everything: bool = False) -> CeilingOptions:
        return CeilingOptions(trace=args.trace, synthetic=everything, shard_refs=args.shard_refs,
                              ray_address=args.ray_address, trace_format=args.format, block_tokens=args.block_tokens,
                              sort=args.sort)

    def traces(self, setting: Setting) -> list[Path]:
        """The traces of this run; the embedded default by its place in the certificate directory."""
        opts: CeilingOptions = setting.options  # type: ignore[assignment]
        default = setting.out_dir / DEFAULT_TRACE
        # a --trace at the default's place is the default (prove's hint names it beside other traces, for
        # the capacity family, where a --trace replaces the default): not a second trace of the same name
        given = [t for t in opts.trace if t.resolve() != default.resolve()]
        return ([default] if opts.synthetic or len(given) < len(opts.trace) or not opts.trace else []) + given

    def check(self, setting: Setting) -> None:
        """Each trace makes ``ceiling-<slug>.json`` and ``Ceiling<Ident>.lean``: two traces that fold to
        one of those names (``my-trace`` and ``my_trace``, ``t1`` here and ``other/t1``) would overwrite
        each other, and so would a trace of another name over an earlier run's certificate in ``--out``."""
        claimed: dict[str, Path] = {}
        refuse_stdin(setting.options.trace)  # type: ignore[attr-defined]
        for trace in setting.options.trace:  # type: ignore[attr-defined]
            named(trace).check("a trace file", MAX_TRACE_BYTES, missing="no such trace file")
        for trace in self.traces(setting):
            check_name(trace)
            cert_id, module = names(trace)
            for key in (cert_id, f"{module}.lean"):
                if (other := claimed.setdefault(key, trace)) != trace:
                    raise InputError(f"this trace and {other} would both make {key}: rename one of them "
                                     "(a certificate is named by its trace's file name)", where=str(trace))
            earlier = certified_trace(setting.out_dir / f"{cert_id}.json")
            if earlier is not None and earlier != trace.name:
                raise InputError(f"{setting.out_dir / f'{cert_id}.json'} certifies trace {earlier}, which this "
                                 "trace's certificate would replace: rename the trace or prove into another --out",
                                 where=str(trace))

    def prepare(self, setting: Setting) -> list[Prepared]:
        return [self._prepare_trace(path, setting, emitted) for path, emitted in trace_files(self.traces(setting), setting)]

    def _prepare_trace(self, trace_path: Path, setting: Setting, emitted: Path | None = None) -> Prepared:
        opts: CeilingOptions = setting.options  # type: ignore[assignment]
        trace = read_for_proof(trace_path, opts)
        cert_id, _ = names(trace_path)
        trace_input = (setting.emitted("trace", emitted, sha256=trace.sha256) if emitted is not None
                       else input_file("trace", trace_path, setting.root, sha256=trace.sha256))
        engine = engine_figures(trace)
        refs, distinct = int(engine["refs"]), int(engine["distinct"])
        count = shards.shard_count(refs, distinct, opts.shard_refs, *shards.shape(trace.refs)) if refs else 1
        if why := too_many_parts(count, refs, "shards"):
            raise InputError(f"the trace would need {why}: raise --shard-refs", where=str(trace_path))
        if count < (fewest := shards.fewest_shards(trace.refs)):
            raise InputError(f"--shard-refs {opts.shard_refs:,} makes {plural(count, 'shard')}, and one Lean process checks "
                             f"at most {shards.BUDGET_BITS:,} bits of literals: this trace needs at least {fewest:,} "
                             "(give a smaller --shard-refs, or none)", where=str(trace_path))
        params = CeilingParams(lean_encoding=shards.ENCODING if count > 1 else ENCODING, shards=count,
                               **reading_of(trace))  # type: ignore[arg-type]
        instance = CLAIM.instance(params, [trace_input])
        prepared = Prepared(
            claim=CLAIM, id=cert_id, parameters=params, engine=engine,
            headline=share_of("ceiling", int(engine["max_hits"]), refs) if refs else "empty",
            inputs=[trace_input], located={trace_input.path: trace_path})
        if count > 1:
            return self._prepare_shards(prepared, trace, instance, setting)
        lean_path = setting.emit(Path(instance.path), instance_text(trace.refs, trace.sha256, instance.module))
        prepared.inputs.append(setting.emitted("lean", Path(instance.path), derived_from="trace"))
        prepared.lean_file, prepared.located[instance.path] = lean_path, lean_path
        return prepared

    def _prepare_shards(self, p: Prepared, trace: Trace, instance: Instance, setting: Setting) -> Prepared:
        """Emit and check the shards and the schedule as Ray tasks, then the composition (the instance);
        the kernel stage finds the shards in the build cache and checks the composition."""
        opts: CeilingOptions = setting.options  # type: ignore[assignment]
        lean_dir = PurePosixPath(instance.path).parent
        lay = shards.layout(trace.refs, trace.sha256, instance.module, p.parameters.shards)  # type: ignore[attr-defined]
        setting.progress(f"{instance.module}: {plural(trace.n_refs, 'reference')} in {plural(lay.shards, 'shard')} by "
                         f"id range, {plural(lay.sched_modules, 'schedule module')}")
        outcomes = cluster.check_all(shard_works(trace, lay), backend=setting.backend, timeout=setting.timeout,
                                     address=opts.ray_address, progress=setting.progress)
        written = {o.module: setting.emit(Path(lean_dir, f"{o.module}.lean"), o.source.encode())
                   for o in outcomes if o.source}
        if not p.judge_parts([o.result for o in outcomes]):
            return p
        written[lay.name] = setting.emit(Path(instance.path),
                                         shards.emit_whole(lay, [o.extra for o in outcomes[:lay.shards]]).encode())
        for m in [lay.name, *lay.module_names()[:-1]]:
            rel = Path(lean_dir, f"{m}.lean")
            p.inputs.append(setting.emitted("lean", rel, derived_from="trace"))
            p.located[rel.as_posix()] = written[m]
        p.lean_file, p.parts = written[lay.name], [written[m] for m in lay.module_names()[:-1]]
        return p


def shard_works(trace: Trace, lay: shards.Layout) -> list[cluster.Work]:
    """One task per shard (its references and nothing else) and per schedule module."""
    parts = shards.shard_refs(trace.refs, lay)
    shards.check_merge(trace.refs, lay, parts)
    works = [cluster.Work(lay.shard_name(i), functools.partial(shards.emit_shard, part, lay.sha256, lay.shard_name(i),
                                                               lay.cuts[i], lay.cuts[i + 1]),
                          size=plural(len(part), "reference")) for i, part in enumerate(parts)]
    for t in range(lay.sched_modules):
        part = lay.sched_part(t)
        works.append(cluster.Work(lay.sched_name(t), functools.partial(
            _sched_source, part, lay.shards, lay.sched_name(t), t * shards.SCHED_REFS), size=plural(len(part), "reference")))
    return works


def _sched_source(part: np.ndarray, count: int, name: str, first: int) -> tuple[str, None]:
    return shards.emit_sched(part, count, name, first), None


PRODUCER = CeilingProducer()
