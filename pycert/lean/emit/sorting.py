"""The sort a capacity instance rests on (``lean/Pycert/SortedTrace.lean``): the references' keys (block,
time) on ``2 ** M`` places, the Beneš network that sorts them on whole bit planes, the index-bit
exchanges that transpose a packed vector into planes, and Python mirrors of what the kernel computes
with them. Shared by the one-file instance (:mod:`pycert.lean.emit.capacity`) and the pieces of a long
trace (:mod:`pycert.lean.emit.pieces`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pycert.core.errors import PycertError
from pycert.lean.emit import benes, packed_trace


def places_log2(n: int) -> int:
    """``M``: the sort runs on ``2 ** M >= n`` places, at least two."""
    return max(1, (n - 1).bit_length())


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


@dataclass(frozen=True)
class Sorted:
    """What the cut and witness lines of an instance need of its sort."""

    n: int
    m_log: int
    sigma: np.ndarray
    same: np.ndarray
    piece_bits: int


def sort_of(keys: np.ndarray, m_log: int, piece_bits: int, name: str) -> tuple[Sorted, list[int]]:
    """The sort of the references by (``keys``, time) on ``2 ** m_log`` places, and its network's words,
    checked to sort before anything is written."""
    sigma = sorted_order(keys, m_log)
    words = network_words(sigma, m_log)
    if not np.array_equal(perm_all(words, m_log), sigma):
        raise PycertError(f"{name}: the network does not sort the references (an emitter bug)")
    return Sorted(n=len(keys), m_log=m_log, sigma=sigma, same=same_plane(keys, sigma), piece_bits=piece_bits), words


def sort_lines(sort: Sorted, words: list[int], f: int, block: str) -> list[str]:
    """The network's words, ``same`` and the transposition ``rot`` of an instance sorted by (``block``, time)."""
    lines = []
    for k, word in enumerate(words):
        lines += packed_trace.nat_defs(f"W{k}", f"Sort network word {k}: the layers on index bit {k}.", word,
                                       sort.piece_bits)
    lines += [f"/-- The network sorting the {2 ** sort.m_log} places by ({block}, time) (`SortedTrace.net`). -/",
              f"noncomputable def W : List Nat := [{', '.join(f'W{k}' for k in range(sort.m_log))}]", ""]
    lines += packed_trace.nat_defs("same", f"Sorted places whose predecessor is a reference to the same {block}.",
                                   plane(sort.same), sort.piece_bits)
    return lines + ["/-- Index-bit exchanges transposing the packed block numbers into bit planes. -/",
                    f"noncomputable def rot : List (Nat × Nat) := {rotation_pairs(f, sort.m_log)!r}", ""]
