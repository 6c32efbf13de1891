"""The order of a trace's requests: file order, checked against their timestamps, or with ``--sort`` the
order of their timestamps.

A cache sees requests in the order they arrive, and every figure is of the references in the order read. A
trace whose timestamps go back somewhere was written out of order (merged logs, a gateway's per-worker
files): it is read as it is, in file order, with a warning naming the first line whose timestamp is earlier
than the line before it's; ``--sort`` reads it in timestamp order instead (a stable sort: requests of one
timestamp keep their file order), and then every request needs a timestamp.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import numpy as np

from pycert.core.errors import InputError
from pycert.data.formats import Parsed


def _stamp(t: float, iso: bool) -> str:
    """A timestamp as the trace wrote it: an ISO 8601 one as a date and time (UTC), a number in full."""
    if iso:
        return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")
    return format(t, ".6f").rstrip("0").rstrip(".") if abs(t) < 1e15 else f"{t:.0f}"


def checked(parsed: Parsed, name: str) -> Parsed:
    """``parsed`` with :attr:`Parsed.disorder` set when a timestamp is earlier than the one before it (requests
    without a timestamp are passed over)."""
    cols = parsed.columns
    if cols is None or cols.timestamps is None:
        return parsed
    have = np.flatnonzero(~np.isnan(cols.timestamps))
    times = cols.timestamps[have]
    back = np.flatnonzero(times[1:] < times[:-1])
    if not len(back):
        return parsed
    k = int(back[0])
    this, before = int(have[k + 1]), int(have[k])
    return replace(parsed, disorder=(
        f"{name}:{int(cols.lines[this])}: timestamp {_stamp(float(times[k + 1]), cols.iso_times)} is earlier than line "
        f"{int(cols.lines[before])}'s ({_stamp(float(times[k]), cols.iso_times)}), and {len(back):,} request"
        f"{'s go' if len(back) > 1 else ' goes'} back in all: the requests are read in file order (--sort reads "
        "them in timestamp order)"))


def by_time(parsed: Parsed, name: str) -> Parsed:
    """``parsed`` with its requests in timestamp order (stable)."""
    cols = parsed.columns
    if cols is None:
        raise InputError("--sort orders requests by timestamp, and a file of block ids has neither", where="--sort")
    if cols.timestamps is None or np.isnan(cols.timestamps).any():
        line = int(cols.lines[0 if cols.timestamps is None else int(np.flatnonzero(np.isnan(cols.timestamps))[0])])
        raise InputError("no field 'timestamp': --sort orders the requests by timestamp, so every request needs one",
                         where=f"{name}:{line}")
    order = np.argsort(cols.timestamps, kind="stable")
    if (order == np.arange(len(order))).all():
        return replace(parsed, sorted=True)
    lengths = np.diff(cols.bounds)
    starts = cols.bounds[:-1][order]
    pick = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths[order])[:-1])), lengths[order]) + np.arange(
        int(lengths.sum()))
    bounds = np.concatenate(([0], np.cumsum(lengths[order]))).astype(np.int64)

    def per(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[order]

    moved = replace(cols, refs=cols.refs[pick], bounds=bounds, lines=cols.lines[order], tokens=cols.tokens[order],
                    tenants=per(cols.tenants), sessions=per(cols.sessions), hosts=per(cols.hosts),
                    timestamps=cols.timestamps[order])
    return replace(parsed, refs=moved.refs, columns=moved, sorted=True,
                   prompt_tokens=None if parsed.prompt_tokens is None else moved.tokens)
