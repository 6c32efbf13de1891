"""What the report page (:mod:`pycert.certify.report`) draws and tabulates outside its cards: the trace
engine's hit-rate figure of one trace, and a certificate section's plain tables. Every string from a
certificate is escaped (:func:`escape`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

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
              observed: Sequence[tuple[int, int]] = ()) -> Curve:
    """The trace engine's hit-rate figure for one trace (LRU and Belady at every capacity, the ceiling),
    read as its certificate's parameters say (``fmt``, ``block_tokens``), with the ``(capacity, hits)``
    that capacity certificates of the page prove marked on it (with ``admission``, capacity -> the optimum
    with bypass, in their labels), and the ``(capacity, hits)`` engines were observed to reach."""
    # matplotlib and numba: only when a page draws a curve
    from pycert.analysis.cachesim import stack_distances
    from pycert.analysis.plot import hit_rate_figure, trace_curves
    from pycert.analysis.requests import ref_tokens, reuse_tokens
    from pycert.data.traces import read_trace

    trace = read_trace(trace_path, fmt or "auto", block_tokens)
    if trace.sha256 != sha256:
        raise Rejected(Rejection.mismatch(f"inputs[{label}].sha256", trace.sha256, sha256))
    lru, opt = trace_curves(trace)
    png = hit_rate_figure(lru, opt, f"{label} (sha256 {sha256[:12]}, {trace.n_refs:,} refs)", proved,
                          block_tokens=trace.block_tokens, admission=admission, observed=observed)
    if (weights := ref_tokens(trace)) is None:
        return Curve(png=png, lru=lru, block_tokens=trace.block_tokens)
    d = stack_distances(trace.refs)

    def lru_tokens(c: int) -> Fraction:
        return Fraction(weights.hit((d >= 1) & (d <= c)), weights.total)
    return Curve(png=png, lru=lru, block_tokens=trace.block_tokens, lru_tokens=lru_tokens,
                 ceiling_tokens=reuse_tokens(trace))
