"""Exact Belady/MIN (OPT) hit counts at every capacity, in one pass over the trace.

The cache model is the one of :func:`pycert.analysis.cachesim.belady_hits`: demand paging, no bypass (every
miss inserts the referenced block), evict the cached block whose next use is farthest away.

Why one pass is enough: OPT is a stack algorithm (Mattson et al. 1970). With the next-use time as
priority, the cache of ``c`` blocks is always contained in the cache of ``c + 1`` blocks, so every
reference has an **OPT stack distance**: the smallest capacity at which it hits. A histogram of those
distances gives the hit count at every capacity at once, as Mattson stack distances do for LRU.

Why not Mattson's priority stack itself: its update carries an item down the stack past every
position whose next use comes sooner, O(V) per access (V = distinct blocks). On the conversation
trace that is 29 million carry steps for 288,500 references; a compiled version (C, a segment tree
to jump between carry positions) took 1.35 s, 23 times one libCacheSim Belady run. Sugumar and
Abraham (1993) is O(V) per access as well.

What this module does instead follows the *Critical Stack Algorithm* of Bilardi, Ekanadham and
Pattnaik, "Optimal on-line computation of stack distances for MIN and OPT" (CF 2017): the OPT stack
distance of an access depends only on the past, and the state it needs changes at O(1) places per
access, so balanced trees give O(log V) per access. Their critical markers are LRU depths, which
every access shifts; here each is kept as the time it marks instead (a block's LRU depth is the
number of blocks used since its last use, so the two orders agree), and nothing shifts. The state:

- for each block, the time of its last use;
- for each capacity label ``l = 1 .. V-1``, a **critical time** ``tau[l]``: the time of the latest
  access whose OPT stack distance was ``l + 1``, or of the first use that made ``l + 1`` blocks
  exist if there was none since;
- the **imbalance** at time ``s``, ``H(s) = #{l : tau[l] >= s} - #{blocks last used at or after s}``
  (the paper's ``beta``), which is never negative at ``s = t + 1`` for a last-use time ``t`` and is
  0 after the latest access.

An access at time ``T`` to a block last used at ``p < T - 1`` (one used at ``T - 1`` hits with one
block and changes nothing) has OPT stack distance ``d + 1``, where ``t_z`` is the earliest last-use
time in ``(p, T)`` with ``H(t_z + 1) = 0`` (the paper's ``z``: the deepest balanced LRU position
above the accessed block) and ``d`` is the smallest label whose critical time is at or before
``t_z``. Then ``tau[d] := T`` and the block's last use moves from ``p`` to ``T``; a first use adds
the next label with critical time ``T``. These rules were checked against a textbook Mattson OPT
stack, an exhaustive optimum and per-capacity Belady before any tree was built on them; the tests
keep a tree-less version (asserting the invariant on ``H``) beside the compiled one.

The tree: one segment tree over time positions, whose leaves hold ``w = (a critical time here) -
(a last use here)``; each node keeps the sum of ``w``, the minimum over its last-use leaves of the
within-node suffix sum of ``w`` (so ``H`` at a leaf is that plus the sums to the right, and a left
to right search finds ``t_z``), and the minimum label (the prefix minimum gives ``d``). A position
that is neither a last use nor a critical time carries nothing; when the positions run out the live
ones (at most ``2V``) move to the front in order, so memory is O(V), not O(refs), and the O(V)
rebuild comes at most once every ``V`` accesses.

Why numba: the loop is sequential by nature (each access moves a critical time that the next query
reads), so numpy cannot vectorize it, and the same code as plain Python runs about 300 times slower.
numba compiles this Python to machine code on the first call and caches it in the user's cache
directory (``cache=True``, :mod:`pycert.core.jit`); a fresh install pays the
compile (seconds) once, a process after that only loads it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pycert.analysis.cachesim import COLD, HitCurve, curve_from_distances
from pycert.analysis.refs import as_array, dense_ids
from pycert.core.jit import njit


INF = 1 << 30
"""Larger than any sum the tree holds (|sum| <= 2V < 2**29, see :data:`MAX_REFS`): marks "no last
use" and "no label"."""

# Columns of a tree row: sum of w, min suffix over last-use leaves, min label (the fourth pads the
# row to 16 bytes, so a node's two children share one cache line).
_SUM, _MIN, _LAB = 0, 1, 2


@njit(cache=True, inline="always")
def _pull(tree: np.ndarray, node: int) -> bool:
    """Recompute ``node`` from its children; False when nothing changed (its ancestors stand)."""
    left = 2 * node
    right = left + 1
    s_right = tree[right, _SUM]
    s = tree[left, _SUM] + s_right
    a = tree[left, _MIN] + s_right  # a left leaf's suffix runs on through the whole right child
    b = tree[right, _MIN]
    m = a if a < b else b
    x = tree[left, _LAB]
    y = tree[right, _LAB]
    g = x if x < y else y
    if s == tree[node, _SUM] and m == tree[node, _MIN] and g == tree[node, _LAB]:
        return False
    tree[node, _SUM] = s
    tree[node, _MIN] = m
    tree[node, _LAB] = g
    return True


@njit(cache=True, inline="always")
def _up(tree: np.ndarray, size: int, pos: int) -> None:
    node = (pos + size) >> 1
    while node >= 1 and _pull(tree, node):
        node >>= 1


@njit(cache=True, inline="always")
def _up3(tree: np.ndarray, size: int, a: int, b: int, c: int) -> None:
    """``_up`` for three leaves at once: their paths share the upper levels, pulled once each."""
    a += size
    b += size
    c += size
    while a > 1:
        a >>= 1
        b >>= 1
        c >>= 1
        changed = _pull(tree, a)
        if b != a:
            changed |= _pull(tree, b)
        if c != a and c != b:
            changed |= _pull(tree, c)
        elif not changed and a == b:
            return


@njit(cache=True)
def _earliest_balanced(tree: np.ndarray, size: int, lo: int, nodes: np.ndarray, offs: np.ndarray) -> int:
    """The smallest last-use position ``t >= lo`` whose suffix sum of ``w`` after ``t`` is 0."""
    left = lo + size
    right = 2 * size
    count = 0
    while left < right:  # the canonical nodes covering [lo, size), left to right
        if left & 1:
            nodes[count] = left
            count += 1
            left += 1
        left >>= 1
        right >>= 1
    offs[count - 1] = 0  # a node's value counts everything to its right: sum the later nodes
    for j in range(count - 2, -1, -1):
        offs[j] = offs[j + 1] + tree[nodes[j + 1], _SUM]
    node = -1
    off = 0
    for j in range(count):
        if tree[nodes[j], _MIN] + offs[j] <= 0:
            node = nodes[j]
            off = offs[j]
            break
    while node < size:
        left = 2 * node
        right = left + 1
        if tree[left, _MIN] + tree[right, _SUM] + off <= 0:
            off += tree[right, _SUM]
            node = left
        else:
            node = right
    return node - size


@njit(cache=True)
def _min_label(tree: np.ndarray, size: int, hi: int) -> int:
    """The smallest label whose critical time lies at a position ``<= hi``: the prefix ``[0, hi]``
    is the leaf plus every left sibling on its path to the root."""
    node = hi + size
    best = tree[node, _LAB]
    while node > 1:
        if node & 1 and tree[node - 1, _LAB] < best:
            best = tree[node - 1, _LAB]
        node >>= 1
    return best


@njit(cache=True)
def _compact(tree: np.ndarray, size: int, block_at: np.ndarray, pos_of_block: np.ndarray,
             pos_of_label: np.ndarray) -> int:
    """Move the live positions (a last use or a critical time) to the front, in order; rebuild."""
    k = 0
    for q in range(size):
        if tree[size + q, _MIN] == 0 or tree[size + q, _LAB] < INF:
            for col in range(3):
                tree[size + k, col] = tree[size + q, col]
            block_at[k] = block_at[q]
            if block_at[k] >= 0:
                pos_of_block[block_at[k]] = k
            if tree[size + k, _LAB] < INF:
                pos_of_label[tree[size + k, _LAB]] = k
            k += 1
    for q in range(k, size):
        tree[size + q, _SUM] = 0
        tree[size + q, _MIN] = INF
        tree[size + q, _LAB] = INF
        block_at[q] = -1
    for node in range(size - 1, 0, -1):
        _pull(tree, node)
    return k


@njit(cache=True)
def _empty_tree(ids: np.ndarray, n_ids: int) -> tuple[np.ndarray, int, int]:
    """(the segment tree, its leaf count, the distinct blocks of ``ids``), sized for the whole run."""
    n = len(ids)
    seen = np.zeros(n_ids, dtype=np.bool_)
    distinct = 0
    for i in range(n):
        if not seen[ids[i]]:
            seen[ids[i]] = True
            distinct += 1
    # At most 2V positions are live; with room for 3V + 3 a compaction frees at least V + 3, so
    # its O(size) cost is spread over that many accesses. A trace shorter than that never compacts.
    want = min(n + 1, 3 * distinct + 3)
    size = 2
    while size < want:
        size *= 2
    tree = np.zeros((2 * size, 4), dtype=np.int32)
    tree[:, _MIN] = INF
    tree[:, _LAB] = INF
    return tree, size, distinct


@njit(cache=True)
def _opt_distances(ids: np.ndarray, n_ids: int) -> np.ndarray:
    """OPT stack distance of every reference (0 for a first use); ``ids`` lie in ``[0, n_ids)``."""
    n = len(ids)
    out = np.zeros(n, dtype=np.int32)
    if n == 0:
        return out
    tree, size, distinct = _empty_tree(ids, n_ids)
    block_at = np.full(size, -1, dtype=np.int32)
    pos_of_block = np.full(n_ids, -1, dtype=np.int32)
    pos_of_label = np.zeros(distinct + 1, dtype=np.int32)
    nodes = np.zeros(64, dtype=np.int64)
    offs = np.zeros(64, dtype=np.int64)
    free = 0
    labels = 0
    for i in range(n):
        x = ids[i]
        if free == size:
            free = _compact(tree, size, block_at, pos_of_block, pos_of_label)
        q = free  # the position of time i
        free += 1
        pp = pos_of_block[x]
        if pp < 0:  # first use: a new capacity label, critical now (w = 1 - 1 with x's last use)
            if labels == 0:
                tree[size + q, _SUM] = -1  # label 0 (one block) is the case "used just before"
            else:
                tree[size + q, _LAB] = labels
                pos_of_label[labels] = q
            labels += 1
            old = q
        elif ids[i - 1] == x:  # used just before: hits with one block, no critical time moves
            out[i] = 1
            tree[size + q, _SUM] = -1
            old = q
        else:
            tz = _earliest_balanced(tree, size, pp + 1, nodes, offs)
            d = _min_label(tree, size, tz)
            out[i] = d + 1
            old = pos_of_label[d]  # d's critical time moves here: w = 1 - 1 with x's last use
            tree[size + old, _SUM] -= 1
            tree[size + old, _LAB] = INF
            tree[size + q, _LAB] = d
            pos_of_label[d] = q
        if pp >= 0:  # x's old last use goes
            tree[size + pp, _SUM] += 1
            tree[size + pp, _MIN] = INF
            block_at[pp] = -1
        else:
            pp = q
        tree[size + q, _MIN] = 0
        block_at[q] = x
        pos_of_block[x] = q
        _up3(tree, size, old, pp, q)
    return out


def block_ids(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """Ids usable as table indices, and the table size. Mooncake ids are already 0..V-1 in
    first-use order, so small non-negative ids are used as they are (no sort); others are
    renumbered by value."""
    if len(arr) == 0:
        return arr, 0
    lo, hi = int(arr.min()), int(arr.max())
    if lo >= 0 and hi < 2 * len(arr):
        return arr, hi + 1
    dense = dense_ids(arr)
    return dense, int(dense.max()) + 1


MAX_REFS = 1 << 28
"""The tree holds positions and sums in int32 and :data:`INF` must exceed every sum."""


def _distances(refs: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = as_array(refs)
    if len(arr) >= MAX_REFS:
        raise ValueError(f"traces of {MAX_REFS:,} references or more are not supported")
    ids, n_ids = block_ids(arr)
    return _opt_distances(ids, n_ids)


def opt_stack_distances(refs: Sequence[int] | np.ndarray) -> np.ndarray:
    """OPT (MIN) stack distance of every reference (int64 array), :data:`pycert.analysis.cachesim.COLD` for
    first uses: the smallest capacity at which Belady's MIN hits it."""
    return _distances(refs).astype(np.int64)


def opt_hit_curve(refs: Sequence[int] | np.ndarray) -> HitCurve:
    """The exact Belady/MIN hit count at every capacity, in one O(n log V) pass."""
    return curve_from_distances(_distances(refs))


def admission_stack_distances(refs: Sequence[int] | np.ndarray) -> np.ndarray:
    """The smallest capacity at which Belady's MIN *with bypass* (a missed block is admitted only if it
    is used again before some cached block) hits each reference, :data:`~pycert.analysis.cachesim.COLD`
    for first uses.

    A cache of ``C`` blocks that may decline a block is a cache of ``C + 1`` blocks without that choice
    on the trace with a fresh block, never used again, after every reference: the fresh block holds the
    slot a declined block would not have taken. Both are the same linear program (a reuse pair ``(i, j)``
    needs a slot at every step ``i .. j - 1`` in the first, at ``2i + 1 .. 2j - 1`` in the second, whose
    even steps ask less), and both programs' optima are the MIN hit counts; so the distance here is the
    OPT stack distance of the reference on that trace, less one (docs/capacity-encodings.md, the optimum with
    bypass). MIN's hits on the mixed trace are exactly MIN-with-bypass's on this one: the
    fresh blocks are never reused, so evicting one changes no hit."""
    arr = as_array(refs)
    n = len(arr)
    if 2 * n >= MAX_REFS:
        raise ValueError(f"traces of {MAX_REFS // 2:,} references or more are not supported with bypass")
    ids, n_ids = block_ids(arr)
    mixed = np.empty(2 * n, dtype=np.int64)
    mixed[0::2] = ids
    mixed[1::2] = n_ids + np.arange(n)
    d = _opt_distances(mixed, n_ids + n)[0::2].astype(np.int64)
    return np.where(d == COLD, COLD, d - 1)


def admission_hit_curve(refs: Sequence[int] | np.ndarray) -> HitCurve:
    """The exact hit count of Belady's MIN with bypass at every capacity (:func:`admission_stack_distances`)."""
    return curve_from_distances(admission_stack_distances(refs))
