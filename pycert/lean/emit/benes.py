"""Beneš networks: the control words that make ``Pycert.Route.route`` realise a given permutation.

A layer ``(k, c)`` pairs every position ``j`` with ``j ^ 2**k`` and swaps the pair when bit
``pair_index(k, j)`` of ``c`` is set (``lean/Pycert/Route.lean``). On ``n = 2**m`` positions the
Beneš network has ``2m - 1`` layers, on bits ``m-1, …, 1, 0, 1, …, m-1``, and realises every
permutation; the looping algorithm finds its controls in O(n log n): the first layer sends one
element of each input pair into each half, the last layer takes one element of each output pair
from each half, and the two halves are Beneš networks of half the size, routed the same way.

The kernel never checks these controls (any control words give a bijection); a wrong routing would
make the instance stand for another trace, which the emitter's round trip and ``pycert verify``'s
regeneration catch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pycert.core.jit import njit


def pair_index(k: int, j: int) -> int:
    """``j`` with bit ``k`` taken out: the control bit both positions of a pair read."""
    return ((j >> (k + 1)) << k) | (j & ((1 << k) - 1))


def route(net: Sequence[tuple[int, int]], j: int) -> int:
    """Python mirror of ``Pycert.Route.route`` for one position."""
    for k, c in net:
        if (c >> pair_index(k, j)) & 1:
            j ^= 1 << k
    return j


def route_all(net: Sequence[tuple[int, int]], n: int) -> np.ndarray:
    """``route(net, j)`` for ``j = 0 … n-1`` at once (layer by layer, vectorised)."""
    y = np.arange(n, dtype=np.int64)
    for k, c in net:
        pi = ((y >> (k + 1)) << k) | (y & ((1 << k) - 1))
        width = max(int(pi.max(initial=0)) + 1, c.bit_length())
        bits = np.unpackbits(np.frombuffer(c.to_bytes((width + 7) // 8, "little"), dtype=np.uint8),
                             bitorder="little")
        y ^= bits[pi].astype(np.int64) << k
    return y


def controls(perm: Sequence[int]) -> list[tuple[int, int]]:
    """The layers ``[(k, c), …]`` of a Beneš network on ``len(perm) = 2**m`` positions (``m >= 1``)
    whose ``route`` sends every ``j`` to ``perm[j]``."""
    p = np.asarray(perm, dtype=np.int64)
    n = len(p)
    m = n.bit_length() - 1
    if n != 1 << m or m < 1 or not np.array_equal(np.sort(p), np.arange(n)):
        raise ValueError("controls: perm must be a permutation of 0 … 2^m - 1 with m >= 1")
    bits = _controls(p, m)
    dims = [m - 1 - t for t in range(m)] + list(range(1, m))
    return [(k, _word(row)) for k, row in zip(dims, bits)]


@njit(cache=True)
def _controls(p: np.ndarray, m: int) -> np.ndarray:  # pragma: no cover - compiled
    """One row of control bits (one byte per pair) per layer, by the looping algorithm: on each
    block of ``2**(k+1)`` places, the first and last layers on bit ``k`` send one element of every
    input pair and take one of every output pair through each half; the halves then route the
    permutation left for them, on the layers in between."""
    n = p.shape[0]
    layers = 2 * m - 1
    bits = np.zeros((layers, n // 2), dtype=np.uint8)
    p = p.copy()
    out = np.empty(n, dtype=np.int64)
    inv = np.empty(n, dtype=np.int64)
    side = np.empty(n, dtype=np.int64)
    for t in range(m - 1):
        k = m - 1 - t
        size = 1 << (k + 1)
        half = 1 << k
        for o in range(0, n, size):
            for s in range(size):
                inv[o + p[o + s]] = s
                side[o + s] = -1
            for start in range(half):
                s = start
                while side[o + s] < 0:  # 0: through the lower half, 1: through the upper half
                    side[o + s] = 0
                    side[o + (s ^ half)] = 1
                    s = inv[o + (p[o + (s ^ half)] ^ half)]  # its output pair's other element: lower half
            base = o >> 1  # pair_index(k, o + q) for a block starting at o
            for q in range(half):
                bits[t, base + q] = side[o + q]
                bits[layers - 1 - t, base + q] = side[o + inv[o + q]]
            for s in range(size):
                out[o + (side[o + s] << k) + (s & (half - 1))] = p[o + s] & (half - 1)
        p, out = out, p
    for o in range(0, n, 2):
        bits[m - 1, o >> 1] = p[o]  # the one layer of a 2-block: swap when 0 goes to 1
    return bits


def _word(bits: np.ndarray) -> int:
    """A control word from one byte (0 or 1) per pair, pair 0 lowest."""
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")
