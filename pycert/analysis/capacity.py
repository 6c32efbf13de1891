"""The capacity bound of ``lean/Pycert/Capacity.lean`` and a cut list that makes it Belady's hit count.

For a trace ``r_0 … r_{N-1}``, a cache of ``C`` blocks (demand paging, no bypass, empty start) and
any list ``Y`` of cut points, the library proves

    hits ≤ (C - 1) · |Y| + Σ over the closed windows W between consecutive cuts of (|W| - distinct W)

(windows ``r[0..y_1]``, ``r[y_1..y_2]``, …, ``r[y_m..N-1]`` share their endpoints). :func:`bound` is
that right-hand side, computed the way it reads; :func:`bound_pairs` the same figure as
``(C - 1) · |Y|`` plus the reuse pairs ``(prev(j), j)`` with no cut strictly between (the pair form,
``hits_le_free``, and what the kernel instance counts).

Every ``Y`` gives a sound bound; :func:`cut_list` finds one that is tight. The linear program "max Σ x_I
over reuse pairs I = (i, j) with, for every t, Σ over the pairs with i < t < j of x_I ≤ C - 1,
0 ≤ x ≤ 1" has consecutive-ones columns, so it is totally unimodular: its optimum is Belady's hit
count without bypass and its dual has an integral optimum, a cut set (Cohen and Burkhard, Oper. Res.
Lett. 18(1), 1995). The recipe (issue 25) builds that dual from Belady's hit pairs by complementary
slackness: a cut only where exactly ``C - 1`` hit pairs straddle (``Sat``), no hit pair straddling
two cuts, and every missed pair straddling one. With ``R(t)`` the last ``j - 1`` of a hit pair
straddling ``t`` and ``G(t)`` the first ``j - 1`` of a missed pair with ``i ≥ t``, a cut ``y'`` may
follow ``y`` iff ``y' ∈ Sat`` and ``R(y) < y' ≤ G(y)``; one sweep over ``t`` with a heap of offers
``(G(y), y)`` finds a chain from a virtual start to a cut after which no missed pair begins, in
O(N log N). The greedy "latest saturated point for each missed pair" is not tight (trace
``3 2 1 3 2 1 3 3 3`` at ``C = 2``); the tests check the recipe against brute force.

With bypass (a cache that may skip storing a missed block, ``lean/Pycert/Admission.lean``)
the same holds with a pair ``(i, j)`` needing a slot at every step ``i .. j - 1`` (the block just
referenced no longer has one of its own) and ``C`` slots in place of ``C - 1``: the bound is
``C · |Y| + #{pairs with no cut in i ≤ y < j}``, the linear program's optimum is Belady's MIN with bypass
(:func:`pycert.analysis.optcurve.admission_stack_distances`) and the same recipe, on those intervals,
finds a cut list that makes the bound its hit count (``admission=True`` throughout).

Nothing here is trusted: the kernel checks the bound for the cut list it is given, whatever list it is.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from pycert.analysis.optcurve import admission_stack_distances, opt_stack_distances
from pycert.analysis.refs import as_array, prev_next
from pycert.core.jit import njit


NONE = np.iinfo(np.int64).max
"""``G(t)`` where no missed pair begins at or after ``t``."""


def bound(refs: Sequence[int] | np.ndarray, capacity: int, cuts: Sequence[int]) -> int:
    """``(C - 1) · |Y| + Σ (|W| - distinct W)`` over the closed windows cut at ``cuts``, read as the
    Lean statement ``hits_le_windows`` reads (any list; a window ending before it starts is empty)."""
    arr = as_array(refs)
    n = len(arr)
    ends = [0, *cuts, n - 1]
    total = max(capacity - 1, 0) * len(cuts)
    for a, b in zip(ends, ends[1:]):
        w = arr[a:b + 1] if b >= a else arr[:0]
        total += len(w) - len(np.unique(w))
    return total


def free_pairs(refs: Sequence[int] | np.ndarray, cuts: Sequence[int], admission: bool = False) -> int:
    """Reuse pairs ``(prev(j), j)`` with no cut strictly between (with ``admission``: none in
    ``prev(j) ≤ y < j``): the count of ``Free`` (``FreeA``) references."""
    arr = as_array(refs)
    prev, _ = prev_next(arr)
    j = np.flatnonzero(prev >= 0)
    i = prev[j]
    y = np.unique(np.asarray(cuts, dtype=np.int64))
    # cuts in (i, j): those < j minus those <= i; in [i, j): those < j minus those < i
    inside = np.searchsorted(y, j, side="left") - np.searchsorted(y, i, side="left" if admission else "right")
    return int(np.count_nonzero(inside == 0))


def bound_pairs(refs: Sequence[int] | np.ndarray, capacity: int, cuts: Sequence[int], admission: bool = False) -> int:
    """The pair form of the bound: ``(C - 1) · |Y| + free_pairs`` (with ``admission``: ``C · |Y|``)."""
    return max(capacity - (0 if admission else 1), 0) * len(cuts) + free_pairs(refs, cuts, admission)


def stack_distances(refs: Sequence[int] | np.ndarray, admission: bool = False) -> np.ndarray:
    """Belady's MIN stack distances (with bypass under ``admission``): a reference hits at capacity ``C``
    iff its distance is in ``1..C``."""
    return admission_stack_distances(refs) if admission else opt_stack_distances(refs)


def belady_hit_flags(refs: Sequence[int] | np.ndarray, capacity: int, admission: bool = False,
                     distances: np.ndarray | None = None) -> np.ndarray:
    """Which references Belady's MIN (with bypass under ``admission``) hits with ``capacity`` blocks:
    those whose stack distance is in ``1..capacity`` (MIN is a stack algorithm,
    :mod:`pycert.analysis.optcurve`); ``distances`` when already computed for this trace."""
    d = stack_distances(refs, admission) if distances is None else distances
    return (d >= 1) & (d <= capacity)


@njit(cache=True)
def _sweep(sat: np.ndarray, reach_from: np.ndarray, until: np.ndarray, start_until: int) -> np.ndarray:  # pragma: no cover - compiled
    """Parents of the chain of cuts (``-1``: the virtual start), found by one sweep; the chain ends at
    the returned array's last entry. Offers ``(until[y], y)`` become active at ``reach_from[y]``."""
    n = sat.shape[0]
    parent = np.full(n, -2, dtype=np.int64)
    head = np.full(n + 1, -1, dtype=np.int64)  # offers by activation time, as linked lists
    link = np.full(n, -1, dtype=np.int64)
    heap = [(-start_until, -1)]  # max-heap on until: (−until, cut)
    end = -1
    for t in range(n):
        y = head[t]
        while y >= 0:
            heapq.heappush(heap, (-until[y], y))
            y = link[y]
        if not sat[t]:
            continue
        while len(heap) > 0 and -heap[0][0] < t:
            heapq.heappop(heap)
        if len(heap) == 0:
            continue
        parent[t] = heap[0][1]
        if until[t] == NONE:
            end = t
            break
        a = reach_from[t]
        if a < n:
            link[t] = head[a]
            head[a] = t
    out = np.empty(0, dtype=np.int64)
    if end < 0:
        return out
    chain = []
    t = end
    while t >= 0:
        chain.append(t)
        t = parent[t]
    out = np.empty(len(chain), dtype=np.int64)
    for k in range(len(chain)):
        out[k] = chain[len(chain) - 1 - k]
    return out


def cut_list(refs: Sequence[int] | np.ndarray, capacity: int, admission: bool = False,
             hit: np.ndarray | None = None) -> list[int]:
    """A strictly increasing cut list whose bound is Belady's hit count at ``capacity`` blocks (with
    bypass under ``admission``), by the recipe in the module docstring; ``hit``: Belady's hit flags when
    already computed. Empty when Belady misses no reuse."""
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    arr = as_array(refs)
    n = len(arr)
    prev, _ = prev_next(arr)
    if hit is None:
        hit = belady_hit_flags(arr, capacity, admission)
    times = np.arange(n, dtype=np.int64)
    lo_off = 0 if admission else 1  # a pair (i, j) needs a slot at the steps i + lo_off .. j - 1
    j = np.flatnonzero((prev >= 0) & (prev + lo_off < times))  # without admission (j - 1, j) needs none
    lo = prev[j] + lo_off
    h = hit[j]
    diff = np.zeros(n + 1, dtype=np.int64)
    np.add.at(diff, lo[h], 1)
    np.add.at(diff, j[h], -1)
    sat = np.cumsum(diff[:n]) == capacity - 1 + (1 - lo_off)  # every slot held by a hit pair at t
    last_end = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last_end, lo[h], j[h])
    reach_from = np.maximum(times, np.maximum.accumulate(last_end) - 1) + 1  # R(t) + 1
    first_end = np.full(n + 1, NONE, dtype=np.int64)  # shifted by one: index 0 is the virtual start
    np.minimum.at(first_end, lo[~h], j[~h] - 1)
    until = np.minimum.accumulate(first_end[::-1])[::-1].copy()  # until[t + 1] = G(t), until[0] = G(start)
    if n == 0 or until[0] == NONE:
        return []
    chain = _sweep(sat, reach_from, until[1:], int(until[0]))
    if len(chain) == 0:
        raise RuntimeError(f"no tight cut list found at capacity {capacity} (the recipe failed: a bug)")
    return chain.tolist()


def belady_pairs(refs: Sequence[int] | np.ndarray, capacity: int, admission: bool = False,
                 hit: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Belady's hit pairs (with bypass under ``admission``) as two flag arrays over the references: the
    starts (each hit's previous reference to its block) and the ends (MIN's hits, ``hit`` when already
    computed). The kernel checks them as the witness that some cache of ``capacity`` blocks reaches the
    bound (``Pycert.SortedOptimum``, ``Pycert.SortedAdmission``)."""
    arr = as_array(refs)
    prev, _ = prev_next(arr)
    ends = belady_hit_flags(arr, capacity, admission) if hit is None else hit
    starts = np.zeros(len(arr), dtype=bool)
    starts[prev[ends]] = True
    return starts, ends


def witness_ok(refs: Sequence[int] | np.ndarray, capacity: int, starts: np.ndarray, admission: bool = False) -> bool:
    """The hypotheses of ``Pycert.Capacity.realise`` for the starts ``starts``, read as they read: every
    start has a later reference to its block, and at every step ``t`` at most ``capacity - 1`` starts
    ``i < t`` have their block's next reference after ``t``; with ``admission`` (``realiseA``) at most
    ``capacity`` starts ``i ≤ t``."""
    arr = as_array(refs)
    n = len(arr)
    _, nxt = prev_next(arr)
    i = np.flatnonzero(np.asarray(starts, dtype=bool)[:n])
    if np.any(nxt[i] >= n):
        return False
    lo_off = 0 if admission else 1
    opened = np.zeros(n + 1, dtype=np.int64)  # open at t for i + lo_off <= t < nxt[i]
    np.add.at(opened, i + lo_off, 1)
    np.add.at(opened, nxt[i], -1)
    return bool(np.all(np.cumsum(opened[:n]) <= capacity - lo_off))
