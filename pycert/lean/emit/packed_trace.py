"""Emit a Lean file that kernel-checks a whole trace's reference and distinct counts.

The file holds the trace itself, not its counts (``lean/Pycert/PackedTrace.lean`` has the layout
and the soundness theorem): each reference's block number in first-occurrence order, the running
count of distinct blocks, and the distinct ids sorted, as three packed vectors; and a Beneš network
(``pycert.lean.emit.benes``) that sends each block number to its id's place in the sorted table. One
``decide +kernel`` proves ``traceOK … = true``, a handful of GMP operations on the whole vectors,
and ``traceOK_sound`` turns it into ``trace.length = N`` and ``distinct trace = D``. The theorems
are about ``decode``, the references looked up through the network in the table: the trace's own
ids, not a renumbering of them.

Ids are any integers in [0, 2^64), repeated or not, in any order. The kernel tests the sorted table
to strictly increase (hence no id twice), on the whole vector. The network needs no test: its
layers swap pairs of places, so it is a bijection whatever its control words, and
``traceOK_sound`` holds for any network. It is empty when first occurrences already come in
increasing id order (Mooncake's dense numbering). A wrong network would make the file stand for
another trace, so ``emit_instance`` decodes what it packed and refuses any difference.

Big literals are raw hex pieces of ``PIECE_BITS`` (``nat_lit``: no ``OfNat`` instance to elaborate),
joined in the kernel with ``Nat.lor``/``Nat.shiftLeft`` in balanced trees, one piece a line and at
most ``GROUP_PIECES`` to a definition: Lean's cost for one command grows faster than its length,
while many short commands cost next to nothing (docs/trace-encodings.md has the figures).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence

from pydantic import BaseModel

from pycert.core.errors import InputError, PycertError
from pycert.core.limits import MAX_ID, MAX_NAME_BYTES
from pycert.lean.emit import INSTANCE_NAMESPACE, PRELUDE, benes

ENCODING = "packed-whole/3"
"""Names this file layout in certificates; verify regenerates only the layout it knows."""
PIECE_BITS = 4096
"""Bits per literal piece (a multiple of 4); docs/trace-encodings.md has the measured choice."""
GROUP_PIECES = 64
"""Pieces per definition: the cost of one command grows faster than its length (docs/trace-encodings.md)."""

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
    """field ``j`` is reference ``j``'s block number (first-occurrence order)"""
    k: int
    """field ``j`` is the number of distinct blocks among the first ``j`` references, ``j = 0..N``"""
    t: int
    """the distinct ids in increasing order"""
    net: list[tuple[int, int]] = []
    """Beneš layers ``(bit, control word)``: block number ``j`` is sorted id number ``route(net, j)``"""


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
    """Python mirror of ``Pycert.PackedTrace.decode``: the trace the theorems are about."""
    d = inst.distinct
    table = unpack(inst.t, inst.wt + 1, d)
    place = benes.route_all(inst.net, d).tolist()
    past = 1 << (inst.wt + 1)  # ``look`` past the table; never reached by a network from ``network``
    look = [table[i] if i < d else past + i for i in place]
    return [look[x] for x in unpack(inst.x, inst.w + 1, inst.refs)]


def network(table: Sequence[int], ordered: Sequence[int]) -> list[tuple[int, int]]:
    """The Beneš layers sending each block number (an index into ``table``) to its id's index in
    ``ordered``; none when the two orders agree. Padded to a power of two with fixed points."""
    if list(table) == list(ordered):
        return []
    rank = {v: i for i, v in enumerate(ordered)}
    m = max(1, (len(table) - 1).bit_length())
    return benes.controls([rank[v] for v in table] + list(range(len(table), 1 << m)))


def check_module(name: str) -> None:
    """Refuse an instance's module name that is no Lean identifier, or whose file would have a name longer than a
    file system holds (a piece's or a shard's name is its trace's, longer)."""
    if not _NAME_RE.fullmatch(name):
        raise InputError(f"instance name {name!r} is not a Lean identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if len(name) + len(".lean") > MAX_NAME_BYTES:
        raise InputError(f"instance name {name[:40]}...{name[-20:]} makes a Lean file name of {len(name) + 5} bytes, "
                         f"longer than {MAX_NAME_BYTES}: give the trace a shorter file name")


def plan(refs: Sequence[int], sha256: str, name: str, pow2_fields: bool = False) -> Packed:
    """Validate the inputs and pack the trace. ``pow2_fields``: index and counter fields a power of two
    bits wide, so that the vector can be transposed into bit planes by exchanging index bits
    (:mod:`pycert.lean.emit.capacity`)."""
    check_module(name)
    if not _SHA_RE.fullmatch(sha256):
        raise InputError(f"sha256 {sha256!r} is not 64 lowercase hex digits")
    ids = as_ids(refs)
    table, index, counter = renumber(ids)
    ordered = sorted(table)
    d = len(table)
    w = max(2, d.bit_length())
    if pow2_fields:
        w = (1 << w.bit_length()) - 1  # fields of w + 1 bits: the least power of two above w
    wt = max(1, (ordered[-1] + 1 if ordered else 1).bit_length())
    return Packed(name=name, sha256=sha256, refs=len(ids), distinct=d, w=w, wt=wt,
                  x=pack(index, w + 1), k=pack(counter, w + 1), t=pack(ordered, wt + 1),
                  net=network(table, ordered))


def _pieces(value: int, piece_bits: int) -> list[str]:
    """``value`` as raw hex literals of ``piece_bits`` bits, the lowest first (``nat_lit``: a plain
    number, with no ``OfNat`` instance to elaborate)."""
    digits = piece_bits // 4
    text = format(value, "x")
    return [f"(nat_lit 0x{text[max(0, end - digits):end]})" for end in range(len(text), 0, -digits)]


def _join(terms: Sequence[str], bits: int) -> str:
    """``terms[0] ||| terms[1] <<< bits ||| …`` as a balanced tree of ``Nat.lor``/``Nat.shiftLeft``,
    one leaf a line (Lean works out positions within a line)."""
    if len(terms) == 1:
        return terms[0]

    def go(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return f"\n    {terms[lo]}"
        mid = (lo + hi) // 2
        return f"(Nat.lor {go(lo, mid)} (Nat.shiftLeft {go(mid, hi)} {bits * (mid - lo)}))"
    return go(0, len(terms))


def nat_defs(name: str, doc: str, value: int, piece_bits: int = PIECE_BITS,
             group_pieces: int = GROUP_PIECES, exposed: bool = False) -> list[str]:
    """Lean definitions of ``name := value``: pieces joined in the kernel, at most ``group_pieces``
    of them to a helper definition ``name_i``, and ``name`` the join of the helpers. One command
    holding thousands of pieces costs time superlinear in its length (docs/trace-encodings.md). ``exposed``: every
    definition ``@[expose] public``, so that a module importing this one can compute with the value."""
    pieces = _pieces(value, piece_bits)
    groups = [pieces[i:i + group_pieces] for i in range(0, len(pieces), group_pieces)]
    kind = "@[expose] public noncomputable def" if exposed else "noncomputable def"
    if len(groups) == 1:
        return [f"/-- {doc} -/", f"{kind} {name} : Nat := {_join(groups[0], piece_bits)}", ""]
    out = []
    for i, g in enumerate(groups):
        out += [f"{kind} {name}_{i} : Nat := {_join(g, piece_bits)}", ""]
    helpers = [f"{name}_{i}" for i in range(len(groups))]
    return out + [f"/-- {doc} -/", f"{kind} {name} : Nat := {_join(helpers, piece_bits * group_pieces)}", ""]


def data_defs(inst: Packed, piece_bits: int = PIECE_BITS, exposed: bool = False) -> list[str]:
    """The definitions of a packed instance's vectors ``X``, ``K``, ``S`` and its network ``net``
    (what a whole-trace file, a shard's file and a capacity file hold); ``exposed``: ``X`` public, with its
    value (:func:`nat_defs`), for a module that states something of the same block numbers."""
    n, d = inst.refs, inst.distinct
    layers = []
    for i, (k, c) in enumerate(inst.net):
        layers += nat_defs(f"C{i}", f"Control word of layer {i} (on bit {k}): bit `p` swaps pair `p`.", c, piece_bits)
    if inst.net:
        places = 1 << (len(inst.net) + 1) // 2
        net_doc = (f"Block number `j` is sorted id number `Pycert.Route.route net j`: a Beneš network of "
                   f"{len(inst.net)} layers on {places} places, `(bit, control word)`.")
        net_val = "[" + ", ".join(f"({k}, C{i})" for i, (k, _) in enumerate(inst.net)) + "]"
    else:
        net_doc = "No layers: first occurrences come in increasing id order, block number `j` is sorted id `j`."
        net_val = "[]"
    return [
        *nat_defs("X", f"Reference `j` is block number `fld (2 ^ {inst.w + 1}) X j`, numbered in order of first "
                  "occurrence.", inst.x, piece_bits, exposed=exposed),
        *nat_defs("K", f"Distinct blocks among the first `j` references, for `j = 0 … {n}`.", inst.k, piece_bits),
        *nat_defs("S", f"The {d} distinct block ids in increasing order, {inst.wt + 1}-bit fields.", inst.t,
                  piece_bits),
        *layers,
        f"/-- {net_doc} -/",
        f"noncomputable def net : List (Nat × Nat) := {net_val}",
        "",
    ]


ASYNC_OFF = [
    "-- One declaration at a time: elaborated in parallel on wasm, each declaration in flight holds",
    "-- its own memory (DEVELOPERS.md: 19.4 GB against 3.6 GB for one file).",
    "set_option Elab.async false",
    "",
]


def render(inst: Packed, piece_bits: int = PIECE_BITS) -> str:
    """The Lean source of a packed instance."""
    n, d = inst.refs, inst.distinct
    return "\n".join([
        f"-- Generated by pycert.lean.emit.packed_trace: {n} references, {d} distinct blocks, every reference.",
        "-- Checked by the kernel from the encoded references; nothing here is an assumption.",
        PRELUDE,
        "import Pycert.PackedTrace",
        "import Pycert.Ceiling",
        "",
        *ASYNC_OFF,
        f"namespace {INSTANCE_NAMESPACE}.{inst.name}",
        "open Pycert.Packed Pycert.PackedTrace",
        "",
        "/-- sha256 of the trace file these references were read from. -/",
        f'def sha256 : String := "{inst.sha256}"',
        "",
        *data_defs(inst, piece_bits),
        "/-- The trace: its references' block ids, in order. -/",
        f"public noncomputable def trace : List Nat := decode {inst.w} {n} X {inst.wt} {d} S net",
        "",
        f"theorem checked : traceOK {inst.w} {n} X K {inst.wt} {d} S = true := by decide +kernel",
        "",
        f"theorem refs_eq : trace.length = {n} := (traceOK_sound net checked).1",
        "",
        f"theorem distinct_eq : Pycert.distinct trace = {d} := (traceOK_sound net checked).2",
        "",
        *headline_lines(inst.name, n, d),
    ])


def headline_lines(name: str, n: int, d: int) -> list[str]:
    """The end of a trace's instance module (one file or the composition of shards), once ``refs_eq`` and
    ``distinct_eq`` are proved: the headline carrying both counts and the hit bound, and its ``#check``."""
    return [
        f"/-- **Headline.** The trace has {n} references over {d} distinct blocks, and no demand-fetch policy,",
        f"of any capacity or eviction rule, hits more than {n - d} times on it (`Pycert.Ceiling.Bounded`). -/",
        f"public theorem headline : Pycert.Ceiling.Bounded trace {n} {d} {n - d} :=",
        "  Pycert.Ceiling.bounded_of_counts refs_eq distinct_eq",
        "",
        f"end {INSTANCE_NAMESPACE}.{name}",
        "",
        f"#check @{INSTANCE_NAMESPACE}.{name}.headline",
        "",
    ]


def emit_instance(refs: Sequence[int], sha256: str, name: str, piece_bits: int = PIECE_BITS) -> str:
    """Lean source proving, for exactly these references, their length and distinct count. The
    packing is decoded back before anything is written: the kernel proves its figures for the
    decoded list, so that list must be the references, not merely have their counts."""
    inst = plan(refs, sha256, name)
    if decode(inst) != as_ids(refs):
        raise PycertError(f"{name}: the packed instance does not decode to the trace (an emitter bug)")
    return render(inst, piece_bits)
