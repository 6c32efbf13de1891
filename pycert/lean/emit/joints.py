"""Emit a trace at a capacity in pieces, both ways with bypass (``lean/Pycert/Joints.lean``,
``SortedJoints.lean``): where to split it (after references that are cuts of the cut list with bypass, so
that the pieces' bound is the whole trace's), the pairs of Belady's witness left open at each joint,
each piece as a sorted instance of its own (:mod:`pycert.lean.emit.capacity`) of the open blocks it
starts with followed by its references, and the composition that glues the pieces and states the whole
trace's optimum with bypass.

A piece's instance is the list ``P ++ b``: ``P`` the blocks of the witness's pairs open where the piece
starts (the previous piece's ``Q``, in the order of their places there), ``b`` its references. Every
place of ``P`` is a start, none an end, and a cut sits at ``P``'s last place, so that no reuse from
``P`` into ``b`` is counted free. Nothing here is trusted: a wrong ``P``, ``Q``, plane or split makes a
check false or the composition fail to typecheck.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from pycert.core.errors import InputError, PycertError
from pycert.lean.emit import INSTANCE_NAMESPACE, packed_trace
from pycert.lean.emit.capacity import Bound, Plan, closing, cut_lines, linked_lines, sorted_lines, witness_lines
from pycert.lean.emit.sorting import plane


class JointPlan(BaseModel):
    """What a piece states (``Pycert.Joints.PieceBoth P b Q refs cuts free capacity hits``)."""

    refs: int
    """``N``: its own references, after the open blocks it starts with"""
    opened: list[int]
    """``P``: the blocks of the witness's pairs open where it starts"""
    left_open: list[int]
    """``Q``: the blocks of its pairs open after its last reference"""
    cuts: int
    free: int
    capacity: int
    hits: int
    """``h``: the witness's ends among its references"""


def split_after_cuts(n: int, cuts: Sequence[int], max_refs: int) -> list[int]:
    """``t_0 = 0 < t_1 < … < t_K = n``: piece ``k`` is references ``t_k`` to ``t_{k+1} - 1``, at most ``max_refs``
    of them, and every inner piece ends at a cut (``t_k - 1`` is one), so that the glue's cut at each joint is
    one of the cut list's and the pieces' bound is the whole trace's (``Pycert.Joints.pieceA_glue``). The
    pieces are about equal; refused where no cut lies within reach (a split elsewhere loosens the bound)."""
    if max_refs < 2:
        raise InputError(f"a piece holds at least 2 references, not {max_refs}")
    y = np.asarray(cuts, dtype=np.int64)
    points = [0]
    if n > max_refs and not len(y):
        raise InputError(f"the cut list with bypass at this capacity is empty (no cache of that size ever has "
                         f"to give up a reuse), so there is nowhere to split the trace's {n:,} references without "
                         "loosening the bound: its optimum at this capacity is the ceiling (the best at any size), which "
                         "`pycert prove ceiling` proves at any length")
    while n - points[-1] > max_refs:
        t = points[-1]
        left = n - t
        share = -(-left // -(-left // max_refs))
        lo, hi = np.searchsorted(y, t), np.searchsorted(y, t + max_refs - 1, side="right")
        if lo >= hi:
            raise InputError(f"no cut of the bound with bypass lies between references {t:,} and "
                             f"{t + max_refs - 1:,} (counted from 0), so the trace cannot be split into pieces of at most "
                             f"{max_refs:,} references there without loosening the bound; give a larger --shard-refs or "
                             "a smaller capacity")
        reach = y[lo:hi]
        points.append(int(reach[np.argmin(np.abs(reach - (t + share - 1)))]) + 1)
    points.append(n)
    return points


def next_reference(refs: np.ndarray) -> np.ndarray:
    """For each reference, the time of the next reference to its block (``len(refs)`` where there is none)."""
    n = len(refs)
    order = np.argsort(refs, kind="stable")
    nxt = np.full(n, n, dtype=np.int64)
    same = refs[order[1:]] == refs[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


@dataclass(frozen=True)
class PieceData:
    """One piece's instance data, computed from the whole trace's witness: what the piece module is emitted from."""

    refs: np.ndarray
    """``P ++ b``, the instance's list"""
    opened: list[int]
    cuts: list[int]
    """The cut list of ``P ++ b``: ``P``'s last place, then the cut list's cuts inside the piece"""
    starts: np.ndarray
    ends: np.ndarray


def piece_data(refs: np.ndarray, cuts: Sequence[int], starts: np.ndarray, ends: np.ndarray,
               points: Sequence[int]) -> list[PieceData]:
    """Each piece's list, cuts and witness, from the whole trace's cut list and Belady's pairs with bypass:
    the blocks carried across each joint are the starts whose next reference lies beyond it (every start's
    next reference is an end), carried on through the pieces that do not reference them."""
    nxt = next_reference(refs)
    y = np.asarray(cuts, dtype=np.int64)
    starts, ends = np.asarray(starts, dtype=bool), np.asarray(ends, dtype=bool)
    out: list[PieceData] = []
    opened: list[int] = []
    n = len(refs)
    for k, (a, b) in enumerate(zip(points, points[1:])):
        p = len(opened)
        # the joint's cut is the glue's: a piece's own cuts stop before its last reference, the last piece's do not
        own = y[(y >= a) & (y < (b if b == n else b - 1))] - a + p
        local = np.concatenate([[p - 1] if p else [], own]).astype(np.int64)
        body = refs[a:b]
        r = np.concatenate([np.asarray(opened, dtype=refs.dtype), body])
        s = np.concatenate([np.ones(p, dtype=bool), starts[a:b]])
        e = np.concatenate([np.zeros(p, dtype=bool), ends[a:b]])
        out.append(PieceData(refs=r, opened=list(opened), cuts=local.tolist(), starts=s, ends=e))
        seen = set(np.unique(body).tolist())
        carried = [x for x in opened if x not in seen]
        fresh = np.flatnonzero(starts[a:b] & (nxt[a:b] >= b)) + a
        opened = carried + [int(x) for x in refs[fresh]]
        if k + 2 < len(points) and len(set(opened)) != len(opened):
            raise PycertError(f"the witness leaves a block open twice after reference {b - 1} (an emitter bug)")
    return out


def left_open(data: PieceData) -> tuple[np.ndarray, list[int], list[int]]:
    """The starts of a piece's list with no later reference to their block in it (``out``), their places and blocks."""
    r = data.refs
    out = data.starts & (next_reference(r) >= len(r))
    places = np.flatnonzero(out)
    return out, places.tolist(), [int(x) for x in r[places]]


def _ids(xs: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, xs)) + "]" if len(xs) else "([] : List Nat)"


def emit_joint_piece(data: PieceData, sha256: str, name: str, capacity: int,
                     piece_bits: int = packed_trace.PIECE_BITS) -> tuple[str, JointPlan]:
    """Lean module of one piece: it proves ``Pycert.Joints.PieceBoth P b Q N m F C h`` from the checks of
    the sorted instance of ``P ++ b``, and only that leaves the module."""
    body, base, ids, sort = sorted_lines(data.refs, sha256, name, capacity, None, piece_bits)
    n, p = base.refs, len(data.opened)
    if ids[:p] != data.opened:
        raise PycertError(f"{name}: the piece's list does not start with its open blocks (an emitter bug)")
    try:
        cut_part, free = cut_lines(sort, "A", data.cuts, admission=True)
    except PycertError as err:
        raise PycertError(f"{name}: {err}") from None
    witness, h = witness_lines(sort, "A", capacity, data.starts, data.ends, admission=True, closing="out")
    out, places, blocks = left_open(data)
    k0 = sum(1 for c in data.cuts if c < p)
    plan = JointPlan(refs=n - p, opened=list(data.opened), left_open=blocks, cuts=len(data.cuts) - k0, free=free,
                     capacity=capacity, hits=h)
    inst = packed_trace.plan(data.refs, sha256, name, pow2_fields=True)
    look = f"{inst.w} X {inst.wt} {inst.distinct} S net"
    m_log = sort.m_log
    P, Q = _ids(plan.opened), _ids(plan.left_open)
    ns = f"{INSTANCE_NAMESPACE}.{name}"
    lines = [
        "module",
        "",
        f"-- Generated by pycert.lean.emit.joints: a piece of {plan.refs} references after {p} open blocks, "
        f"{plan.cuts} cuts of its own, capacity {capacity}, every reference.",
        "-- Checked by the kernel from the encoded references, cuts and witness; nothing here is an assumption.",
        "public import Pycert.SortedJoints",
        "",
        *body,
        *cut_part,
        *packed_trace.nat_defs("out", "The starts left open: bit `i` is set when start `i` has no later reference to "
                               "its block in the piece.", plane(out), piece_bits),
        *witness,
        *linked_lines(sort),
        f"theorem looks_ok : SortedJoints.looksAt {look} 0 {P} = true := by decide +kernel",
        "",
        f"theorem edge_ok : SortedJoints.edgeOK {p} sA eA = true := by decide +kernel",
        "",
        f"theorem out_ok : SortedJoints.outOK {m_log} W same sA out = true := by decide +kernel",
        "",
        f"theorem open_count : Planes.popcount {m_log} (out &&& (2 ^ {n} - 1)) = List.length {_ids(places)} := "
        "by decide +kernel",
        "",
        f"theorem open_places : SortedJoints.posOK {n} out {_ids(places)} = true := by decide +kernel",
        "",
        f"theorem open_ids : SortedJoints.looksOK {look} {_ids(places)} {Q} = true := by decide +kernel",
        "",
        f"theorem prefix_cuts : Planes.val AA {p} = {k0} := by decide +kernel",
        "",
        f"/-- **The piece.** After the {p} blocks open where it starts, {plan.refs} references with {plan.cuts} cuts and "
        f"at most {plan.free} free reuses, and a witness of {h} hits at {capacity} blocks leaving {len(blocks)} blocks "
        "open (`Pycert.Joints.PieceBoth`). -/",
        f"public theorem headline : Pycert.Joints.PieceBoth {P} (trace.drop {p}) {Q} {plan.refs} {plan.cuts} "
        f"{plan.free} {capacity} {h} :=",
        # `decide` in the elaborator runs out of recursion on the length of a list of 128 64-bit ids; the kernel does not
        "  SortedJoints.piece_of_looks refs_eq (by decide) adjacent linked (by decide +kernel) (by decide) looks_ok cuts_okA "
        "flags_okA cuts_eqA",
        "    prefix_cuts (by decide) (by decide) witness_okA starts_okA ends_okA cover_okA ends_eqA edge_ok out_ok "
        "open_count open_places open_ids",
        "",
        f"end {ns}",
        "",
    ]
    return "\n".join(lines), plan


def glue_plan(pieces: Sequence[JointPlan], distinct: int) -> Plan:
    """What the pieces glued state (``Pycert.Joints.both_glue``'s sums): the bound with bypass
    ``C · m + F`` and the witness's hits, as a capacity plan of that model alone."""
    k, c = len(pieces), pieces[0].capacity
    bound = Bound(per_cut=c, cuts=sum(p.cuts for p in pieces) + k - 1, free=sum(p.free for p in pieces),
                  witness_hits=sum(p.hits for p in pieces))
    return Plan(refs=sum(p.refs for p in pieces), distinct=distinct, capacity=c, cuts=0, free=0, admission=bound)


def emit_joint_glue(name: str, sha256: str, piece_names: Sequence[str], pieces: Sequence[JointPlan],
                    distinct: int) -> tuple[str, Plan]:
    """Lean source of the composition of a trace's pieces: the trace is the pieces' references in order (each
    piece's list without its open blocks), and its headline ``OptimumA trace N C H`` follows from the pieces'
    headlines (``both_glue``, ``optimumA_of_both``): the open blocks each piece leaves are, literally, those the
    next one starts with. ``distinct`` only goes into the comment."""
    if len(pieces) < 2 or len(pieces) != len(piece_names):
        raise PycertError(f"{name}: {len(pieces)} pieces for {len(piece_names)} modules (at least two)")
    if pieces[0].opened:
        raise PycertError(f"{name}: the first piece starts with open pairs (an emitter bug)")
    for k in range(1, len(pieces)):
        if pieces[k - 1].left_open != pieces[k].opened:
            raise PycertError(f"{name}: piece {k} does not start with the blocks piece {k - 1} leaves open (an emitter bug)")
    whole = glue_plan(pieces, distinct)
    bound = whole.admission
    assert bound is not None
    if bound.witness_hits != bound.max_hits:
        raise PycertError(f"{name}: the pieces bound the hits with bypass at {whole.capacity} blocks by "
                          f"{bound.max_hits}, their witness hits {bound.witness_hits}: the split or the cut list was not "
                          "optimal, and a bound that is not attained is not written as the optimum")
    mods = [f"{INSTANCE_NAMESPACE}.{m}" for m in piece_names]
    c = whole.capacity
    first = pieces[0]
    steps = [f"noncomputable def joined0 : List Nat := {mods[0]}.trace.drop 0", "",
             f"theorem glued0 : Pycert.Joints.PieceBoth [] joined0 {_ids(first.left_open)} {first.refs} {first.cuts} "
             f"{first.free} {c} {first.hits} := {mods[0]}.headline", ""]
    n, m, f, h = first.refs, first.cuts, first.free, first.hits
    for k in range(1, len(pieces)):
        q = pieces[k]
        n, m, f, h = n + q.refs, m + q.cuts + 1, f + q.free, h + q.hits
        steps += [f"noncomputable def joined{k} : List Nat := joined{k - 1} ++ {mods[k]}.trace.drop {len(q.opened)}", "",
                  f"theorem glued{k} : Pycert.Joints.PieceBoth [] joined{k} {_ids(q.left_open)} {n} {m} {f} {c} {h} :=",
                  f"  Pycert.Joints.both_glue glued{k - 1} {mods[k]}.headline (by decide) (by decide) (by decide) "
                  "(by decide) (by decide) (by decide)", ""]
    last = len(pieces) - 1
    ns = f"{INSTANCE_NAMESPACE}.{name}"
    H = bound.witness_hits
    lines = [
        "module",
        "",
        f"-- Generated by pycert.lean.emit.joints: {whole.refs} references, {distinct} distinct blocks, capacity {c}, "
        f"{bound.cuts} cuts, every reference, checked in {len(pieces)} pieces both ways.",
        "-- Checked by the kernel from the pieces' headlines; nothing here is an assumption.",
        "public import Pycert.Joints",
        *(f"public import {m}" for m in piece_names),
        "",
        *packed_trace.ASYNC_OFF,
        f"namespace {ns}",
        "",
        "/-- sha256 of the trace file these references were read from. -/",
        f'public def sha256 : String := "{sha256}"',
        "",
        *steps,
        "/-- The trace: its pieces' references in order, each piece's list without the open blocks it starts with. -/",
        f"public noncomputable def trace : List Nat := joined{last}",
        "",
        f"/-- **Headline.** The trace has {whole.refs} references; caches of {c} blocks with bypass that start "
        f"empty hit at most C · {bound.cuts} cuts + {bound.free} free reuses = {bound.max_hits} times on it, and one hits "
        f"{H} (Belady's pairs with bypass, checked piece by piece with the pairs open across each joint): "
        "`Pycert.Admission.OptimumA`. -/",
        f"public theorem headline : Pycert.Admission.OptimumA trace {whole.refs} {c} {H} :=",
        f"  Pycert.Joints.optimumA_of_both glued{last} (by decide)",
        *closing(ns),
    ]
    return "\n".join(lines), whole
