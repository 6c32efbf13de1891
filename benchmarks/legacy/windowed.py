"""The previous per-reference encoding (pycert 0.1, stop 10), kept only so that
``benchmarks/bench_lean_trace.py`` can measure it beside the whole-trace encoding. Not used by pycert.

Emit a Lean file that kernel-checks one trace's reference and distinct counts.

The file encodes the trace itself (not its counts) as ``Pycert.TraceCheck.Chunk`` literals, proves
chunk by chunk with ``decide +kernel`` what the dense counter ``denseGo`` returns, chains those facts
into ``distinct trace = D`` and ``trace.length = N``, and instantiates the ceiling theorem. Every
number in a theorem statement is one the kernel recomputes from the encoded references.

Encoding (mirrors ``decodeFrom`` in ``lean/Pycert/TraceCheck.lean``): bits are read from the low end;
a ``0`` bit is the next fresh id ``m`` (then ``m + 1``), a ``1`` bit is followed by ``w`` bits holding
an id given explicitly. Mooncake traces number blocks densely in first-occurrence order, so each first
touch costs one bit. Each chunk is its own theorem because the kernel keeps every intermediate term of
a declaration alive (the wasm heap is 2 GiB); the state between chunks is a literal.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence

from pydantic import BaseModel

from pycert.core.errors import InputError

DEFAULT_CHUNK_REFS = 2048
"""References per chunk lemma; see benchmarks/bench_lean_trace.py for the measured curve."""

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHA_RE = re.compile(r"[0-9a-f]{64}")


class Chunk(BaseModel):
    """One ``Pycert.TraceCheck.Chunk`` literal plus the counter state around it."""

    n: int
    """references in the chunk"""
    w: int
    """bit width of explicitly coded ids"""
    m: int
    """the decoder's next fresh id when the chunk starts"""
    d: int
    """the packed references"""
    k_in: int
    """``denseGo`` state before the chunk (distinct ids so far)"""
    k_out: int
    """``denseGo`` state after the chunk"""


class Instance(BaseModel):
    """What a per-trace file states, and how it is laid out."""

    name: str
    sha256: str
    refs: int
    distinct: int
    chunks: list[Chunk]


def encode_chunk(refs: Sequence[int], m: int) -> tuple[int, int, int]:
    """Pack ``refs`` with the decoder starting at fresh id ``m``: returns ``(w, d, m_after)``."""
    codes = _codes(refs, m)
    w = max((c for c in codes if c is not None), default=0).bit_length()
    d, pos = 0, 0
    for code in codes:
        if code is None:
            pos += 1
        else:
            d |= (1 | code << 1) << pos
            pos += w + 1
    return w, d, m + codes.count(None)


def _codes(refs: Sequence[int], m: int) -> list[int | None]:
    """``None`` for a reference the decoder produces as its fresh id, else the id to write out."""
    out: list[int | None] = []
    for x in refs:
        if x == m:
            m += 1
            out.append(None)
        else:
            out.append(x)
    return out


def decode_chunk(n: int, w: int, m: int, d: int) -> list[int]:
    """Python mirror of ``decodeFrom`` (tests round-trip the encoder through it)."""
    out = []
    for _ in range(n):
        if d % 2 == 0:
            out.append(m)
            m, d = m + 1, d // 2
        else:
            out.append((d // 2) % (1 << w))
            d //= 1 << (w + 1)
    return out


def dense_run(k: int, refs: Sequence[int]) -> int | None:
    """Python mirror of ``denseGo``: the state after ``refs``, or None if the ids are not dense."""
    for x in refs:
        if x < k:
            continue
        if x != k:
            return None
        k += 1
    return k


def plan(refs: Sequence[int], sha256: str, name: str, chunk_refs: int = DEFAULT_CHUNK_REFS) -> Instance:
    """Validate the inputs and lay the trace out in chunks."""
    if not _NAME_RE.fullmatch(name):
        raise InputError(f"instance name {name!r} is not a Lean identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if not _SHA_RE.fullmatch(sha256):
        raise InputError(f"sha256 {sha256!r} is not 64 lowercase hex digits")
    if chunk_refs < 1:
        raise InputError(f"chunk size must be positive, got {chunk_refs}")
    refs = _as_ids(refs)
    chunks: list[Chunk] = []
    k = m = 0
    for start in range(0, len(refs), chunk_refs):
        part = refs[start : start + chunk_refs]
        k_out = dense_run(k, part)
        if k_out is None:
            raise InputError(
                f"block ids are not numbered densely in first-occurrence order (first break in "
                f"references {start}..{start + len(part) - 1}); renumbering would change the trace "
                "the theorem is about"
            )
        w, d, m_after = encode_chunk(part, m)
        chunks.append(Chunk(n=len(part), w=w, m=m, d=d, k_in=k, k_out=k_out))
        k, m = k_out, m_after
    return Instance(name=name, sha256=sha256, refs=len(refs), distinct=k, chunks=chunks)


def _as_ids(refs: Sequence[int]) -> list[int]:
    """Plain ints (a numpy array from ``pycert.traces`` included), each checked non-negative."""
    out = []
    for i, x in enumerate(refs):
        try:
            v = operator.index(x)
        except TypeError:
            raise InputError(f"reference {i} is {x!r}, not an integer") from None
        if v < 0 or isinstance(x, bool):
            raise InputError(f"reference {i} is {x!r}, not a non-negative block id")
        out.append(v)
    return out


def render(inst: Instance) -> str:
    """The Lean source of a planned instance."""
    n = len(inst.chunks)
    cs = [f"c{i}" for i in range(n)]
    suffix = lambda i: "[" + ", ".join(cs[i:]) + "]"  # noqa: E731
    out = [
        f"-- Generated by pycert.lean_trace: {inst.refs} references, {inst.distinct} distinct blocks.",
        "-- Checked by the kernel from the encoded references; nothing here is an assumption.",
        "import Pycert.TraceCheck",
        "import Pycert.Ceiling",
        "",
        f"namespace Pycert.Trace.{inst.name}",
        "open Pycert.TraceCheck",
        "",
        "/-- sha256 of the trace file these references were read from. -/",
        f'def sha256 : String := "{inst.sha256}"',
        "",
    ]
    for c, ch in zip(cs, inst.chunks):
        out.append(f"noncomputable def {c} : Chunk := ⟨{ch.n}, {ch.w}, {ch.m}, {ch.d:#x}⟩")
    out += [
        "",
        f"noncomputable def chunks : List Chunk := {suffix(0)}",
        "",
        "/-- The trace, as the kernel decodes it. -/",
        "noncomputable def trace : List Nat := decodeAll chunks",
        "",
    ]
    for c, ch in zip(cs, inst.chunks):
        out.append(f"theorem {c}_run : denseGo {ch.k_in} {c}.decode = some {ch.k_out} := by decide +kernel")
    out += ["", f"theorem run{n} : denseGo {inst.distinct} (decodeAll []) = some {inst.distinct} := rfl"]
    for i in range(n - 1, -1, -1):
        ch = inst.chunks[i]
        out.append(
            f"theorem run{i} : denseGo {ch.k_in} (decodeAll {suffix(i)}) = some {inst.distinct} :=\n"
            f"  (denseGo_chunk {cs[i]} {suffix(i + 1)} {cs[i]}_run).trans run{i + 1}"
        )
    out += [
        "",
        f"theorem refs_eq : trace.length = {inst.refs} :=",
        "  (decodeAll_length chunks).trans (by decide +kernel)",
        "",
        f"theorem distinct_eq : Pycert.distinct trace = {inst.distinct} := distinct_of_denseGo run0",
        "",
        "/-- On this trace every demand-fetch policy, of any capacity and eviction rule, hits at most",
        f"refs - distinct = {inst.refs - inst.distinct} times (the general ceiling, instantiated). -/",
        f"theorem hits_le (P : Pycert.Ceiling.Policy) : Pycert.Ceiling.hits P trace ≤ {inst.refs - inst.distinct} := by",
        "  have h := Pycert.Ceiling.hits_add_distinct_le P trace",
        "  rw [refs_eq, distinct_eq] at h",
        "  exact Nat.le_sub_of_add_le h",
        "",
        f"end Pycert.Trace.{inst.name}",
        "",
    ]
    return "\n".join(out)


def emit_instance(refs: Sequence[int], sha256: str, name: str, chunk_refs: int = DEFAULT_CHUNK_REFS) -> str:
    """Lean source proving, for exactly these references, their length and distinct count."""
    return render(plan(refs, sha256, name, chunk_refs))


WINDOW_REFS = 16_384
"""The longest prefix pycert kernel-checks by default: measured to check within a few minutes on the
2-core wasm backend (BENCHMARKS.md has the curve). Longer traces certify a prefix window."""


def window_instance(refs: Sequence[int], sha256: str, name: str, window: int) -> str:
    """The instance file for the first ``window`` references of a trace, as prove writes it and verify
    regenerates it (same inputs, same bytes)."""
    if not 1 <= window <= len(refs):
        raise InputError(f"window of {window} references does not fit a trace of {len(refs)}")
    return emit_instance(refs[:window], sha256, name)


def default_window(n_refs: int) -> int:
    """How many leading references of a trace the emitted instance covers."""
    return min(n_refs, WINDOW_REFS)
