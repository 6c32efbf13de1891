"""Hit ceiling (``lean/Pycert/Ceiling.lean``): no demand-fetch cache hits more often than the trace's
repeats allow, hits + distinct ≤ |trace| for every policy and capacity, kernel-checked on the whole
trace (``lean/Pycert/PackedTrace.lean`` and its emitter :mod:`pycert.lean.emit.packed_trace`).

This module is the claim; :mod:`pycert.families.ceiling.produce` makes the certificates.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from pycert.core.errors import Rejected, Rejection
from pycert.core.files import file_sha256
from pycert.core.schema import Certificate, InputFile, Params
from pycert.families.base import Claim, Reader, input_path

if TYPE_CHECKING:
    from pycert.data.traces import Trace

DEFAULT_TRACE = Path("inputs/synthetic-seed0.jsonl")
"""Relative to the certificate directory, like the two below."""
LEAN_OUT = Path("lean")
LEAN_DERIVED = LEAN_OUT / "derived"
"""Where the instance file of a trace from outside the certificate directory goes: full-resolution data
derived from that trace (ignored by git in the repository) that verify regenerates."""


class CeilingParams(Params):
    lean_encoding: str
    """The layout of the emitted instance files: one file (:data:`pycert.lean.emit.packed_trace.ENCODING`) or
    shards (:data:`pycert.lean.emit.shards.ENCODING`)."""
    shards: int = 1
    """How many shards the split was asked for (the cuts are a function of the trace and this number)."""


class CeilingCertificate(Certificate):
    """A certificate of the ceiling family."""

    family: Literal["ceiling"]
    parameters: CeilingParams


def slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")


def lean_ident(name: str) -> str:
    return "".join(part.capitalize() for part in slug(name).split("-") if part)


def names(trace: Path | PurePosixPath) -> tuple[str, str]:
    """The certificate id and the Lean instance module a trace makes, both from its file name."""
    name = slug(trace.stem)
    return f"ceiling-{name}", f"Ceiling{lean_ident(name)}"


def ceiling_figures(trace: Trace) -> dict[str, Fraction]:
    """The trace engine's capacity-free figures: refs, distinct, ceiling = 1 - distinct/refs (only first
    references must miss). prove and verify both compute them here."""
    from pycert.analysis.cachesim import trace_stats  # numpy: see instance_text

    if trace.n_refs == 0:
        raise Rejected(Rejection.mismatch("inputs[trace]", "a trace with at least one block reference", "an empty trace"))
    stats = trace_stats(trace)
    return {"refs": Fraction(stats.refs), "distinct": Fraction(stats.distinct), "ceiling": stats.ceiling.value}


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
    limits = (
        "A ceiling is per trace: it says nothing about other traffic.",
        "It bounds demand-fetch caches only: a prefetching cache is outside the model.",
        "It is an oracle bound, not a connector measurement: no real cache was run.",
        "Block identity is the trace's hash ids at the trace's block size; another granularity gives other figures.",
        "Outside the kernel, Python reads the trace file's bytes (sha256 above) into the list of block ids and writes "
        "that list into the instance's vectors, then decodes what it wrote (pycert.lean.emit.packed_trace.decode, the "
        "Lean decode re-run in Python) and refuses any difference. The kernel checks every reference of the list the "
        "instance decodes to; a reader bug would make the theorem about another list.",
    )
    evidence_of = {
        "refs": ("kernel-checked", "Lean kernel: refs_eq (trace.length) of the emitted instance, every reference decoded"),
        "distinct": ("kernel-checked", "Lean kernel: distinct_eq of the emitted instance, every reference decoded"),
        "ceiling": ("computed", "exact arithmetic (refs - distinct) / refs of the two kernel-checked figures"),
    }

    def theorems(self, params: CeilingParams) -> tuple[str, ...]:
        return self.theorem_names + (self.shard_theorems if params.shards > 1 else ())

    def does_not_prove(self, params: CeilingParams, figures: Mapping[str, Fraction]) -> tuple[str, ...]:
        return self.limits + ((shard_limit(params.shards),) if params.shards > 1 else ())

    def sentence(self, params: CeilingParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        trace = next((PurePosixPath(i.path).name for i in inputs if i.role == "trace"), "(none)")
        refs, distinct, ceiling = int(figures["refs"]), int(figures["distinct"]), figures["ceiling"]
        return (f"On trace {trace} ({refs} block references, {distinct} distinct), no demand-fetch cache of any "
                f"capacity or eviction policy hits more than {refs - distinct} times: a hit-rate ceiling of "
                f"{float(ceiling):.6f}.")

    def figures(self, params: CeilingParams, inputs: Sequence[InputFile], read: Reader) -> dict[str, Fraction]:
        from pycert.data.traces import read_trace  # numpy: see instance_text

        return ceiling_figures(read_trace(input_path(inputs, "trace", read)))

    def regenerate(self, params: CeilingParams, inputs: Sequence[InputFile], inp: InputFile, read: Reader) -> bytes:
        from pycert.data.traces import read_trace  # numpy: see instance_text
        from pycert.lean.emit import packed_trace, shards

        if inp.role != "lean":
            return super().regenerate(params, inputs, inp, read)
        expected = shards.ENCODING if params.shards > 1 else packed_trace.ENCODING
        if params.lean_encoding != expected:
            raise Rejected(Rejection.mismatch("parameters.lean_encoding", repr(expected), repr(params.lean_encoding)))
        path = input_path(inputs, "trace", read)
        if params.shards == 1:
            trace = read_trace(path)
            return instance_text(trace.refs, trace.sha256, Path(inp.path).stem)
        module = names(PurePosixPath(next(i.path for i in inputs if i.role == "trace")))[1]
        return shard_file_text(path, file_sha256(path), module, params.shards, Path(inp.path).stem).encode()


def shard_limit(count: int) -> str:
    return (f"The trace is checked in {count} shards by id range, each a packed instance in a Lean module of its own, and "
            "the composition module proves the figures from the shards' headlines (Pycert.Shards.merge_figures): the "
            "kernel checks each shard's counts and that its ids lie in its range, and that the cuts increase. Python "
            "computes the split (the cuts, and which shard each reference comes from), and verify recomputes it from "
            "the trace and regenerates every file; the kernel never tests the schedule, which can only order the "
            "references (Pycert.Shards.merge_perm).")


@functools.lru_cache(maxsize=1)
def _split(path: Path, sha256: str, module: str, count: int) -> tuple[Trace, Any, list[Any]]:
    """The trace read once, its layout and its shards, for the many files of one certificate (keyed by the
    file's sha256 too: a trace edited between two calls is read again)."""
    from pycert.data.traces import read_trace  # numpy: see instance_text
    from pycert.lean.emit import shards

    trace = read_trace(path)
    lay = shards.layout(trace.refs, trace.sha256, module, count)
    return trace, lay, shards.shard_refs(trace.refs, lay)


def shard_file_text(path: Path, sha256: str, module: str, count: int, stem: str) -> str:
    """The Lean source prove wrote for module ``stem`` of a sharded certificate, from the trace alone: the
    one function prove's composition and verify's regeneration both rest on."""
    import numpy as np  # see instance_text

    from pycert.lean.emit import shards

    _, lay, parts = _split(path, sha256, module, count)
    for i, part in enumerate(parts):
        if stem == lay.shard_name(i):
            return shards.emit_shard(part, lay.sha256, stem, lay.cuts[i], lay.cuts[i + 1])[0]
    for t in range(lay.sched_modules):
        if stem == lay.sched_name(t):
            return shards.emit_sched(lay.sched_part(t), lay.shards, stem, t * shards.SCHED_REFS)
    if stem == lay.name:
        return shards.emit_whole(lay, [(len(part), len(np.unique(part))) for part in parts])
    raise Rejected(Rejection.mismatch(f"inputs[{stem}.lean]", f"a module of {lay.name}'s {lay.shards} shards", stem))


CLAIM = Ceiling()
