"""Emit a Lean file that kernel-checks a whole trace's reference and distinct counts.

The file holds the trace itself, not its counts, as three packed vectors (``lean/Pycert/
PackedTrace.lean`` has the layout and the soundness theorem): the table of distinct ids in
first-occurrence order, each reference as its table index, and the running count of distinct
blocks. One ``decide +kernel`` proves ``traceOK … = true``, a handful of GMP operations on the whole
vectors, and ``traceOK_sound`` turns it into ``trace.length = N`` and ``distinct trace = D``. The
theorems are about ``decode``, the references looked up in the table: the trace's own ids, not a
renumbering of them.

Ids are any integers in [0, 2^64), repeated or not, in any order; the kernel also checks that the
table never repeats an id. When first occurrences come in increasing id order (Mooncake's dense
numbering, or any monotone ids) the table itself is tested to strictly increase, on the whole vector.
Otherwise the table is the sorted ids plus a permutation, and the permutation is walked entry by
entry (``permGo``) in chunks of ``PERM_CHUNK`` entries: that walk costs kernel time per distinct
block, where everything else costs a few GMP calls per trace.

Big literals are split into pieces of ``PIECE_BITS`` and joined in the kernel with ``Nat.lor`` and
``Nat.shiftLeft`` in a balanced tree, one piece a line: Lean parses a literal in time superlinear in
its length, while many short ones cost next to nothing (DEVELOPERS.md has the figures).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence

from pydantic import BaseModel

from pycert.core.errors import InputError
from pycert.core.limits import MAX_ID

ENCODING = "packed-whole/1"
"""Names this file layout in certificates; verify regenerates only the layout it knows."""
PERM_CHUNK = 256
"""Table entries per ``permGo`` chunk lemma (each chunk is its own declaration: its kernel cache dies
with it, and the bitmask between chunks is a literal)."""
PIECE_BITS = 4096
"""Bits per literal piece (a multiple of 4); see benchmarks/bench_lean_trace.py for the measured choice."""

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHA_RE = re.compile(r"[0-9a-f]{64}")


class Packed(BaseModel):
    """What a per-trace file states, and the vectors it states it with."""

    name: str
    sha256: str
    refs: int
    distinct: int
    w: int
    """payload bits of an index or counter field (fields are ``w + 1`` bits wide)"""
    wt: int
    """payload bits of a table field"""
    x: int
    """reference ``j`` is table entry ``x``'s field ``j``"""
    k: int
    """field ``j`` is the number of distinct blocks among the first ``j`` references, ``j = 0..N``"""
    t: int
    """the distinct ids in first-occurrence order, or sorted when ``perm`` is set"""
    wp: int = 0
    """payload bits of a permutation field"""
    perm: list[int] = []
    """table entry ``i`` is sorted id number ``perm[i]`` (empty: the table is ``t`` itself)"""


def as_ids(refs: Sequence[int]) -> list[int]:
    """Plain ints (a numpy array from ``pycert.traces`` included), each checked to be an id."""
    out = []
    for i, x in enumerate(refs):
        if isinstance(x, bool):
            raise InputError(f"reference {i} is {x!r}, not a block id")
        try:
            v = operator.index(x)
        except TypeError:
            raise InputError(f"reference {i} is {x!r}, not an integer") from None
        if not 0 <= v <= MAX_ID:
            raise InputError(f"reference {i} is {v}, outside the block-id range [0, 2^64)")
        out.append(v)
    return out


def renumber(ids: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """``(table, index, counter)``: the distinct ids in first-occurrence order, each reference's
    table index, and the distinct count before each reference and after the last."""
    slot: dict[int, int] = {}
    index, counter = [], [0]
    for v in ids:
        i = slot.setdefault(v, len(slot))
        index.append(i)
        counter.append(len(slot))
    return list(slot), index, counter


def pack(values: Sequence[int], width: int) -> int:
    """``values`` in fields of ``width`` bits, the first lowest. Through a binary string: CPython
    converts power-of-two bases in linear time, where shifting a growing int is quadratic."""
    if not values:
        return 0
    return int("".join(format(v, f"0{width}b") for v in reversed(values)), 2)


def unpack(packed: int, width: int, n: int) -> list[int]:
    """Python mirror of ``Pycert.Packed.fields`` (tests round-trip the encoder through it)."""
    bits = format(packed, "b").zfill(width * n)
    end = len(bits)
    return [int(bits[end - width * (j + 1): end - width * j], 2) for j in range(n)]


def set_field(packed: int, width: int, j: int, value: int) -> int:
    """``packed`` with field ``j`` (``width`` bits) replaced by ``value`` (mutants and tests plant defects with it)."""
    mask = ((1 << width) - 1) << (width * j)
    return (packed & ~mask) | (value << (width * j))


def decode(inst: Packed) -> list[int]:
    """Python mirror of ``decode``/``decodePerm``: the trace the theorems are about."""
    table = unpack(inst.t, inst.wt + 1, inst.distinct)
    if inst.perm:
        table = [table[p] for p in inst.perm]
    return [table[i] for i in unpack(inst.x, inst.w + 1, inst.refs)]


def plan(refs: Sequence[int], sha256: str, name: str) -> Packed:
    """Validate the inputs and pack the trace."""
    if not _NAME_RE.fullmatch(name):
        raise InputError(f"instance name {name!r} is not a Lean identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if not _SHA_RE.fullmatch(sha256):
        raise InputError(f"sha256 {sha256!r} is not 64 lowercase hex digits")
    ids = as_ids(refs)
    table, index, counter = renumber(ids)
    d = len(table)
    w = max(2, d.bit_length())
    wt = max(1, (max(table, default=0) + 1).bit_length())
    common = dict(name=name, sha256=sha256, refs=len(ids), distinct=d, w=w, wt=wt,
                  x=pack(index, w + 1), k=pack(counter, w + 1))
    if all(a < b for a, b in zip(table, table[1:])):
        return Packed(**common, t=pack(table, wt + 1))
    ordered = sorted(table)
    rank = {v: i for i, v in enumerate(ordered)}
    return Packed(**common, t=pack(ordered, wt + 1), wp=max(1, d.bit_length()), perm=[rank[v] for v in table])


def nat_literal(value: int, piece_bits: int = PIECE_BITS) -> str:
    """A Lean term for ``value``: hex pieces of ``piece_bits`` joined by ``Nat.lor``/``Nat.shiftLeft``."""
    digits = piece_bits // 4
    text = format(value, "x")
    pieces = [text[max(0, end - digits):end] for end in range(len(text), 0, -digits)]

    def join(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return f"\n    0x{pieces[lo]}"
        mid = (lo + hi) // 2
        return f"(Nat.lor {join(lo, mid)} (Nat.shiftLeft {join(mid, hi)} {piece_bits * (mid - lo)}))"

    return join(0, len(pieces))


def render(inst: Packed, piece_bits: int = PIECE_BITS) -> str:
    """The Lean source of a packed instance."""
    n, d = inst.refs, inst.distinct
    lit = lambda v: nat_literal(v, piece_bits)  # noqa: E731
    if inst.perm:
        table_doc = f"The {d} distinct block ids, sorted, {inst.wt + 1}-bit fields."
        trace_def = f"decodePerm {inst.w} {n} X {inst.wp} P0 {inst.wt} S"
        check = f"traceOK {inst.w} {n} X K {inst.wt} {d} S"
        sound = "tracePermOK_sound checked perm"
        table_name = "S"
    else:
        table_doc = f"The {d} distinct block ids in order of first occurrence, {inst.wt + 1}-bit fields."
        trace_def = f"decode {inst.w} {n} X {inst.wt} T"
        check = f"traceOK {inst.w} {n} X K {inst.wt} {d} T"
        sound = "traceOK_sound checked"
        table_name = "T"
    out = [
        f"-- Generated by pycert.lean_trace: {n} references, {d} distinct blocks, every reference.",
        "-- Checked by the kernel from the encoded references; nothing here is an assumption.",
        "import Pycert.PackedTrace",
        "import Pycert.Ceiling",
        "",
        "-- One declaration at a time: elaborated in parallel, each chunk lemma held its own memory",
        "-- (a 3,911-entry permutation peaked at 19.4 GB; in sequence, 3.6 GB and a quarter of the time).",
        "set_option Elab.async false",
        "",
        f"namespace Pycert.Trace.{inst.name}",
        "open Pycert.Packed Pycert.PackedTrace",
        "",
        "/-- sha256 of the trace file these references were read from. -/",
        f'def sha256 : String := "{inst.sha256}"',
        "",
        f"/-- Reference `j` is table entry `fld (2 ^ {inst.w + 1}) X j`. -/",
        f"noncomputable def X : Nat := {lit(inst.x)}",
        "",
        f"/-- Distinct blocks among the first `j` references, for `j = 0 … {n}`. -/",
        f"noncomputable def K : Nat := {lit(inst.k)}",
        "",
        f"/-- {table_doc} -/",
        f"noncomputable def {table_name} : Nat := {lit(inst.t)}",
        "",
    ]
    proofs = []
    if inst.perm:
        out += _render_perm(inst, lit, proofs)
    out += [
        "/-- The trace: its references' block ids, in order. -/",
        f"noncomputable def trace : List Nat := {trace_def}",
        "",
        f"theorem checked : {check} = true := by decide +kernel",
        "",
        *proofs,
        f"theorem refs_eq : trace.length = {n} := ({sound}).1",
        "",
        f"theorem distinct_eq : Pycert.distinct trace = {d} := ({sound}).2",
        "",
        "/-- On this trace every demand-fetch policy, of any capacity and eviction rule, hits at most",
        f"refs - distinct = {n - d} times (the general ceiling, instantiated). -/",
        f"theorem hits_le (P : Pycert.Ceiling.Policy) : Pycert.Ceiling.hits P trace ≤ {n - d} := by",
        "  have h := Pycert.Ceiling.hits_add_distinct_le P trace",
        "  rw [refs_eq, distinct_eq] at h",
        "  exact Nat.le_sub_of_add_le h",
        "",
        f"end Pycert.Trace.{inst.name}",
        "",
    ]
    return "\n".join(out)


def _render_perm(inst: Packed, lit, proofs: list[str]) -> list[str]:
    """The permutation as a chain of chunks ``P_i = c_i + B ^ L_i * P_(i+1)``, each walked by its own
    ``decide +kernel`` from the literal mask the previous chunk left; ``perm`` chains the walks."""
    d, width = inst.distinct, inst.wp + 1
    base = f"(2 ^ {width})"
    parts = [inst.perm[i:i + PERM_CHUNK] for i in range(0, d, PERM_CHUNK)]
    masks, m = [0], 0
    for part in parts:
        for p in part:
            m |= 1 << p
        masks.append(m)
    chunks = [lit(pack(part, width)) for part in parts]
    ms = [lit(m) for m in masks]
    out = [f"/-- Table entry `i` is sorted id number `fld {base} P0 i`, in chunks of {PERM_CHUNK}. -/"]
    last = len(parts) - 1
    for i in reversed(range(len(chunks))):
        out.append(f"noncomputable def P{i} : Nat := {chunks[i]}" if i == last
                   else f"noncomputable def P{i} : Nat := {chunks[i]} + {base} ^ {len(parts[i])} * P{i + 1}")
    out.append("")
    for i, part in enumerate(parts):
        proofs.append(f"theorem walk{i} : permGo {base} {d} {len(part)} {chunks[i]} {ms[i]} = some {ms[i + 1]} := "
                      "by decide +kernel")
    rest = d
    chain = []
    for i, part in enumerate(parts):
        rest -= len(part)
        if i == last:
            chain.append(f"theorem perm{i} : permGo {base} {d} {len(part)} P{i} {ms[i]} = some {ms[-1]} := walk{i}")
        else:
            # `unfold` first: the goal then matches the lemma syntactically, and the elaborator never
            # has to see through the chain of definitions (which it would evaluate, chunk after chunk).
            chain.append(
                f"theorem perm{i} : permGo {base} {d} ({len(part)} + {rest}) P{i} {ms[i]} = some {ms[-1]} := by\n"
                f"  unfold P{i}\n"
                f"  exact permGo_chain (Nat.two_pow_pos _) {rest} {len(part)} {chunks[i]} P{i + 1} {ms[i]} {ms[i + 1]}"
                f" {ms[-1]} (by decide +kernel) walk{i} perm{i + 1}")
    proofs += ["", *reversed(chain), "",
               f"theorem perm : permGo {base} {d} {d} P0 0 = some {ms[-1]} := perm0", ""]
    return out


def emit_instance(refs: Sequence[int], sha256: str, name: str, piece_bits: int = PIECE_BITS) -> str:
    """Lean source proving, for exactly these references, their length and distinct count."""
    return render(plan(refs, sha256, name), piece_bits)
