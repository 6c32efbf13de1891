"""Exact cache figures for a block-reference trace: LRU at every capacity, Belady/MIN, unbounded.

(Belady/MIN at every capacity in one pass lives in :mod:`pycert.analysis.optcurve`; :func:`belady_hits` here
simulates one capacity and is the reference it is tested against.)

All counts are exact integers; rates are :class:`fractions.Fraction` and, where they leave the
process, :class:`~pycert.core.exact.Ratio` (numerator, denominator and the nearest float). A trace's
capacity-free figures (:func:`pycert.analysis.stats.trace_stats`) are read off these and off its requests.

LRU at every capacity comes from Mattson stack distances: LRU is a stack algorithm, so a reference
hits in a cache of ``C`` blocks exactly when its stack distance (1 + the number of distinct blocks
used since the previous use of the same block) is at most ``C``. One histogram of distances gives the
hit count at every capacity at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from pycert.analysis.refs import as_array, dense_ids, distinct_count, prev_next

COLD = 0
"""The stack distance :func:`stack_distances` reports for a first reference (infinite: it misses at
every capacity)."""


def _count_later_uses(prefix: np.ndarray, after: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """For each query ``q``: ``#{j < prefix[q] : nxt[j] > after[q]}``.

    This is the Fenwick-tree query over last-use positions, evaluated offline one tree level at a
    time so that numpy does the work: the Fenwick nodes covering ``[0, prefix)`` are the aligned
    blocks given by the set bits of ``prefix``, and a level-``L`` node is a block of ``2**L``
    positions. Each level keeps every node's next-use times sorted (one global array keyed by
    ``node << shift | nxt``), so one ``searchsorted`` answers that level for all queries. A level is
    built from the one below by a stable sort of already sorted halves (a cheap merge). O(n log n).
    """
    n = len(nxt)
    shift = int(n).bit_length()  # nxt values lie in [0, n]
    low = (1 << shift) - 1
    if n >= 1 << 31:
        raise ValueError("traces of 2**31 references or more are not supported")
    keys = (np.arange(n, dtype=np.int64) << shift) | nxt  # level 0: one position per node
    out = np.zeros(len(prefix), dtype=np.int64)
    top = int(prefix.max(initial=0))
    level = 0
    while (1 << level) <= top:
        has = (prefix >> level) & 1 == 1
        if has.any():
            node = (prefix[has] >> level) - 1
            first_later = np.searchsorted(keys, (node << shift) | after[has], side="right")
            out[has] += ((node + 1) << level) - first_later
        level += 1
        keys = np.sort(((keys >> (shift + 1)) << shift) | (keys & low), kind="stable")
    return out


def stack_distances(refs: Sequence[int] | np.ndarray) -> np.ndarray:
    """Mattson LRU stack distance of every reference (int64 array), :data:`COLD` for first uses.

    For a reuse at ``i`` of the block last used at ``p``, the distance is 1 + the number of distinct
    blocks in ``refs[p+1:i]``. Those are the positions ``j`` in ``(p, i)`` whose next use is after
    ``i``, counted as (all ``j < i`` with next use after ``i``) minus (those with ``j <= p``); the
    first term is the number of distinct blocks seen before ``i``, less one.
    """
    arr = as_array(refs)
    prev, nxt = prev_next(arr)
    first = prev < 0
    reuse = np.flatnonzero(~first)
    seen_before = np.cumsum(first) - first  # distinct blocks among refs[:i]
    inside = seen_before[reuse] - 1 - _count_later_uses(prev[reuse] + 1, reuse, nxt)
    out = np.full(len(arr), COLD, dtype=np.int64)
    out[reuse] = inside + 1
    return out


@dataclass(frozen=True, eq=False)
class HitCurve:
    """Exact hit counts of a stack algorithm (LRU, or OPT from :mod:`pycert.analysis.optcurve`) at every capacity.

    ``hits_at[c]`` is the number of hits with a cache of ``c`` blocks, for ``c`` from 0 to the
    largest stack distance; at any larger capacity the policy hits every reuse (``refs - distinct``).
    """

    refs: int
    distinct: int
    hits_at: np.ndarray

    @property
    def max_distance(self) -> int:
        return len(self.hits_at) - 1

    def hits(self, capacity: int) -> int:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        return int(self.hits_at[min(capacity, self.max_distance)])

    def hit_rate(self, capacity: int) -> Fraction:
        return Fraction(self.hits(capacity), self.refs)


LruCurve = HitCurve
"""The name the LRU curve had before the OPT curve shared its class."""


def curve_from_distances(d: np.ndarray) -> HitCurve:
    """A stack algorithm's hit count at every capacity from its stack distances (:data:`COLD` for
    first uses): a reference hits at capacity ``c`` iff its distance is in ``1..c``."""
    hist = np.bincount(d, minlength=1).astype(np.int64)
    distinct = int(hist[COLD])
    hist[COLD] = 0  # capacity 0 hits nothing; cold references hit at no capacity
    return HitCurve(refs=len(d), distinct=distinct, hits_at=np.cumsum(hist))


def lru_hit_curve(refs: Sequence[int] | np.ndarray) -> HitCurve:
    """The exact LRU hit count at every capacity, in one O(n log n) pass."""
    return curve_from_distances(stack_distances(refs))


def lru_hits(curve: HitCurve, capacity: int) -> int:
    """LRU hits with a cache of ``capacity`` blocks."""
    return curve.hits(capacity)


def belady_hits(refs: Sequence[int] | np.ndarray, capacity: int) -> int:
    """Hits of Belady's MIN with ``capacity`` blocks: demand paging, no bypass.

    Every miss inserts the referenced block; when the cache is full the victim is the cached block
    whose next use is farthest away (never used again counts as farthest; ties among those do not
    change the count). O(n log n): a max-heap of next-use times with lazy deletion of stale entries,
    compiled (:func:`pycert.analysis.minsim.min_hit_flags`).
    """
    return int(_simulated(refs, capacity, bypass=False).sum())


def belady_bypass_flags(refs: Sequence[int] | np.ndarray, capacity: int) -> np.ndarray:
    """Which references Belady's MIN *with bypass* hits with ``capacity`` blocks, by direct simulation.

    On a miss the block is admitted only if it is used again and, the cache being full, some cached
    block is used later than it; that block (the one used farthest in the future) is evicted. A block
    that is hit and never used again leaves the cache. Blocks never used again are the only ties, and
    which of them goes changes no hit. O(n log n), a max-heap of next-use times with lazy deletion,
    compiled (:func:`pycert.analysis.minsim.min_hit_flags`).
    """
    return _simulated(refs, capacity, bypass=True)


def _simulated(refs: Sequence[int] | np.ndarray, capacity: int, bypass: bool) -> np.ndarray:
    if capacity < 0:
        raise ValueError(f"capacity must be >= 0, got {capacity}")
    arr = as_array(refs)
    if capacity == 0 or len(arr) == 0:
        return np.zeros(len(arr), dtype=bool)
    from pycert.analysis.minsim import min_hit_flags  # numba (0.3 s): only for a command that simulates

    dense = dense_ids(arr)
    _, nxt = prev_next(arr)
    return min_hit_flags(dense, nxt, capacity, int(dense.max()) + 1, bypass)


def unbounded_hits(refs: Sequence[int] | np.ndarray) -> int:
    """Hits of an infinite cache: every reuse hits (refs - distinct)."""
    arr = as_array(refs)
    return len(arr) - distinct_count(arr)
