"""Emit the Lean instance that kernel-checks the optimum at one capacity of a whole trace.

One file per trace and capacity ``C`` (``lean/Pycert/SortedTrace.lean`` has the layout), importing
only the library:

* the trace as the whole-trace ceiling instance packs it (:mod:`pycert.lean.emit.packed_trace`, with
  fields a power of two bits wide), checked by ``traceOK``: the theorems are about ``decode``, the
  trace's own ids;
* the references sorted by (block, time) by a Beneš network on whole bit planes
  (:mod:`pycert.lean.emit.sorting`): each reference and the previous one to its block sit at
  consecutive places (``adjacent_of_sortOK``);
* per cache model, a cut list as a bit plane and its running count (``cutsOK``), and the reuses no cut
  separates, counted (``flags``): the bound ``(C - 1) · m + F`` for caches that store every missed
  block, ``C · m + F`` for caches with bypass (``flags`` with no cut plane: no cut at or
  after the earlier reference, ``Pycert.SortedAdmission``);
* per model, a witness: the starts and ends of Belady's hit pairs (with bypass for the
  model with bypass), their running counts and the test that at most ``C - 1`` (``C``) pairs are open at every
  step (``Pycert.SortedOptimum``, ``Pycert.SortedAdmission``);
* with the requests' first references (a plane), the test that every end that does not start its
  request follows an end: a prefix cache reaches the optimum with bypass.

Which headline a file states is its layout (:data:`ENCODING`, :data:`OPTIMUM_ENCODING`,
:data:`OPTIMA_ENCODING`). Nothing here is trusted: any network is a bijection, any cut list gives a
sound bound, a wrong plane makes a check false. Python mirrors what the kernel computes so that it
writes the literals the kernel will agree with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from pycert.core.errors import InputError, PycertError
from pycert.core.limits import MAX_PIECE_REFS
from pycert.lean.emit import CAPACITY_ENCODING as ENCODING
from pycert.lean.emit import CAPACITY_OPTIMA_ENCODING as OPTIMA_ENCODING
from pycert.lean.emit import CAPACITY_OPTIMUM_ENCODING as OPTIMUM_ENCODING
from pycert.lean.emit import CAPACITY_PIECES_ENCODING as PIECES_ENCODING
from pycert.lean.emit import INSTANCE_NAMESPACE, packed_trace
from pycert.lean.emit.sorting import Sorted, places_log2, plane, planes, sort_lines, sort_of

MAX_SORT_BITS = MAX_PIECE_REFS << 5
"""The largest vector the kernel transposes within the wasm heap: ``2 ** M`` places of ``2 ** f``-bit
fields. Measured: the conversation trace's 2^24 bits check at 3.6 GB of RSS; a million references'
2^25 run out of the 2 GiB heap (docs/capacity-encodings.md), so a longer trace is checked in pieces."""


def cut_planes(n: int, cuts: Sequence[int], m: int) -> tuple[np.ndarray, np.ndarray]:
    """The cut indicator and its running count ``A(t)`` = cuts before ``t``, at every place below ``2 ** m``
    and at ``n`` (``cutsOK`` reads ``A(n)``, and a trace of exactly ``2 ** m`` references has no place ``n``)."""
    c = np.zeros(max(1 << m, n + 1), dtype=np.int64)
    c[np.asarray(cuts, dtype=np.int64)] = 1
    a = np.concatenate([[0], np.cumsum(c)[:-1]])
    return c, a


def flag_plane(same: np.ndarray, sigma: np.ndarray, c: np.ndarray | None, a: np.ndarray) -> np.ndarray:
    """Places where ``same`` holds and no cut separates the two references: none strictly between their
    times (``c``, the cut plane: ``A(j) = A(i) + c(i)``), or with ``c`` None none at or after the earlier
    and before the later (``A(j) = A(i)``, the flags with bypass)."""
    a_s = a[sigma]
    step = np.zeros(len(sigma), dtype=np.int64) if c is None else c[sigma]
    out = np.zeros(len(sigma), dtype=bool)
    out[1:] = same[1:] & (a_s[1:] == a_s[:-1] + step[:-1])
    return out


@dataclass(frozen=True)
class Side:
    """One cache model's data for an instance: its cut list and its witness (the starts and ends of hit
    pairs, flags over the references; None: the bound only)."""

    cuts: Sequence[int]
    witness: tuple[np.ndarray, np.ndarray] | None = None


class Bound(BaseModel):
    """One model's bound and witness as an instance states them: ``H = per_cut · cuts + free``."""

    per_cut: int
    """``C - 1`` for caches that store every missed block, ``C`` with bypass."""
    cuts: int
    free: int
    witness_hits: int | None = None
    """The witness's hits (its ends; its starts for the model without admission), when there is one."""

    @property
    def max_hits(self) -> int:
        return self.per_cut * self.cuts + self.free


class Plan(BaseModel):
    """What a capacity instance states, and the figures Python expects the kernel to agree with."""

    refs: int
    distinct: int
    capacity: int
    cuts: int
    """``m``: the cut list's length (caches that store every missed block)"""
    free: int
    """``F``: reuse pairs with no cut strictly between"""
    witness_hits: int | None = None
    """The witness's pairs, when the instance carries one: the headline states this figure as ``H``."""
    admission: Bound | None = None
    """The same with bypass, when the instance states it."""
    prefix: bool = False
    """Whether the instance checks that a prefix cache reaches the optimum with bypass."""

    @property
    def max_hits(self) -> int:
        """``H = (C - 1) · m + F``, the headline's bound."""
        return (self.capacity - 1) * self.cuts + self.free


def fits_one(n: int, distinct: int) -> bool:
    """Whether a trace of ``n`` references over ``distinct`` blocks sorts within one instance's
    ``MAX_SORT_BITS`` (fields as :func:`pycert.lean.emit.packed_trace.plan` widens them)."""
    w = max(2, distinct.bit_length())
    return 1 << (places_log2(n) + ((1 << w.bit_length()) - 1).bit_length()) <= MAX_SORT_BITS


def count_lines(sort: Sorted, label: str, of: str, counts: np.ndarray, width: int, what: str,
                computed: bool) -> list[str]:
    """``label``, the running count of the plane ``of`` in ``width`` planes: the planes as literals, or
    ``computed`` by the kernel (``Pycert.Curve.runP``, tested by ``cutsOK`` like the literals)."""
    if computed:
        return [f"/-- The running count of {what}, computed by the kernel (`Curve.runP`) and tested by `cutsOK`. -/",
                f"noncomputable def {label} : List Nat := Curve.runP {sort.m_log} {width} {of}", ""]
    lines = []
    for b, pb in enumerate(planes(counts, width)):
        doc = f"Plane {b} of `{label}`, " + ("the cuts before each time." if what == "cuts" else "a running count.")
        lines += packed_trace.nat_defs(f"{label}{b}", doc, pb, sort.piece_bits)
    return lines + [f"/-- The running count of {what}, as bit planes. -/",
                    f"noncomputable def {label} : List Nat := [{', '.join(f'{label}{b}' for b in range(width))}]", ""]


def cut_lines(sort: Sorted, tag: str, cuts: Sequence[int], admission: bool,
              computed: bool = False) -> tuple[list[str], int]:
    """The cut plane ``cut<tag>``, its running count ``A<tag>`` (literal planes, or ``computed`` by the
    kernel: :func:`count_lines`) and the checks that count the cuts and the free reuses (with
    ``admission``, free of cuts at or after the earlier reference: ``flags`` of no cut plane); and ``F``."""
    n, m_log = sort.n, sort.m_log
    y = np.asarray(cuts, dtype=np.int64)
    if len(y) and (y[0] < 0 or y[-1] >= n or np.any(np.diff(y) <= 0)):
        raise PycertError(f"the cut list is not strictly increasing below {n} (a bug in the recipe)")
    c, a = cut_planes(n, y, m_log)
    free = int(flag_plane(sort.same, sort.sigma, None if admission else c, a).sum())
    aw = max(1, len(y).bit_length())
    lines = packed_trace.nat_defs(f"cut{tag}", f"The {len(y)} cuts: bit `t` is set when time `t` is a cut.", plane(c),
                                  sort.piece_bits)
    lines += count_lines(sort, f"A{tag}", f"cut{tag}", a, aw, "cuts", computed)
    lines += [
        f"theorem cuts_ok{tag} : SortedTrace.cutsOK {n} A{tag} cut{tag} = true := by decide +kernel",
        "",
        f"theorem flags_ok{tag} : Planes.popcount {m_log} (SortedTrace.flags {m_log} W same "
        f"{0 if admission else f'cut{tag}'} A{tag}) = {free} := by decide +kernel",
        "",
        f"theorem cuts_eq{tag} : Planes.val A{tag} {n} = {len(y)} := by decide +kernel",
        "",
    ]
    return lines, free


def witness_lines(sort: Sorted, tag: str, capacity: int, starts: np.ndarray, ends: np.ndarray,
                  admission: bool, computed: bool = False, closing: str | None = None) -> tuple[list[str], int]:
    """The witness's literals and checks: the starts and ends of the hit pairs as planes in time order
    (``s<tag>``, ``e<tag>``), their running counts, ``witnessOK`` and the cover test: at most ``C - 1``
    pairs open at every step, or with ``admission`` at most ``C`` live (the start counts read a step
    later). Returns the lines and the hits stated: the starts without bypass (``starts_eq``), the
    ends with (``ends_eq``). ``closing``: a plane of starts left open at the end (a piece's, which
    :mod:`pycert.lean.emit.joints` writes), whose pairs ``witnessOK`` leaves out. Whatever the arrays hold
    is written: the kernel decides."""
    n = sort.n
    s_bits, e_bits = np.asarray(starts, dtype=bool)[:n], np.asarray(ends, dtype=bool)[:n]
    a_s = np.concatenate([[0], np.cumsum(s_bits, dtype=np.int64)])
    a_e = np.concatenate([[0], np.cumsum(e_bits, dtype=np.int64)])
    h = int(a_e[-1] if admission else a_s[-1])
    # wide enough that AE(t + 1) + K does not wrap (a wrapped sum would only make coverOK fail)
    aw = max(1, (max(int(a_s[-1]), int(a_e[-1])) + capacity).bit_length())
    lines = packed_trace.nat_defs(f"s{tag}", "The starts: bit `i` is set when reference `i`'s next reference to its "
                                  "block is to hit.", plane(s_bits), sort.piece_bits)
    lines += packed_trace.nat_defs(f"e{tag}", "The ends: bit `j` is set when reference `j` is to hit.", plane(e_bits),
                                   sort.piece_bits)
    lines += count_lines(sort, f"AS{tag}", f"s{tag}", a_s, aw, "starts", computed)
    lines += count_lines(sort, f"AE{tag}", f"e{tag}", a_e, aw, "ends", computed)
    cover = (f"SortedOptimum.coverOK {n} {capacity} (AS{tag}.map (· >>> 1)) AE{tag}" if admission
             else f"SortedOptimum.coverOK {n} ({capacity} - 1) AS{tag} AE{tag}")
    count = f"theorem ends_eq{tag} : Planes.val AE{tag} {n} = {h}" if admission else \
        f"theorem starts_eq{tag} : Planes.val AS{tag} {n} = {h}"
    lines += [
        f"theorem witness_ok{tag} : SortedOptimum.witnessOK {sort.m_log} W same "
        f"{f'(s{tag} ^^^ {closing})' if closing else f's{tag}'} e{tag} = true := by decide +kernel",
        "",
        f"theorem starts_ok{tag} : SortedTrace.cutsOK {n} AS{tag} s{tag} = true := by decide +kernel",
        "",
        f"theorem ends_ok{tag} : SortedTrace.cutsOK {n} AE{tag} e{tag} = true := by decide +kernel",
        "",
        f"theorem cover_ok{tag} : {cover} = true := by decide +kernel",
        "",
        f"{count} := by decide +kernel",
        "",
    ]
    return lines, h


def sorted_lines(refs: Sequence[int], sha256: str, name: str, capacity: int, cuts: Sequence[int] | None,
                 piece_bits: int, exposed: bool = False) -> tuple[list[str], Plan, list[int], Sorted]:
    """The definitions and checks every capacity file holds, up to the cuts of the model without
    bypass (``cuts_eq``; none when ``cuts`` is None: a curve writes them per capacity), what they
    state, the trace's ids and the sort. The packing is decoded back before anything is written, as for
    the whole-trace instance. ``exposed``: the block numbers ``X`` public with their value, and ``facts``,
    what the decoded trace is in terms of them (a keyed trace is stated over the same ``X``:
    :mod:`pycert.lean.emit.keyed`)."""
    if capacity < 1:
        raise PycertError(f"{name}: capacity {capacity} (a capacity is at least one block)")
    inst = packed_trace.plan(refs, sha256, name, pow2_fields=True)
    ids = packed_trace.as_ids(refs)
    if packed_trace.decode(inst) != ids:
        raise PycertError(f"{name}: the packed instance does not decode to the trace (an emitter bug)")
    n, d, w = inst.refs, inst.distinct, inst.w
    f = w.bit_length()  # fields of 2 ** f bits
    m_log = places_log2(n)
    if 1 << (m_log + f) > MAX_SORT_BITS:
        raise InputError(f"{n} references over {d} blocks need a sort of 2^{m_log + f} bits, and one capacity "
                         f"instance holds 2^{MAX_SORT_BITS.bit_length() - 1} (the wasm Lean's heap)", where=name)
    wx = max(1, d.bit_length())
    x = np.asarray(packed_trace.unpack(inst.x, w + 1, n), dtype=np.int64)
    sort, words = sort_of(x, m_log, piece_bits, name)
    cut_part, free = [], 0
    try:  # before `same` is written: the cut lines' flags are what may edit it (pycert mutate)
        if cuts is not None:
            cut_part, free = cut_lines(sort, "", cuts, admission=False)
    except PycertError as err:
        raise PycertError(f"{name}: {err}") from None
    lines = [
        *packed_trace.ASYNC_OFF,
        f"namespace {INSTANCE_NAMESPACE}.{name}",
        "open Pycert.Packed Pycert.PackedTrace",
        "",
        "/-- sha256 of the trace file these references were read from. -/",
        f'def sha256 : String := "{inst.sha256}"',
        "",
        *packed_trace.data_defs(inst, piece_bits, exposed=exposed),
    ]
    lines += [
        *sort_lines(sort, words, f, "block"),
        *cut_part,
        "/-- The trace: its references' block ids, in order. -/",
        f"public noncomputable def trace : List Nat := decode {w} {n} X {inst.wt} {d} S net",
        "",
        f"theorem checked : traceOK {w} {n} X K {inst.wt} {d} S = true := by decide +kernel",
        "",
        f"theorem refs_eq : trace.length = {n} := (traceOK_sound net checked).1",
        "",
        *(decoded_facts(w, n, d) if exposed else []),
        f"theorem sort_ok : SortedTrace.sortOK {f} {m_log} {n} {wx} X rot W same = true := by decide +kernel",
        "",
        f"theorem adjacent : SortedTrace.Adjacent trace (2 ^ {m_log}) (SortedTrace.net {m_log} W) same :=",
        "  SortedTrace.adjacent_of_sortOK checked (by decide) (by decide) (by decide) (by decide) (by decide +kernel)",
        "    (by decide +kernel) sort_ok",
        "",
    ]
    plan = Plan(refs=n, distinct=d, capacity=capacity, cuts=len(cuts or ()), free=free)
    return lines, plan, ids, sort


def decoded_facts(w: int, n: int, d: int) -> list[str]:
    """``facts``: the decoded trace's length, and its block numbers ``X`` below ``D`` and equal exactly where
    the ids are (``Pycert.SortedTrace.decode_facts``), public for the module that keys the trace."""
    b = f"(2 ^ ({w} + 1))"
    return ["/-- The decoded trace in terms of its block numbers `X` (`SortedTrace.decode_facts`). -/",
            f"public theorem facts : trace.length = {n} ∧ (∀ t, t < {n} → fld {b} X t < {d}) ∧",
            f"    ∀ i j, i < {n} → j < {n} → (Pycert.nth trace i = Pycert.nth trace j ↔ fld {b} X i = fld {b} X j) :=",
            "  SortedTrace.decode_facts net checked", ""]


OPTIMUM_TERM = ("SortedOptimum.optimum_of_checks checked (by decide) (by decide) (by decide) (by decide) (by decide +kernel)\n"
                "    (by decide +kernel) sort_ok cuts_ok flags_ok cuts_eq (by decide) (by decide) witness_ok starts_ok ends_ok\n"
                "    cover_ok starts_eq")
"""The proof of ``Pycert.Capacity.Optimum`` from the checks of the model without bypass."""


ADMISSION_CHECKS = ("refs_eq (by decide) adjacent linked cuts_okA flags_okA cuts_eqA (by decide) witness_okA starts_okA "
                    "ends_okA cover_okA ends_eqA")
"""The arguments of ``optimumA_of_checks`` and ``prefixOptimum_of_checks``: the facts of the sort and the
checks of the model with bypass."""


def admission_model(sort: Sorted, capacity: int, side: Side, computed: bool = False) -> tuple[list[str], list[str], Bound]:
    """The model with bypass's cut lines and witness lines, and what they state."""
    if side.witness is None:
        raise PycertError("the model with bypass is stated both ways: it needs a witness")
    lines, free = cut_lines(sort, "A", side.cuts, admission=True, computed=computed)
    more, h = witness_lines(sort, "A", capacity, *side.witness, admission=True, computed=computed)
    return lines, more, Bound(per_cut=capacity, cuts=len(side.cuts), free=free, witness_hits=h)


def linked_lines(sort: Sorted) -> list[str]:
    """``linked``: what the sort says of every place of ``same`` (once per sort)."""
    return [f"theorem linked : SortedOptimum.Linked trace {sort.m_log} W same :=",
            "  SortedOptimum.linked_facts checked (by decide) (by decide) (by decide) (by decide +kernel) (by decide +kernel)"
            " sort_ok", ""]


def optimum_a_lines(n: int, capacity: int, h: int) -> list[str]:
    return [f"theorem optimumA : Pycert.Admission.OptimumA trace {n} {capacity} {h} :=",
            f"  SortedAdmission.optimumA_of_checks {ADMISSION_CHECKS}", ""]


def firsts_lines(sort: Sorted, firsts: np.ndarray, exposed: bool = False) -> list[str]:
    """The requests' first references as a public plane (the prefix headline names it); ``exposed``: with its
    value, for a module that compares it with another instance's."""
    lines = packed_trace.nat_defs("firsts", "The requests' first references: bit `j` is set when reference `j` starts a "
                                  "request (data, like the trace).", plane(np.asarray(firsts, dtype=bool)[:sort.n]),
                                  sort.piece_bits, exposed=exposed)
    return lines if exposed else [line.replace("noncomputable def firsts :", "public noncomputable def firsts :")
                                  for line in lines]


def prefix_lines(n: int, capacity: int, h: int) -> list[str]:
    return [f"theorem prefix_ok : SortedAdmission.prefixOK {n} firsts eA = true := by decide +kernel", "",
            f"theorem prefixOpt : Pycert.PrefixCache.PrefixOptimum trace firsts.testBit {n} {capacity} {h} :=",
            f"  SortedAdmission.prefixOptimum_of_checks {ADMISSION_CHECKS} prefix_ok", ""]


def admission_lines(sort: Sorted, capacity: int, side: Side, firsts: np.ndarray | None,
                    exposed: bool = False) -> tuple[list[str], Bound, bool]:
    """The model with bypass: its cuts, its witness, ``linked``, ``optimumA`` and, with the
    requests' first references, ``prefixOK`` and ``prefixOpt``."""
    lines, more, bound = admission_model(sort, capacity, side)
    h = bound.witness_hits
    assert h is not None
    lines += [*more, *linked_lines(sort), *optimum_a_lines(sort.n, capacity, h)]
    if firsts is not None:
        lines += [*firsts_lines(sort, firsts, exposed), *prefix_lines(sort.n, capacity, h)]
    return lines, bound, firsts is not None


def emit_instance(refs: Sequence[int], sha256: str, name: str, capacity: int, cuts: Sequence[int],
                  piece_bits: int = packed_trace.PIECE_BITS, witness: tuple[np.ndarray, np.ndarray] | None = None,
                  admission: Side | None = None, firsts: np.ndarray | None = None,
                  as_module: bool = False, workload: bool = False) -> tuple[str, Plan]:
    """Lean source stating, for exactly these references, ``Bounded trace N C H`` with the cut list
    ``cuts`` (strictly increasing times below N); with ``witness`` (the starts and ends of hit pairs,
    :func:`pycert.analysis.capacity.belady_pairs`) ``Optimum trace N C H``, ``H`` the number of starts;
    with ``admission`` as well (the other model's cuts and witness) ``Optima trace N C H HA``, and with
    ``firsts`` (the requests' first references) ``PrefixOptima trace firsts.testBit N C H HA HA``.
    ``as_module``: a Lean ``module`` whose data stays private but for its block numbers ``X`` and requests'
    first references, with ``facts`` on ``X`` (two instances stated together over the same ``X``,
    :mod:`pycert.lean.emit.salt_cost`). ``workload`` (both models only): a public theorem ``workload``, the
    trace's capacity-free ceiling ``Pycert.Ceiling.Bounded trace N D (N - D)`` from the trace check the instance
    makes anyway (a fleet's composition states it, :mod:`pycert.lean.emit.fleet`)."""
    if workload and admission is None:
        raise PycertError(f"{name}: the workload's ceiling is written beside both models only")
    if admission is not None and witness is None:
        raise PycertError(f"{name}: both models are stated both ways: a witness without bypass is needed too")
    if firsts is not None and admission is None:
        raise PycertError(f"{name}: the prefix test is about the witness with bypass")
    body, plan, _, sort = sorted_lines(refs, sha256, name, capacity, cuts, piece_bits, exposed=as_module)
    n = plan.refs
    module = "SortedTrace" if witness is None else "SortedOptimum" if admission is None else "SortedAdmission"
    lines = [
        *(["module", ""] if as_module else []),
        f"-- Generated by pycert.lean.emit.capacity: {n} references, {plan.distinct} distinct blocks, capacity "
        f"{capacity}, {plan.cuts} cuts, every reference.",
        "-- Checked by the kernel from the encoded references and cuts; nothing here is an assumption.",
        f"{'public ' if as_module else ''}import Pycert.{module}",
        *([f"{'public ' if as_module else ''}import Pycert.Ceiling"] if workload else []),
        "",
        *body,
    ]
    if witness is None:
        lines += [
            f"/-- **Headline.** The trace has {n} references, and no demand-fetch policy of capacity {capacity} "
            "blocks hits",
            f"more than (C - 1) · {plan.cuts} cuts + {plan.free} free reuses = {plan.max_hits} times on it "
            "(`Pycert.Capacity.Bounded`). -/",
            f"public theorem headline : Pycert.Capacity.Bounded trace {n} {capacity} {plan.max_hits} :=",
            "  SortedTrace.bounded_of_checks refs_eq adjacent cuts_ok flags_ok cuts_eq (by decide)",
        ]
        return "\n".join([*lines, *closing(f"{INSTANCE_NAMESPACE}.{name}")]), plan
    more, h = witness_lines(sort, "", capacity, *witness, admission=False)
    plan = plan.model_copy(update={"witness_hits": h})
    lines += more
    if admission is None:
        lines += [
            f"/-- **Headline.** The trace has {n} references, no demand-fetch policy of capacity {capacity} blocks hits "
            f"more than {h} times on it ((C - 1) · {plan.cuts} cuts + {plan.free} free reuses = {plan.max_hits} ≤ {h}), "
            f"and some policy of capacity {capacity} hits exactly {h} times (the {h} pairs of `s`): "
            "`Pycert.Capacity.Optimum`. -/",
            f"public theorem headline : Pycert.Capacity.Optimum trace {n} {capacity} {h} :=",
            f"  {OPTIMUM_TERM}",
        ]
        return "\n".join([*lines, *closing(f"{INSTANCE_NAMESPACE}.{name}")]), plan
    more, bound, prefix = admission_lines(sort, capacity, admission, firsts, exposed=as_module)
    plan = plan.model_copy(update={"admission": bound, "prefix": prefix})
    lines += [
        f"theorem optimum : Pycert.Capacity.Optimum trace {n} {capacity} {h} :=",
        f"  {OPTIMUM_TERM}",
        "",
        *more,
        *optima_headline(plan),
        *(workload_lines(plan) if workload else []),
    ]
    return "\n".join([*lines, *closing(f"{INSTANCE_NAMESPACE}.{name}")]), plan


def workload_lines(plan: Plan) -> list[str]:
    """The trace's capacity-free ceiling, from its trace check: every reference but a block's first can hit."""
    n, d = plan.refs, plan.distinct
    return ["", f"/-- The trace has {n} references over {d} distinct blocks: no cache of any size hits more than "
            f"{n - d} times on it (`Pycert.Ceiling.Bounded`). -/",
            f"public theorem workload : Pycert.Ceiling.Bounded trace {n} {d} {n - d} :=",
            "  Pycert.Ceiling.bounded_of_counts (traceOK_sound net checked).1 (traceOK_sound net checked).2"]


def optima_headline(plan: Plan) -> list[str]:
    """The headline of both models both ways (with the prefix cache when ``plan.prefix``), from
    ``optimum``, ``optimumA`` and ``prefixOpt``."""
    n, capacity, h, bound = plan.refs, plan.capacity, plan.witness_hits, plan.admission
    assert bound is not None
    ha = bound.witness_hits
    lines = [
        f"/-- **Headline.** The trace has {n} references. Caches of {capacity} blocks that store every missed block "
        f"and start empty hit at most {h} times ((C - 1) · {plan.cuts} cuts + {plan.free} free reuses = "
        f"{plan.max_hits} ≤ {h}), and one hits {h}; caches of {capacity} blocks with bypass hit at most "
        f"{ha} times (C · {bound.cuts} cuts + {bound.free} free reuses = {bound.max_hits} ≤ {ha}), and one hits {ha}"
        + (f"; a prefix cache over the trace's requests hits {ha}" if plan.prefix else "") + ". -/",
    ]
    if plan.prefix:
        return lines + [f"public theorem headline : Pycert.Admission.PrefixOptima trace firsts.testBit {n} {capacity} {h} "
                        f"{ha} {ha} :=", "  ⟨⟨optimum, optimumA⟩, prefixOpt⟩"]
    return lines + [f"public theorem headline : Pycert.Admission.Optima trace {n} {capacity} {h} {ha} :=",
                    "  ⟨optimum, optimumA⟩"]


def closing(ns: str) -> list[str]:
    """The end of an instance module, after its headline: the namespace closed and the headline checked."""
    return ["", f"end {ns}", "", f"#check @{ns}.headline", ""]
