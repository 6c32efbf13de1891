"""A trace's block ids as numpy arrays: the representations every exact figure of :mod:`pycert.analysis` starts
from (ids as int64, renumbered densely, each reference's previous and next use of its block). Below every other
module of the layer, so that the simulators, the request checks and the capacity recipe share them without
importing one another."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def as_array(refs: Sequence[int] | np.ndarray) -> np.ndarray:
    """int64 ids; a uint64 trace is reinterpreted bit for bit (ids are labels: only equality counts)."""
    arr = np.asarray(refs)
    arr = arr.view(np.int64) if arr.dtype == np.uint64 else np.asarray(arr, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError("refs must be a one-dimensional sequence of block ids")
    return arr


def dense_ids(arr: np.ndarray) -> np.ndarray:
    """Ids renumbered 0..distinct-1 (by value). Sort-based: numpy's ``unique`` is far slower here."""
    order = np.argsort(arr, kind="stable")
    sorted_ids = arr[order]
    dense = np.empty(len(arr), dtype=np.int64)
    dense[order] = np.concatenate(([0], np.cumsum(sorted_ids[1:] != sorted_ids[:-1])))
    return dense


def distinct_count(arr: np.ndarray) -> int:
    """How many distinct ids ``arr`` holds."""
    s = np.sort(arr)
    return int(len(s) > 0) + int(np.count_nonzero(s[1:] != s[:-1]))


def prev_next(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each position: the previous position of the same id (-1 if none), the next (n if none)."""
    n = len(arr)
    order = np.argsort(arr, kind="stable")  # equal ids stay in time order
    same = arr[order[1:]] == arr[order[:-1]]
    earlier, later = order[:-1][same], order[1:][same]
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, n, dtype=np.int64)
    prev[later] = earlier
    nxt[earlier] = later
    return prev, nxt
