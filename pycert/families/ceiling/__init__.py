"""Hit ceiling (``lean/Pycert/Ceiling.lean``): no demand-fetch cache that stores every missed block hits
more often than the trace's repeats allow, hits + distinct ≤ |trace| for every policy and capacity,
kernel-checked on the whole trace (``lean/Pycert/PackedTrace.lean`` and its emitter
:mod:`pycert.lean.emit.packed_trace`).

This module is the claim; :mod:`pycert.families.ceiling.produce` makes the certificates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from pycert.core.errors import Rejected, Rejection
from pycert.core.limits import MAX_SHARDS, too_many_parts
from pycert.core.schema import Certificate, InputFile
from pycert.families.base import Claim, Instance, Reader, part_of
from pycert.families.models import DEMAND, STORE, caches
from pycert.families.traces import (
    BLOCK_IDENTITY,
    LEAN_DERIVED,
    LEAN_OUT,
    PROMPT_TOKENS,
    SUMMED,
    TraceReading,
    block_identity,
    lean_ident,
    certified,
    reading,
    slug,
)

if TYPE_CHECKING:
    from pycert.families.traces import Trace

class CeilingParams(TraceReading):
    lean_encoding: str
    """The layout of the emitted instance files: one file (:data:`pycert.lean.emit.packed_trace.ENCODING`) or
    shards (:data:`pycert.lean.emit.shards.ENCODING`)."""
    shards: int = Field(1, ge=1, le=MAX_SHARDS)
    """How many shards the split was asked for (the cuts are a function of the trace and this number)."""


class CeilingCertificate(Certificate):
    """A certificate of the ceiling family."""

    family: Literal["ceiling"]
    parameters: CeilingParams


def names(trace: Path | PurePosixPath) -> tuple[str, str]:
    """The certificate id and the Lean instance module a trace makes, both from its file name."""
    name = slug(trace.stem)
    return f"ceiling-{name}", f"Ceiling{lean_ident(name)}"


def ceiling_figures(refs: int, distinct: int, max_hits: int) -> dict[str, Fraction]:
    """The certificate's figures from the headline's three literals: refs, distinct, the hit bound, and
    the ceiling max_hits / refs (only first references must miss)."""
    if refs == 0:
        raise Rejected(Rejection.mismatch("inputs[trace]", "a trace with at least one block reference", "an empty trace"))
    return {"refs": Fraction(refs), "distinct": Fraction(distinct), "max_hits": Fraction(max_hits),
            "ceiling": Fraction(max_hits, refs)}


def engine_figures(trace: Trace) -> dict[str, Fraction]:
    """What the trace engine (a numpy sort, :func:`pycert.analysis.stats.trace_stats`) says of the
    headline's figures: prove compares them with the kernel's literals."""
    from pycert.analysis.stats import trace_stats  # numpy: see instance_text

    stats = trace_stats(trace)
    return {"refs": Fraction(stats.refs), "distinct": Fraction(stats.distinct),
            "max_hits": Fraction(stats.refs - stats.distinct)}


def instance_text(ids: Sequence[int] | object, sha256: str, module: str) -> bytes:
    """The Lean instance file of a trace: the one function prove and verify both call."""
    from pycert.lean.emit import (
        packed_trace,  # numba and numpy: only for a claim that has a trace
    )

    return packed_trace.emit_instance(ids, sha256, module).encode()


class Ceiling(Claim):
    name = "ceiling"
    params = CeilingParams
    certificate = CeilingCertificate
    lean_module = "Pycert.Ceiling"
    theorem_names = ("Pycert.Ceiling.hits_add_distinct_le", "Pycert.Ceiling.hits_unbounded",
                     "Pycert.Ceiling.hitRatio_le_ceiling", "Pycert.PackedTrace.traceOK_sound",
                     "Pycert.PackedTrace.distinctFrom_map", "Pycert.Route.route_inj")
    shard_theorems = ("Pycert.Shards.shardOK_sound", "Pycert.Shards.merge_figures", "Pycert.Shards.merge_perm")
    primary = ("trace",)
    headline_predicate = "Pycert.Ceiling.Bounded"
    headline_figures = ("refs", "distinct", "max_hits")
    limits = (
        "A ceiling is per trace: it says nothing about other traffic.",
        f"It bounds {DEMAND}, of any capacity; a cache that prefetches, starts warm, or may bypass (skip storing a "
        "missed block) is outside the model.",
        "It is an oracle bound, not a connector measurement: no real cache was run.",
        BLOCK_IDENTITY,
        "Outside the kernel, Python reads the trace file's bytes (sha256 above) into the list of block ids and writes "
        "that list into the instance's vectors, then decodes what it wrote (pycert.lean.emit.packed_trace.decode, the "
        "Lean decode re-run in Python) and refuses any difference. The kernel checks every reference of the list the "
        "instance decodes to; a reader bug would make the theorem about another list.",
    )
    evidence_of = {
        "refs": ("kernel-checked", "Lean kernel: a literal of {headline} (trace.length), every reference decoded"),
        "distinct": ("kernel-checked", "Lean kernel: a literal of {headline} (distinct trace), every reference decoded"),
        "max_hits": ("kernel-checked", "Lean kernel: a literal of {headline} (hits P trace ≤ it for every policy P)"),
        "ceiling": ("computed", "exact arithmetic max_hits / refs of the two kernel-checked figures"),
        "refs_tokens": ("computed", PROMPT_TOKENS),
        "max_hits_tokens": ("computed", f"the tokens of the references that reuse a full block ({SUMMED}): what "
                            "a cache of unbounded capacity hits, a request's partial last block never reused (vLLM "
                            "caches full blocks only); beside the kernel-checked max_hits, not itself kernel-checked"),
        "ceiling_tokens": ("computed", "exact arithmetic max_hits_tokens / refs_tokens"),
    }

    def library_theorems(self, params: CeilingParams) -> tuple[str, ...]:
        return self.theorem_names + (self.shard_theorems if params.shards > 1 else ())

    def does_not_prove(self, params: CeilingParams, figures: Mapping[str, Fraction],
                       inputs: Sequence[InputFile]) -> tuple[str, ...]:
        """The family's limits (the block identity as the trace was read), and for a sharded trace how it was
        checked, with the number of shard modules the certificate names (the shards that exist, each
        regenerated byte for byte: the split may make fewer than the ``shards`` it was asked for, and no
        number in the text is taken from a parameter)."""
        limits = tuple(block_identity(params) if line == BLOCK_IDENTITY else line for line in self.limits)
        if params.shards == 1:
            return limits
        inst = self.instance(params, self.primary_inputs(inputs)) if len(self.primary_inputs(inputs)) == 1 else None
        made = sum(inst is not None and part_of(inst, i, ("Shard",)) for i in inputs)
        return (*limits, shard_limit(made))

    def sentence(self, params: CeilingParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        trace = next((PurePosixPath(i.path).name for i in inputs if i.role == "trace"), "(none)")
        refs, distinct, ceiling = int(figures["refs"]), int(figures["distinct"]), figures["ceiling"]
        tokens = (f" In tokens, {int(figures['max_hits_tokens'])} of {int(figures['refs_tokens'])} prompt tokens "
                  f"({float(figures['ceiling_tokens']):.6f}) are in reused full blocks (computed; a partial block is "
                  "never reused, as in vLLM)." if "ceiling_tokens" in figures else "")
        return (f"On trace {trace} ({reading(params)}{refs} block references, {distinct} distinct), no cache "
                f"{caches(STORE, plural=False)}, of any capacity or eviction policy, hits more than "
                f"{int(figures['max_hits'])} times: a hit-rate ceiling of {float(ceiling):.6f}.{tokens}")

    def instance(self, params: CeilingParams, primary: Sequence[InputFile]) -> Instance:
        """``lean/Ceiling<Name>.lean`` from the trace's file name; for a trace from outside the certificate
        directory, ``lean/derived/``: full-resolution data derived from it, which verify regenerates."""
        [trace] = primary
        module = names(PurePosixPath(trace.path))[1]
        return Instance(path=((LEAN_DERIVED if trace.external else LEAN_OUT) / f"{module}.lean").as_posix(),
                        derived_from="trace")

    def figures(self, params: CeilingParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        from pycert.analysis.requests import ref_tokens, reuse_tokens  # numpy: see instance_text

        if kernel["max_hits"] != kernel["refs"] - kernel["distinct"]:
            raise Rejected(Rejection.mismatch("headline (max_hits)", str(kernel["refs"] - kernel["distinct"]),
                                              str(kernel["max_hits"])))
        out = ceiling_figures(kernel["refs"], kernel["distinct"], kernel["max_hits"])
        trace = certified(inputs, read, params)  # the token figures of the reading the blocks are of
        if (weights := ref_tokens(trace)) is not None and (rate := reuse_tokens(trace)) is not None:
            out |= {"refs_tokens": Fraction(weights.total), "max_hits_tokens": rate * weights.total,
                    "ceiling_tokens": rate}
        return out

    def regenerate(self, params: CeilingParams, inputs: Sequence[InputFile], read: Reader) -> bytes:
        inst = self.instance(params, self.primary_inputs(inputs))
        return self.derived_files(params, inputs, read)[inst.path]

    def imported(self, params: CeilingParams, instance: Instance, inp: InputFile) -> bool:
        """A shard or schedule module of the instance's trace, beside it (``<Module>Shard<i>.lean``)."""
        return params.shards > 1 and part_of(instance, inp, ("Shard", "Sched"))

    def derived_files(self, params: CeilingParams, inputs: Sequence[InputFile], read: Reader) -> dict[str, bytes]:
        """The instance file, and for a sharded trace every shard and schedule module beside it."""
        from pycert.lean.emit import packed_trace, shards  # numpy: see instance_text

        expected = shards.ENCODING if params.shards > 1 else packed_trace.ENCODING
        if params.lean_encoding != expected:
            raise Rejected(Rejection.mismatch("parameters.lean_encoding", repr(expected), repr(params.lean_encoding)))
        inst = self.instance(params, self.primary_inputs(inputs))
        trace = certified(inputs, read, params)
        bounded(params.shards, trace.refs)  # before a shard, or the one instance, is emitted
        if params.shards == 1:
            return {inst.path: instance_text(trace.refs, trace.sha256, inst.module)}
        where = PurePosixPath(inst.path).parent
        return {(where / f"{m}.lean").as_posix(): text.encode()
                for m, text in shard_files(trace, inst.module, params.shards).items()}


def bounded(count: int, refs: object) -> None:
    """Refuse a shard count the trace's size rules out, before any shard is emitted: more shards than a trace
    this long is split into (each a Lean process of its own), or fewer than the measured literal budget of one
    Lean process allows (:func:`pycert.lean.emit.shards.shard_count`: a trace of 5·10^6 references said to be
    one shard made verify emit a 2.8 GB instance for 40 s)."""
    import numpy as np  # see instance_text

    from pycert.lean.emit import shards

    ids = np.asarray(refs)
    if why := too_many_parts(count, len(ids), "shards"):
        raise Rejected(Rejection.mismatch("parameters.shards", "as many shards as a trace this long is checked in", why))
    if count >= (fewest := shards.fewest_shards(ids)):
        return
    raise Rejected(Rejection.mismatch("parameters.shards", f"at least {fewest:,} (a shard of this trace of {len(ids):,} "
                                      f"references holds at most {shards.BUDGET_BITS:,} bits of literals, what one Lean "
                                      "process checks)", f"{count:,}"))


def shard_limit(count: int) -> str:
    return (f"The trace is checked in {count} shards by id range, each a packed instance in a Lean module of its own, and "
            "the composition module proves the figures from the shards' headlines (Pycert.Shards.merge_figures): the "
            "kernel checks each shard's counts and that its ids lie in its range, and that the cuts increase. Python "
            "computes the split (the cuts, and which shard each reference comes from), and verify recomputes it from "
            "the trace and regenerates every file; the kernel never tests the schedule, which can only order the "
            "references (Pycert.Shards.merge_perm).")


def shard_files(trace: Trace, module: str, count: int) -> dict[str, str]:
    """The Lean source of every module of a sharded certificate, by module name, from the trace alone:
    what verify regenerates and compares with the files prove wrote (the same emitters)."""
    import numpy as np  # see instance_text

    from pycert.lean.emit import shards

    lay = shards.layout(trace.refs, trace.sha256, module, count)
    parts = shards.shard_refs(trace.refs, lay)
    out = {lay.shard_name(i): shards.emit_shard(part, lay.sha256, lay.shard_name(i), lay.cuts[i], lay.cuts[i + 1])[0]
           for i, part in enumerate(parts)}
    for t in range(lay.sched_modules):
        out[lay.sched_name(t)] = shards.emit_sched(lay.sched_part(t), lay.shards, lay.sched_name(t),
                                                    t * shards.SCHED_REFS)
    out[lay.name] = shards.emit_whole(lay, [(len(part), len(np.unique(part))) for part in parts])
    return out
CLAIM = Ceiling()
