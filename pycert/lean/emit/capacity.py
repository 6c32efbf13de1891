"""Emit the Lean instance that kernel-checks the capacity bound of a whole trace at one capacity.

One file per trace and capacity ``C`` (``lean/Pycert/SortedTrace.lean`` has the layout and the
theorems), importing only the library:

* the trace as the whole-trace ceiling instance packs it (:mod:`pycert.lean.emit.packed_trace`, with
  fields a power of two bits wide), checked by ``traceOK``: the theorems are about ``decode``, the
  trace's own ids;
* the references sorted by (block, time), by a Beneš network applied to whole bit planes: the kernel
  transposes the packed block numbers into bit planes, routes the block and time planes through the
  network, tests that the sorted keys strictly increase and that ``same`` marks exactly the sorted
  places whose predecessor is the same block (``sortOK``): each such pair is a reference and the
  previous one to its block (``adjacent_of_sortOK``);
* a cut list as a bit plane ``cut`` and its running count ``A`` (planes), tested to count
  (``cutsOK``), routed through the same network; ``flags`` marks the pairs with no cut strictly
  between, and the kernel counts them (``F``, a popcount).

The headline is ``Pycert.Capacity.Bounded trace N C H`` with ``H = (C - 1) · m + F``, ``m`` the number
of cuts: no policy of capacity ``C`` hits more than ``H`` times (``bounded_of_checks``).

Nothing here is trusted: any network is a bijection, any cut list gives a sound bound, a wrong plane
makes a check false. The Python side finds a network that sorts and a cut list that is tight
(:mod:`pycert.analysis.capacity`), and mirrors what the kernel computes, so that it writes the
literals the kernel will agree with.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from pycert.core.errors import InputError, PycertError
from pycert.core.limits import MAX_PIECE_REFS
from pycert.lean.emit import INSTANCE_NAMESPACE, benes, packed_trace

ENCODING = "packed-sorted-cuts/1"
"""Names this file layout in certificates; verify regenerates only the layout it knows."""
OPTIMUM_ENCODING = "packed-sorted-cuts-witness/1"
"""The same layout with Belady's hit pairs as a witness (``Pycert.SortedOptimum``): the headline is
``Pycert.Capacity.Optimum``, the bound and a policy that reaches it."""
PIECES_ENCODING = "packed-sorted-cuts-pieces/1"
"""A trace in pieces split at cuts, one module each, and their composition (:mod:`pycert.lean.emit.pieces`)."""
MAX_SORT_BITS = MAX_PIECE_REFS << 5
"""The largest vector the kernel transposes within the wasm heap: ``2 ** M`` places of ``2 ** f``-bit
fields. Measured: the conversation trace's 2^24 bits check at 3.6 GB of RSS; a million references'
2^25 run out of the 2 GiB heap (DEVELOPERS.md), so a longer trace is checked in pieces."""


def rotation_pairs(f: int, m: int) -> list[tuple[int, int]]:
    """Index-bit exchanges ``(u, v)``, ``u < v``, whose stages (``Pycert.SortedTrace.stages``, first to
    last) turn a vector of ``2 ** m`` fields of ``2 ** f`` bits into ``2 ** f`` planes of ``2 ** m``
    bits: bit ``b · 2^m + t`` of the result is bit ``t · 2^f + b`` of the vector.

    With ``τ_k`` exchanging positions ``u_k, v_k`` of an index, bit ``e`` of the source index is bit
    ``τ_k(… τ_1(e))`` of the result's, and that must be ``ρ(e)`` (``M + e`` for ``e < f``, else
    ``e - f``)."""
    size = f + m
    rho = [m + e if e < f else e - f for e in range(size)]
    pairs = []
    cur = rho[:]  # cur = ρ ∘ τ_1 ∘ … (what is left to do, applied after the chosen ones)
    for e in range(size):
        if cur[e] != e:
            src = cur.index(e)
            pairs.append((min(e, src), max(e, src)))
            cur[e], cur[src] = cur[src], cur[e]
    comp = list(range(size))
    for u, v in pairs:
        comp = [v if c == u else u if c == v else c for c in comp]
    assert comp == rho, "rotation_pairs: the exchanges do not compose to the rotation"
    return pairs


def sorted_order(blocks: Sequence[int], m: int) -> np.ndarray:
    """``σ[p]``: the time of the reference at sorted place ``p`` of ``2 ** m`` places, sorting by
    (block, time); places past the trace hold the padding, after every reference, in time order."""
    x = np.asarray(blocks, dtype=np.int64)
    n = len(x)
    order = np.lexsort((np.arange(n), x))
    return np.concatenate([order, np.arange(n, 1 << m, dtype=np.int64)])


def _position_masks(net: list[tuple[int, int]], m: int) -> list[int]:
    """Each pair-indexed control word as a mask on the places with bit ``k`` clear."""
    places = np.arange(1 << m, dtype=np.int64)
    out = []
    for k, c in net:
        pi = ((places >> (k + 1)) << k) | (places & ((1 << k) - 1))
        width = max(1 << max(m - 1, 0), c.bit_length())
        bits = np.unpackbits(np.frombuffer(c.to_bytes((width + 7) // 8, "little"), dtype=np.uint8),
                             bitorder="little")
        on = (bits[pi] == 1) & ((places >> k) & 1 == 0)
        out.append(int.from_bytes(np.packbits(on.astype(np.uint8), bitorder="little").tobytes(), "little"))
    return out


def network_words(sigma: np.ndarray, m: int) -> list[int]:
    """The words ``W_0 … W_{m-1}`` of ``Pycert.SortedTrace.net``: its ``perm`` sends sorted place ``p``
    to time ``σ[p]``. ``perm`` applies the last layer first, so the layers are Beneš's for ``σ`` in
    reverse; the first layer on bit ``k`` reads ``W_k`` where bit ``k`` is clear, the second where it
    is set."""
    if m < 1:
        raise ValueError("network_words: at least two places")
    layers = benes.controls(sigma.tolist())[::-1]
    masks = _position_masks(layers, m)
    words = [0] * m
    for i, ((k, _), mask) in enumerate(zip(layers, masks)):
        words[k] |= mask if i < m else mask << (1 << k)
    return words


def perm_all(words: Sequence[int], m: int) -> np.ndarray:
    """Python mirror of ``Pycert.Bits.perm (2 ^ m) (net m W)`` at every place."""
    layers = [(k, w) for k, w in zip(range(m - 1, -1, -1), (words[k] for k in range(m - 1, -1, -1)))]
    layers += [(k, words[k] >> (1 << k)) for k in range(1, m)]
    places = np.arange(1 << m, dtype=np.int64)
    width = (1 << m) + 64
    p = places.copy()
    for k, w in reversed(layers):  # perm applies the last layer first
        bits = np.unpackbits(np.frombuffer(w.to_bytes(width // 8 + 1, "little"), dtype=np.uint8),
                             bitorder="little")[:1 << m]
        low = p & ~np.int64(1 << k)
        move = (bits[low] == 1) & (((places >> k) & 1 == 0)[low])
        p = np.where(move, p ^ (1 << k), p)
    return p


def plane(bits: np.ndarray) -> int:
    """A bit plane: bit ``p`` is ``bits[p]``."""
    return int.from_bytes(np.packbits(np.asarray(bits, dtype=np.uint8), bitorder="little").tobytes(), "little")


def planes(values: np.ndarray, width: int) -> list[int]:
    """``width`` bit planes of the non-negative ``values``: plane ``b``, bit ``p``, is bit ``b`` of ``values[p]``."""
    return [plane((values >> b) & 1) for b in range(width)]


def same_plane(blocks: Sequence[int], sigma: np.ndarray) -> np.ndarray:
    """Sorted places ``p >= 1`` whose predecessor is a reference to the same block (padding never)."""
    x = np.asarray(blocks, dtype=np.int64)
    n = len(x)
    real = sigma < n
    xs = np.where(real, x[np.minimum(sigma, max(n - 1, 0))], -1)
    out = np.zeros(len(sigma), dtype=bool)
    out[1:] = real[1:] & real[:-1] & (xs[1:] == xs[:-1])
    return out


def cut_planes(n: int, cuts: Sequence[int], m: int) -> tuple[np.ndarray, np.ndarray]:
    """The cut indicator and its running count ``A(t)`` = cuts before ``t``, at every place below ``2 ** m``
    and at ``n`` (``cutsOK`` reads ``A(n)``, and a trace of exactly ``2 ** m`` references has no place ``n``)."""
    c = np.zeros(max(1 << m, n + 1), dtype=np.int64)
    c[np.asarray(cuts, dtype=np.int64)] = 1
    a = np.concatenate([[0], np.cumsum(c)[:-1]])
    return c, a


def flag_plane(same: np.ndarray, sigma: np.ndarray, c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Places where ``same`` holds and no cut lies strictly between the two references' times."""
    a_s, c_s = a[sigma], c[sigma]
    out = np.zeros(len(sigma), dtype=bool)
    out[1:] = same[1:] & (a_s[1:] == a_s[:-1] + c_s[:-1])
    return out


class Plan(BaseModel):
    """What a capacity instance states, and the figures Python expects the kernel to agree with."""

    refs: int
    distinct: int
    capacity: int
    cuts: int
    """``m``: the cut list's length"""
    free: int
    """``F``: reuse pairs with no cut strictly between"""
    witness_hits: int | None = None
    """The witness's pairs, when the instance carries one: the headline states this figure as ``H``."""

    @property
    def max_hits(self) -> int:
        """``H = (C - 1) · m + F``, the headline's bound."""
        return (self.capacity - 1) * self.cuts + self.free


def places_log2(n: int) -> int:
    """``M``: the sort runs on ``2 ** M >= n`` places, at least two."""
    return max(1, (n - 1).bit_length())


def fits_one(n: int, distinct: int) -> bool:
    """Whether a trace of ``n`` references over ``distinct`` blocks sorts within one instance's
    ``MAX_SORT_BITS`` (fields as :func:`pycert.lean.emit.packed_trace.plan` widens them)."""
    w = max(2, distinct.bit_length())
    return 1 << (places_log2(n) + ((1 << w.bit_length()) - 1).bit_length()) <= MAX_SORT_BITS


def sorted_lines(refs: Sequence[int], sha256: str, name: str, capacity: int, cuts: Sequence[int],
                  piece_bits: int) -> tuple[list[str], Plan, list[int]]:
    """The definitions and checks every capacity file holds, up to ``cuts_eq``, what they state, and the
    trace's ids. The packing is decoded back before anything is written, as for the whole-trace
    instance."""
    if capacity < 1:
        raise PycertError(f"{name}: capacity {capacity} (a capacity is at least one block)")
    inst = packed_trace.plan(refs, sha256, name, pow2_fields=True)
    ids = packed_trace.as_ids(refs)
    if packed_trace.decode(inst) != ids:
        raise PycertError(f"{name}: the packed instance does not decode to the trace (an emitter bug)")
    n, d, w = inst.refs, inst.distinct, inst.w
    y = np.asarray(cuts, dtype=np.int64)
    if len(y) and (y[0] < 0 or y[-1] >= n or np.any(np.diff(y) <= 0)):
        raise PycertError(f"{name}: the cut list is not strictly increasing below {n} (a bug in the recipe)")
    f = w.bit_length()  # fields of 2 ** f bits
    m_log = places_log2(n)
    if 1 << (m_log + f) > MAX_SORT_BITS:
        raise InputError(f"{n} references over {d} blocks need a sort of 2^{m_log + f} bits, and one capacity "
                         f"instance holds 2^{MAX_SORT_BITS.bit_length() - 1} (the wasm Lean's heap)", where=name)
    wx = max(1, d.bit_length())
    x = np.asarray(packed_trace.unpack(inst.x, w + 1, n), dtype=np.int64)
    sigma = sorted_order(x, m_log)
    words = network_words(sigma, m_log)
    same = same_plane(x, sigma)
    if not np.array_equal(perm_all(words, m_log), sigma):
        raise PycertError(f"{name}: the network does not sort the references (an emitter bug)")
    c, a = cut_planes(n, y, m_log)
    flags = flag_plane(same, sigma, c, a)
    plan = Plan(refs=n, distinct=d, capacity=capacity, cuts=len(y), free=int(flags.sum()))
    aw = max(1, len(y).bit_length())
    lines = [
        *packed_trace.ASYNC_OFF,
        f"namespace {INSTANCE_NAMESPACE}.{name}",
        "open Pycert.Packed Pycert.PackedTrace",
        "",
        "/-- sha256 of the trace file these references were read from. -/",
        f'def sha256 : String := "{inst.sha256}"',
        "",
        *packed_trace.data_defs(inst, piece_bits),
    ]
    for k, word in enumerate(words):
        lines += packed_trace.nat_defs(f"W{k}", f"Sort network word {k}: the layers on index bit {k}.", word, piece_bits)
    lines += [f"/-- The network sorting the {2 ** m_log} places by (block, time) (`SortedTrace.net`). -/",
              f"noncomputable def W : List Nat := [{', '.join(f'W{k}' for k in range(m_log))}]", ""]
    lines += packed_trace.nat_defs("same", "Sorted places whose predecessor is a reference to the same block.",
                                   plane(same), piece_bits)
    lines += ["/-- Index-bit exchanges transposing the packed block numbers into bit planes. -/",
              f"noncomputable def rot : List (Nat × Nat) := {rotation_pairs(f, m_log)!r}", ""]
    lines += packed_trace.nat_defs("cut", f"The {len(y)} cuts: bit `t` is set when time `t` is a cut.", plane(c),
                                   piece_bits)
    for b, pb in enumerate(planes(a, aw)):
        lines += packed_trace.nat_defs(f"A{b}", f"Plane {b} of `A`, the cuts before each time.", pb, piece_bits)
    lines += [
        "/-- The running count of cuts, as bit planes. -/",
        f"noncomputable def A : List Nat := [{', '.join(f'A{b}' for b in range(aw))}]",
        "",
        "/-- The trace: its references' block ids, in order. -/",
        f"public noncomputable def trace : List Nat := decode {w} {n} X {inst.wt} {d} S net",
        "",
        f"theorem checked : traceOK {w} {n} X K {inst.wt} {d} S = true := by decide +kernel",
        "",
        f"theorem refs_eq : trace.length = {n} := (traceOK_sound net checked).1",
        "",
        f"theorem sort_ok : SortedTrace.sortOK {f} {m_log} {n} {wx} X rot W same = true := by decide +kernel",
        "",
        f"theorem adjacent : SortedTrace.Adjacent trace (2 ^ {m_log}) (SortedTrace.net {m_log} W) same :=",
        "  SortedTrace.adjacent_of_sortOK checked (by decide) (by decide) (by decide) (by decide) (by decide +kernel)",
        "    (by decide +kernel) sort_ok",
        "",
        f"theorem cuts_ok : SortedTrace.cutsOK {n} A cut = true := by decide +kernel",
        "",
        f"theorem flags_ok : Planes.popcount {m_log} (SortedTrace.flags {m_log} W same cut A) = {plan.free} := "
        "by decide +kernel",
        "",
        f"theorem cuts_eq : Planes.val A {n} = {len(y)} := by decide +kernel",
        "",
    ]
    return lines, plan, ids


def witness_lines(n: int, m_log: int, capacity: int, starts: np.ndarray, ends: np.ndarray,
                  piece_bits: int = packed_trace.PIECE_BITS) -> tuple[list[str], int]:
    """The witness's literals and checks (``Pycert.SortedOptimum``): the starts and ends of the hit pairs
    as planes in time order, their running counts, and the theorems the headline ``Optimum`` rests on;
    and the number of starts, which the headline states. Whatever the arrays hold is written: the
    kernel decides whether they are a witness."""
    s_bits, e_bits = np.asarray(starts, dtype=bool)[:n], np.asarray(ends, dtype=bool)[:n]
    a_s = np.concatenate([[0], np.cumsum(s_bits, dtype=np.int64)])
    a_e = np.concatenate([[0], np.cumsum(e_bits, dtype=np.int64)])
    h = int(a_s[-1])
    # wide enough that AE(t + 1) + (C - 1) does not wrap (a wrapped sum would only make coverOK fail)
    aw = max(1, (max(h, int(a_e[-1])) + capacity - 1).bit_length())
    lines = packed_trace.nat_defs("s", f"The {h} starts: bit `i` is set when reference `i`'s next reference to its block "
                                  "is to hit (Belady's hit pairs).", plane(s_bits), piece_bits)
    lines += packed_trace.nat_defs("e", "The ends: bit `j` is set when reference `j` is to hit.", plane(e_bits), piece_bits)
    for label, counts in (("AS", a_s), ("AE", a_e)):
        for b, pb in enumerate(planes(counts, aw)):
            lines += packed_trace.nat_defs(f"{label}{b}", f"Plane {b} of `{label}`, a running count.", pb, piece_bits)
        lines += [f"/-- The running count of {'starts' if label == 'AS' else 'ends'}, as bit planes. -/",
                  f"noncomputable def {label} : List Nat := [{', '.join(f'{label}{b}' for b in range(aw))}]", ""]
    lines += [
        f"theorem witness_ok : SortedOptimum.witnessOK {m_log} W same s e = true := by decide +kernel",
        "",
        f"theorem starts_ok : SortedTrace.cutsOK {n} AS s = true := by decide +kernel",
        "",
        f"theorem ends_ok : SortedTrace.cutsOK {n} AE e = true := by decide +kernel",
        "",
        f"theorem cover_ok : SortedOptimum.coverOK {n} ({capacity} - 1) AS AE = true := by decide +kernel",
        "",
        f"theorem starts_eq : Planes.val AS {n} = {h} := by decide +kernel",
        "",
    ]
    return lines, h


def emit_instance(refs: Sequence[int], sha256: str, name: str, capacity: int, cuts: Sequence[int],
                  piece_bits: int = packed_trace.PIECE_BITS,
                  witness: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[str, Plan]:
    """Lean source proving ``Bounded trace N C H`` for exactly these references, with the cut list
    ``cuts`` (strictly increasing times below N), and what it states. With ``witness`` (the starts and
    ends of hit pairs, :func:`pycert.analysis.capacity.belady_pairs`) it proves ``Optimum trace N C H``
    instead, ``H`` the number of starts: the bound, checked to be at most ``H``, and the pairs, checked
    to be kept by some policy of capacity ``C``."""
    body, plan, _ = sorted_lines(refs, sha256, name, capacity, cuts, piece_bits)
    ns = f"{INSTANCE_NAMESPACE}.{name}"
    lines = [
        f"-- Generated by pycert.lean.emit.capacity: {plan.refs} references, {plan.distinct} distinct blocks, capacity "
        f"{capacity}, {plan.cuts} cuts, every reference.",
        "-- Checked by the kernel from the encoded references and cuts; nothing here is an assumption.",
        f"import Pycert.{'SortedTrace' if witness is None else 'SortedOptimum'}",
        "",
        *body,
    ]
    if witness is not None:
        n, m_log = plan.refs, places_log2(plan.refs)
        more, h = witness_lines(n, m_log, capacity, *witness, piece_bits=piece_bits)
        plan = plan.model_copy(update={"witness_hits": h})
        lines += [
            *more,
            f"/-- **Headline.** The trace has {n} references, no demand-fetch policy of capacity {capacity} blocks hits "
            f"more than {h} times on it ((C - 1) · {plan.cuts} cuts + {plan.free} free reuses = {plan.max_hits} ≤ {h}), "
            f"and some policy of capacity {capacity} hits exactly {h} times (the {h} pairs of `s`): "
            "`Pycert.Capacity.Optimum`. -/",
            f"public theorem headline : Pycert.Capacity.Optimum trace {n} {capacity} {h} :=",
            "  SortedOptimum.optimum_of_checks checked (by decide) (by decide) (by decide) (by decide) (by decide +kernel)",
            "    (by decide +kernel) sort_ok cuts_ok flags_ok cuts_eq (by decide) (by decide) witness_ok starts_ok ends_ok",
            "    cover_ok starts_eq",
        ]
    else:
        lines += [
            f"/-- **Headline.** The trace has {plan.refs} references, and no demand-fetch policy of capacity {capacity} "
            "blocks hits",
            f"more than (C - 1) · {plan.cuts} cuts + {plan.free} free reuses = {plan.max_hits} times on it "
            "(`Pycert.Capacity.Bounded`). -/",
            f"public theorem headline : Pycert.Capacity.Bounded trace {plan.refs} {capacity} {plan.max_hits} :=",
            "  SortedTrace.bounded_of_checks refs_eq adjacent cuts_ok flags_ok cuts_eq (by decide)",
        ]
    return "\n".join([*lines, *closing(ns)]), plan


def closing(ns: str) -> list[str]:
    """The end of an instance module, after its headline: the namespace closed and the headline checked."""
    return ["", f"end {ns}", "", f"#check @{ns}.headline", ""]
