"""What the report page (:mod:`pycert.certify.report`) draws and tabulates outside its cards: the trace
engine's hit-rate figure of one trace, and a certificate section's plain tables. Every string from a
certificate is escaped (:func:`escape`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from pycert.certify.card import escape
from pycert.certify.cards import Curve
from pycert.core.errors import Rejected, Rejection
from pycert.core.gate import Source


def table(rows: list[tuple[object, ...]], headers: tuple[str, ...]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def curve_png(trace_path: Source, sha256: str, label: str, proved: Sequence[tuple[int, int]] = (),
              fmt: str | None = None, block_tokens: int | None = None, admission: Mapping[int, int] | None = None,
              observed: Sequence[tuple[int, int]] = (), sort: bool = False) -> Curve:
    """The trace engine's hit-rate figure for one trace (LRU and Belady at every capacity, the ceiling),
    read as its certificate's parameters say (``fmt``, ``block_tokens``, ``sort``), with the ``(capacity, hits)``
    that capacity certificates of the page prove marked on it (with ``admission``, capacity -> the optimum
    with bypass, in their labels), and the ``(capacity, hits)`` engines were observed to reach."""
    # matplotlib and numba: only when a page draws a curve
    from pycert.analysis.cachesim import stack_distances
    from pycert.analysis.plot import hit_rate_figure, trace_curves
    from pycert.analysis.requests import ref_tokens, reuse_token_counts
    from pycert.data.traces import read_trace

    trace = read_trace(trace_path, fmt or "auto", block_tokens, sort)
    if trace.sha256 != sha256:
        raise Rejected(Rejection.mismatch(f"inputs[{label}].sha256", trace.sha256, sha256))
    lru, opt = trace_curves(trace)
    png = hit_rate_figure(lru, opt, f"{label} (sha256 {sha256[:12]}, {trace.n_refs:,} refs)", proved,
                          block_tokens=trace.block_tokens, admission=admission, observed=observed)
    print_ = fingerprint(trace.refs)
    if (weights := ref_tokens(trace)) is None:
        return Curve(png=png, lru=lru, block_tokens=trace.block_tokens, fingerprint=print_)
    d = stack_distances(trace.refs)

    def lru_tokens(c: int) -> int:
        return weights.hit((d >= 1) & (d <= c))
    reused = reuse_token_counts(trace)
    return Curve(png=png, lru=lru, block_tokens=trace.block_tokens, lru_tokens=lru_tokens, prompt_tokens=weights.total,
                 reused_tokens=None if reused is None else reused[0], fingerprint=print_)


def fingerprint(refs: Sequence[int]) -> str:
    """sha256 of a list of block references with each block numbered by its first use: two readings whose
    references are one sequence (the same requests, whatever the layout named the blocks) have one fingerprint."""
    import numpy as np  # numpy: only when a page draws a curve, as above

    arr = np.asarray(refs, dtype=np.int64)
    _, first, inverse = np.unique(arr, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int64)
    return hashlib.sha256(rank[inverse.reshape(-1)].astype("<i8").tobytes()).hexdigest()
