"""What a trace's certificates add to their sections of the report page (:mod:`pycert.certify.report`):
the trace engine's hit-rate figure, a capacity certificate's headrooms in blocks and in tokens, and an
engine certificate's observed hits beside the optimum at its capacity. Every string from a certificate
is escaped (:func:`escape`)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from pycert.core.errors import Rejected, Rejection
from pycert.core.gate import Source
from pycert.core.schema import Certificate
from pycert.families.engine.beside import beside, trace_of

if TYPE_CHECKING:  # numpy: the page imports the trace engine only when it draws a curve
    from pycert.analysis.cachesim import HitCurve


def escape(text: object) -> str:
    return html.escape(str(text), quote=True)


def table(rows: list[tuple[object, ...]], headers: tuple[str, ...]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


@dataclass(frozen=True)
class Curve:
    """One trace's figure for the page, and what its capacity certificates' headroom lines need."""

    png: bytes
    lru: HitCurve
    """The trace's LRU hit counts at every capacity, with its reference and distinct counts."""
    lru_tokens: Callable[[int], Fraction] | None = None
    """LRU's hit rate in tokens at a capacity (a partial block never reused); None: no prompt lengths."""
    ceiling_tokens: Fraction | None = None


def curve_png(trace_path: Source, sha256: str, label: str, proved: Sequence[tuple[int, int]] = (),
              fmt: str | None = None, block_tokens: int | None = None) -> Curve:
    """The trace engine's hit-rate figure for one trace (LRU and Belady at every capacity, the ceiling),
    read as its certificate's parameters say (``fmt``, ``block_tokens``), with the ``(capacity, hits)``
    that capacity certificates of the page prove marked on it."""
    # matplotlib and numba: only when a page draws a curve
    from pycert.analysis.cachesim import stack_distances
    from pycert.analysis.plot import hit_rate_png, trace_curves
    from pycert.analysis.requests import ref_tokens, reuse_tokens
    from pycert.data.traces import read_trace

    trace = read_trace(trace_path, fmt or "auto", block_tokens)
    if trace.sha256 != sha256:
        raise Rejected(Rejection.mismatch(f"inputs[{label}].sha256", trace.sha256, sha256))
    lru, opt = trace_curves(trace)
    png = hit_rate_png(lru, opt, f"{label} (sha256 {sha256[:12]}, {trace.n_refs:,} refs)", proved)
    if (weights := ref_tokens(trace)) is None:
        return Curve(png=png, lru=lru)
    d, (tokens, full) = stack_distances(trace.refs), weights

    def lru_tokens(c: int) -> Fraction:
        return Fraction(int(tokens[(d >= 1) & (d <= c) & full].sum()), int(tokens.sum()))
    return Curve(png=png, lru=lru, lru_tokens=lru_tokens, ceiling_tokens=reuse_tokens(trace))


def headroom(cert: Certificate, curve: Curve, ceilings: dict[str, tuple[int, str]]) -> str:
    """A capacity certificate's two headrooms at its capacity: what a better eviction policy can still win
    (OPT(C) - LRU(C)) and what only an extra tier can win (ceiling - OPT(C)), each figure with how it
    is known. ``ceilings``: trace sha256 -> (max hits, certificate id) of a ceiling certificate on the page."""
    figs = {f.name: f.numerator for f in cert.figures if f.denominator == 1}
    [trace] = [i for i in cert.inputs if i.role == "trace"]
    c, opt, n = figs["capacity_blocks"], figs["max_hits"], curve.lru.refs
    lru = curve.lru.hits(c)
    ceiling, by = ceilings.get(trace.sha256, (n - curve.lru.distinct, ""))
    known = (f"kernel-checked in <a href=\"#cert-{escape(by)}\">{escape(by)}</a>" if by
             else "computed by pycert's trace engine: no ceiling certificate of this trace verified for this page")

    both = any(f.name == "belady_hits" and f.evidence == "kernel-checked" for f in cert.figures)
    how = ("this certificate's kernel-checked optimum for caches that admit every missed block: none hits more, and "
           "one hits exactly that" if both else "this certificate's kernel-checked bound, attained as computed")

    def pct(hits: int | Fraction) -> str:
        return f"{float(100 * hits / n):.2f}%"

    admitted = (f" With admission control (a missed block may be left out) the optimum is {figs['admission_hits']:,} "
                f"({pct(figs['admission_hits'])}, kernel-checked both ways"
                + (", reached by a prefix cache" if "prefix_cache_hits" in figs else "") + ")."
                if "admission_hits" in figs else "")
    return (f"<p><strong>Headroom at {c:,} blocks.</strong> LRU {lru:,} hits ({pct(lru)}, computed by pycert's "
            f"trace engine); Belady's MIN {opt:,} ({pct(opt)}, {how}); the capacity-free ceiling {ceiling:,} "
            f"({pct(ceiling)}, {known}). A better eviction "
            f"policy can win at most <strong>{100 * (opt - lru) / n:.2f} points</strong> (OPT - LRU); only an extra "
            f"tier can win the other <strong>{100 * (ceiling - opt) / n:.2f}</strong> (ceiling - OPT).{admitted}</p>"
            + in_tokens(cert, curve, c))


def in_tokens(cert: Certificate, curve: Curve, c: int) -> str:
    """The same headroom in tokens, the unit vLLM and SGLang report (every figure computed or derived)."""
    rates = {f.name: Fraction(f.numerator, f.denominator) for f in cert.figures}
    if curve.lru_tokens is None or "ceiling_tokens" not in rates:
        return ""

    def pct(rate: Fraction) -> str:
        return f"{float(100 * rate):.2f}%"

    bounds = f"at most {pct(rates['ceiling_tokens'])} for caches that admit every missed block" + (
        f" and {pct(rates['admission_ceiling_tokens'])} with admission control" if "admission_ceiling_tokens" in rates
        else "")
    reached = (f"; the prefix cache reaching the optimum hits {pct(rates['prefix_cache_hit_rate_tokens'])} (the "
               "kernel-checked witness's full blocks, computed)" if "prefix_cache_hit_rate_tokens" in rates else "")
    ceiling = f"; the capacity-free ceiling {pct(curve.ceiling_tokens)} (computed)" if curve.ceiling_tokens else ""
    return (f"<p><strong>In tokens</strong> (vLLM and SGLang report hit rates in tokens; a request's partial last "
            f"block is never reused): LRU {pct(curve.lru_tokens(c))} (computed); {bounds} (block_tokens × the "
            f"kernel-checked block bounds, derived){reached}{ceiling}.</p>")


def engine_beside(cert: Certificate, certs: Sequence[Certificate], not_verified: dict[str, str]) -> str:
    """An engine certificate's hits beside LRU, the optimum and the ceiling at its capacity, each figure
    from a certificate of the page that verified (a capacity certificate of the same trace at the same
    capacity for the optimum and the sentence, a ceiling certificate for the ceiling), else as the engine
    certificate computes it; one above the optimum is refused (:func:`beside`)."""
    sha = trace_of(cert)[1]
    mine = [c for c in certs if c.id not in not_verified and any(i.role == "trace" and i.sha256 == sha for i in c.inputs)]
    capacity = next((c for c in mine if c.family == "capacity"
                     and c.parameters.capacity_blocks == cert.parameters.num_blocks), None)  # type: ignore[attr-defined]
    s = beside(cert, capacity, next((c for c in mine if c.family == "ceiling"), None))
    return (f"<p><strong>At {s.capacity_blocks:,} blocks.</strong> {escape(s.said())}</p>"
            + table([tuple(escape(c) for c in r) for r in s.rows()], ("cache", "hits", "hit rate", "tokens", "known by")))
