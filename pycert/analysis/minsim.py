"""Belady's MIN at one capacity by direct simulation, compiled: the engine the one-pass curve
(:mod:`pycert.analysis.optcurve`) is checked against, with and without bypass
(:func:`pycert.analysis.cachesim.belady_hits`, :func:`~pycert.analysis.cachesim.belady_bypass_flags` call it).

The same simulation the interpreter ran (a max-heap of next-use times with lazy deletion of stale
entries), over dense block ids so that an array holds each block's state in place of a dict. Compiled,
a capacity of the 288,500-reference conversation trace costs milliseconds where it cost 0.3-0.7 s: a
14-capacity curve's figures checked both models at every capacity, 28 simulations, in 9-13 s of its
run (docs/fixed-costs.md, the warm checker). Without the fast extra (no numba) it runs as Python
(:mod:`pycert.core.jit`), with the same figures.
"""

from __future__ import annotations

import heapq

import numpy as np

from pycert.core.jit import njit


@njit(cache=True)
def min_hit_flags(dense: np.ndarray, nxt: np.ndarray, capacity: int, n_ids: int, bypass: bool) -> np.ndarray:  # pragma: no cover - compiled
    """Which references Belady's MIN with ``capacity`` blocks hits. ``dense``: block ids ``0..n_ids-1``;
    ``nxt``: each reference's next use of its block (``n`` when none).

    Without ``bypass`` every miss inserts its block, evicting the cached block used farthest ahead (never
    again counts as farthest). With ``bypass`` a missed block is admitted only if it is used again and, the
    cache being full, some cached block is used later than it (that one is evicted); a block hit and never
    used again leaves the cache."""
    n = dense.shape[0]
    width = n + 1
    cached = np.full(n_ids, -1, dtype=np.int64)  # the next use a cached block is filed under; -1: not cached
    size = 0
    heap = [np.int64(0)]  # typed by its first element, which goes
    heap.pop()
    hit = np.zeros(n, dtype=np.bool_)
    for t in range(n):
        block, use = dense[t], nxt[t]
        if cached[block] >= 0:
            hit[t] = True
            if bypass:
                cached[block] = -1
                size -= 1
            else:
                cached[block] = use
                heapq.heappush(heap, -(use * width + block))
                continue
        elif bypass and use >= n:
            continue
        elif size >= capacity:
            while True:  # the latest next use among the cached blocks, stale entries dropped
                top = -heap[0]
                far, victim = top // width, top % width
                if cached[victim] == far:
                    break
                heapq.heappop(heap)
            if bypass and far < use:
                continue  # every cached block is used before this one: bypass
            heapq.heappop(heap)
            cached[victim] = -1
            size -= 1
        if not bypass or use < n:
            cached[block] = use
            size += 1
            heapq.heappush(heap, -(use * width + block))
    return hit
