"""Emit a trace too big for one Lean process as shards by id range, a schedule and a composition.

The Lean half is ``lean/Pycert/Shards.lean``. The ids' range ``[0, 2^64)`` is cut at ``cuts`` (chosen
from the trace so that shards hold about the same number of references, :func:`split`); shard ``i``
is every reference whose id lies in ``[cuts[i], cuts[i+1])``, in the trace's order, and is a packed
instance of its own (the vectors of :mod:`pycert.lean.emit.packed_trace`) in a Lean ``module`` whose
data is private: a module that imports it sees its headline and not its vectors, so importing every
shard costs next to nothing. The schedule (which shard each reference comes from) is packed in
modules of :data:`SCHED_REFS` references; the kernel never evaluates it. The composition module
imports them all and proves, with ``Pycert.Shards.merge_figures`` and a few comparisons of the cuts,
the whole trace's length and distinct count as literals, and the hit ceiling.

Python's part is the same as for one file: it reads the ids, packs them, and decodes what it packed
(:func:`decode_shard`, :func:`merge`: the Lean definitions re-run in Python) before anything is
written, refusing any difference. Every function here is pure: the same trace and shard size give
the same files, byte for byte, which is what verify regenerates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pycert.core.errors import InputError, PycertError
from pycert.lean.emit import INSTANCE_NAMESPACE, benes
from pycert.lean.emit import packed_trace as pt

ENCODING = "packed-shards/1"
"""Names this layout (shards, schedule, composition) in certificates."""
TOP = 1 << 64
"""Every id is below it (``pycert.core.limits.MAX_ID``): the last cut, and the base of ``slook``'s
values past a shard's table."""
SCHED_REFS = 8_000_000
"""References per schedule module: with up to 128 shards, 7 bits a reference, 56 Mbit of literals,
about what one small Lean process elaborates in half a minute."""


BUDGET_BITS = 160_000_000
"""Bits of packed literals one shard's Lean process is given (its ``X``, ``K``, table and network).
Measured (docs/trace-encodings.md): peak RSS is about 2.1 GB plus 7.3 MiB per Mbit (191 Mbit: 3,713 MiB), so
160 Mbit keeps a shard near 3.3 GB, under the 4 GB a Lean process may take. A trace whose whole
instance fits is one file, as before."""


def literal_bits(refs: int, distinct: int, id_bits: int = 64, network: bool = True) -> int:
    """Bits of the packed literals of an instance of ``refs`` references over ``distinct`` ids below
    ``2^id_bits``: the references and the counter at ``w + 1`` bits, the table at ``id_bits + 2``, and,
    unless first uses come in increasing id order, a Beneš network's ``2m - 1`` words of ``2^(m-1)``."""
    w = max(2, distinct.bit_length())
    m = max(1, (distinct - 1).bit_length())
    return (2 * refs + 1) * (w + 1) + distinct * (id_bits + 2) + (network and (2 * m - 1) * (1 << (m - 1)))


def shape(ids: np.ndarray) -> tuple[int, bool]:
    """What the literal budget needs to know of a trace besides its counts: the bits of its largest id,
    and whether it needs a network (first uses not in increasing id order; a shard of a trace that
    needs none needs none either)."""
    ids = np.asarray(ids, dtype=np.uint64)
    first = np.unique(ids, return_index=True)[1]
    return int(ids.max()).bit_length() if len(ids) else 1, bool(np.any(np.diff(first) < 0))


def shard_count(refs: int, distinct: int, shard_refs: int | None = None, id_bits: int = 64, network: bool = True,
                budget: int = BUDGET_BITS) -> int:
    """How many shards a trace is split into: ``ceil(refs / shard_refs)`` when asked, else the fewest
    whose equal parts each fit ``budget`` bits of literals (1: the trace is one file)."""
    if shard_refs is not None:
        return max(1, math.ceil(refs / shard_refs))
    count = 1
    while literal_bits(math.ceil(refs / count), math.ceil(distinct / count), id_bits, network) > budget:
        count += 1
    return count


def fewest_shards(ids: np.ndarray) -> int:
    """The fewest shards a trace is checked in within :data:`BUDGET_BITS` a shard: what prove splits it into by
    default, and the least a certificate of it may claim (a shard above the budget is one the kernel could
    not check in one process, and verify would emit it whole). Counting its distinct ids is the only work."""
    refs = len(ids)
    if literal_bits(refs, refs, 64, True) <= BUDGET_BITS:  # fits however many ids are distinct
        return 1
    ids = np.asarray(ids, dtype=np.uint64)
    first = np.unique(ids, return_index=True)[1]
    return shard_count(refs, len(first), None, int(ids.max()).bit_length(), bool(np.any(np.diff(first) < 0)))


@dataclass(frozen=True)
class Layout:
    """How a trace is cut: the shard of every reference, and the modules that hold it."""

    name: str
    """The composition module; shard ``i`` is ``shard_name(name, i, k)``, schedule ``t`` likewise."""
    sha256: str
    cuts: tuple[int, ...]
    """``cuts[0] = 0 < cuts[1] < … < cuts[k] = TOP``: shard ``i`` holds the ids in ``[cuts[i], cuts[i+1])``."""
    owner: np.ndarray
    """The shard of each reference, in the trace's order (the schedule)."""

    @property
    def shards(self) -> int:
        return len(self.cuts) - 1

    @property
    def sched_modules(self) -> int:
        return max(1, math.ceil(len(self.owner) / SCHED_REFS))

    def shard_name(self, i: int) -> str:
        return f"{self.name}Shard{i:0{len(str(self.shards - 1))}d}"

    def sched_name(self, t: int) -> str:
        return f"{self.name}Sched{t:0{len(str(self.sched_modules - 1))}d}"

    def sched_part(self, t: int) -> np.ndarray:
        """The schedule of module ``t``: references ``t * SCHED_REFS`` … of the trace."""
        return self.owner[t * SCHED_REFS:(t + 1) * SCHED_REFS]

    def module_names(self) -> list[str]:
        """Every module of the layout, the composition last."""
        return ([self.shard_name(i) for i in range(self.shards)] + [self.sched_name(t) for t in range(self.sched_modules)]
                + [self.name])


def split(ids: np.ndarray, shards: int) -> tuple[int, ...]:
    """Cuts giving at most ``shards`` shards of about equal numbers of references: each cut is a
    distinct id of the trace, so no shard is empty (a block referenced more often than a shard's
    share makes fewer shards)."""
    if shards < 1:
        raise InputError(f"shards must be at least 1, got {shards}")
    values, counts = np.unique(np.asarray(ids, dtype=np.uint64), return_counts=True)
    if len(values) == 0:
        raise InputError("an empty trace has no shards")
    total = np.cumsum(counts)
    if len(values) == 1:
        return (0, TOP)
    # Shard i ends after the first id whose running count reaches i/shards of the references.
    targets = np.arange(1, shards, dtype=np.float64) * (int(total[-1]) / shards)
    picks = np.unique(np.clip(np.searchsorted(total, targets, side="left") + 1, 1, len(values) - 1))
    return (0, *(int(values[i]) for i in picks), TOP)


def owners(ids: np.ndarray, cuts: Sequence[int]) -> np.ndarray:
    """The shard of every reference: the number of inner cuts at or below its id."""
    inner = np.asarray(cuts[1:-1], dtype=np.uint64)
    return np.searchsorted(inner, np.asarray(ids, dtype=np.uint64), side="right").astype(np.int64)


def layout(ids: np.ndarray, sha256: str, name: str, shards: int) -> Layout:
    cuts = split(ids, shards)
    return Layout(name=name, sha256=sha256, cuts=cuts, owner=owners(ids, cuts))


def shard_refs(ids: np.ndarray, lay: Layout) -> list[np.ndarray]:
    """Each shard's references in the trace's order."""
    ids = np.asarray(ids, dtype=np.uint64)
    order = np.argsort(lay.owner, kind="stable")
    bounds = np.searchsorted(lay.owner[order], np.arange(lay.shards + 1))
    return [ids[order[bounds[i]:bounds[i + 1]]] for i in range(lay.shards)]


# ---------------------------------------------------------------------------- Python mirrors


def slook(lo: int, table: Sequence[int], i: int) -> int:
    """Python mirror of ``Pycert.Shards.slook``."""
    return table[i] if i < len(table) else lo + TOP * (i + 1)


def decode_shard(inst: pt.Packed, lo: int) -> list[int]:
    """Python mirror of ``Pycert.Shards.sdecode``: the references a shard's file stands for."""
    table = pt.unpack(inst.t, inst.wt + 1, inst.distinct)
    look = [slook(lo, table, i) for i in benes.route_all(inst.net, inst.distinct).tolist()]
    return [look[x] for x in pt.unpack(inst.x, inst.w + 1, inst.refs)]


def merge(sched: Sequence[int], shards: Sequence[Sequence[int]]) -> np.ndarray:
    """Python mirror of ``Pycert.Shards.merge``: reference ``j`` is the next unused one of shard
    ``sched[j]`` (nothing when that shard is used up or absent), then every unused one, shard by shard."""
    s = np.asarray(sched, dtype=np.int64)
    out = np.zeros(len(s), dtype=np.uint64)
    taken = np.zeros(len(s), dtype=bool)
    rest = []
    for i, t in enumerate(shards):
        t = np.asarray(t, dtype=np.uint64)
        pos = np.flatnonzero(s == i)
        m = min(len(pos), len(t))
        out[pos[:m]] = t[:m]
        taken[pos[:m]] = True
        rest.append(t[m:])
    return np.concatenate([out[taken], *rest])


def pack_small(values: np.ndarray, width: int) -> int:
    """``pack`` for many fields of at most 63 bits, a million at a time through numpy bit arrays."""
    chunks = []
    for start in range(0, len(values), 1 << 20):
        v = np.ascontiguousarray(values[start:start + (1 << 20)], dtype="<u8")
        bits = np.unpackbits(v.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")[:, :width]
        chunks.append(bits.reshape(-1))
    if not chunks:
        return 0
    return int.from_bytes(np.packbits(np.concatenate(chunks), bitorder="little").tobytes(), "little")


def unpack_small(packed: int, width: int, n: int) -> np.ndarray:
    """Python mirror of ``Pycert.Packed.fields`` for fields of at most 63 bits: the first ``n``."""
    nbytes = max((width * n + 7) // 8, (packed.bit_length() + 7) // 8)
    bits = np.unpackbits(np.frombuffer(packed.to_bytes(nbytes, "little"), dtype=np.uint8), bitorder="little")
    out = np.empty(n, dtype=np.uint64)
    for start in range(0, n, 1 << 20):
        m = min(n, start + (1 << 20)) - start
        rows = bits[start * width:(start + m) * width].reshape(m, width)
        wide = np.zeros((m, 64), dtype=np.uint8)
        wide[:, :width] = rows
        out[start:start + m] = np.packbits(wide, axis=1, bitorder="little").view("<u8").reshape(-1)
    return out


# ---------------------------------------------------------------------------- emitters


def sched_bits(shards: int) -> int:
    return max(1, (shards - 1).bit_length())


def plan_shard(refs: Sequence[int], sha256: str, name: str, lo: int, hi: int) -> pt.Packed:
    inst = pt.plan(refs, sha256, name)
    table = pt.unpack(inst.t, inst.wt + 1, inst.distinct)
    if not table or table[0] < lo or table[-1] >= hi:
        raise PycertError(f"{name}: its ids are not all in [{lo}, {hi}) (a split bug)")
    return inst


def render_shard(inst: pt.Packed, lo: int, hi: int, piece_bits: int = pt.PIECE_BITS) -> str:
    n, d = inst.refs, inst.distinct
    return "\n".join([
        "module",
        "",
        f"-- Generated by pycert.lean.emit.shards: one shard of a trace, {n} references with ids in "
        f"[{lo}, {hi}), {d} distinct.",
        "-- Its vectors are private to this module: a module that imports it sees only its headline.",
        "public import Pycert.Shards",
        "",
        *pt.ASYNC_OFF,
        f"namespace {INSTANCE_NAMESPACE}.{inst.name}",
        "open Pycert.Packed Pycert.PackedTrace Pycert.Shards",
        "",
        *pt.data_defs(inst, piece_bits),
        "/-- The shard: the trace's references with ids in its band, in the trace's order. -/",
        f"public noncomputable def trace : List Nat := sdecode {lo} {TOP} {inst.w} {n} X {inst.wt} {d} S net",
        "",
        f"theorem checked : shardOK {inst.w} {n} X K {inst.wt} {d} S {lo} {hi} {TOP} = true := by decide +kernel",
        "",
        f"/-- The shard has {n} references and {d} distinct ids, each within [{lo}, {hi}). -/",
        f"public theorem shard : trace.length = {n} ∧ Pycert.distinct trace = {d} ∧",
        f"    ∀ x, x ∈ trace → Within {lo} {hi} {TOP} x :=",
        "  shardOK_sound net checked",
        "",
        f"end {INSTANCE_NAMESPACE}.{inst.name}",
        "",
    ])


def emit_shard(refs: Sequence[int], sha256: str, name: str, lo: int, hi: int,
               piece_bits: int = pt.PIECE_BITS) -> tuple[str, tuple[int, int]]:
    """Lean source of the shard of ``refs`` (ids in ``[lo, hi)``) and its figures (references, distinct
    ids), decoded back before it is written (as ``packed_trace.emit_instance``). Takes only what the
    shard needs, so that a worker is sent its own references and nothing else."""
    inst = plan_shard(refs, sha256, name, lo, hi)
    if decode_shard(inst, lo) != pt.as_ids(refs):
        raise PycertError(f"{name}: the packed shard does not decode to its references (an emitter bug)")
    return render_shard(inst, lo, hi, piece_bits), (inst.refs, inst.distinct)


def emit_sched(part: np.ndarray, shards: int, name: str, first: int, piece_bits: int = pt.PIECE_BITS) -> str:
    """Lean source of a schedule module: the shard of each of references ``first`` … of the trace, packed."""
    bits = sched_bits(shards)
    q = pack_small(part, bits)
    if not np.array_equal(unpack_small(q, bits, len(part)), part):
        raise PycertError(f"{name}: the packed schedule does not decode to itself (an emitter bug)")
    return "\n".join([
        "module",
        "",
        f"-- Generated by pycert.lean.emit.shards: which shard references {first} to {first + len(part) - 1} of the "
        "trace come from.",
        "public import Pycert.Packed",
        "",
        *pt.ASYNC_OFF,
        f"namespace {INSTANCE_NAMESPACE}.{name}",
        "",
        *pt.nat_defs("Q", f"Field `j` ({bits} bits) is the shard of reference {first} + `j`.", q, piece_bits),
        f"/-- The shard of each of references {first} to {first + len(part) - 1}, in order. -/",
        f"public noncomputable def sched : List Nat := Pycert.Packed.fields (2 ^ {bits}) {len(part)} Q",
        "",
        f"end {INSTANCE_NAMESPACE}.{name}",
        "",
    ])


def emit_whole(lay: Layout, figures: Sequence[tuple[int, int]]) -> str:
    """Lean source of the composition: the trace is its shards merged by the schedule, and its
    figures are the sums of the shards' (``figures[i]``: shard ``i``'s references and distinct ids,
    as its headline states them)."""
    if len(figures) != lay.shards:
        raise PycertError(f"{lay.name}: {len(figures)} shard figures for {lay.shards} shards")
    n = sum(f[0] for f in figures)
    d = sum(f[1] for f in figures)
    shards = [f"{INSTANCE_NAMESPACE}.{lay.shard_name(i)}" for i in range(lay.shards)]
    scheds = [f"{INSTANCE_NAMESPACE}.{lay.sched_name(t)}.sched" for t in range(lay.sched_modules)]
    chain = "(Shards.nil _)"
    for s in reversed(shards):
        chain = f"(Shards.cons {s}.shard\n    {chain})"
    return "\n".join([
        "module",
        "",
        f"-- Generated by pycert.lean.emit.shards: {n} references, {d} distinct blocks, every reference, "
        f"checked in {lay.shards} shards.",
        "-- Checked by the kernel from the shards' headlines; nothing here is an assumption.",
        "public import Pycert.Shards",
        "public import Pycert.Ceiling",
        *(f"public import {lay.shard_name(i)}" for i in range(lay.shards)),
        *(f"public import {lay.sched_name(t)}" for t in range(lay.sched_modules)),
        "",
        *pt.ASYNC_OFF,
        f"namespace {INSTANCE_NAMESPACE}.{lay.name}",
        "open Pycert.Shards",
        "",
        "/-- sha256 of the trace file these references were read from. -/",
        f'public def sha256 : String := "{lay.sha256}"',
        "",
        "/-- The shard each reference comes from, in the trace's order. -/",
        "public noncomputable def sched : List Nat :=",
        "  " + " ++\n  ".join(scheds),
        "",
        "/-- The trace: its shards merged in the trace's order. -/",
        "public noncomputable def trace : List Nat := merge sched",
        "  [" + ",\n   ".join(f"{s}.trace" for s in shards) + "]",
        "",
        f"theorem cuts_ok : cutsOK {TOP} [{', '.join(map(str, lay.cuts))}] = true := by decide +kernel",
        "",
        "theorem parts : trace.length = total [" + ", ".join(str(f[0]) for f in figures) + "] ∧",
        "    Pycert.distinct trace = total [" + ", ".join(str(f[1]) for f in figures) + "] :=",
        f"  merge_figures sched cuts_ok\n    {chain}",
        "",
        f"theorem refs_eq : trace.length = {n} := parts.1.trans (by decide +kernel)",
        "",
        f"theorem distinct_eq : Pycert.distinct trace = {d} := parts.2.trans (by decide +kernel)",
        "",
        *pt.headline_lines(lay.name, n, d),
    ])


def check_merge(ids: np.ndarray, lay: Layout, parts: Sequence[np.ndarray]) -> None:
    """Refuse a layout whose schedule and shards, merged as Lean merges them, are not the trace."""
    if not np.array_equal(merge(lay.owner, parts), np.asarray(ids, dtype=np.uint64)):
        raise PycertError(f"{lay.name}: the shards merged by the schedule are not the trace (an emitter bug)")
