"""The hit-rate figure of a trace: LRU and Belady/MIN, both exact at every capacity, the ceiling
(1 - cold-miss floor) as a horizontal line, and the capacities a certificate proves the optimum at as
marked, labelled points on the Belady line. Capacity in blocks (and in tokens, on a second axis, when
the block size is known), hit rate in % of references. PNG, SVG or PDF, as the caller names it."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI or servers

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402
from matplotlib.ticker import EngFormatter, PercentFormatter  # noqa: E402

from pycert.analysis.cachesim import HitCurve, lru_hit_curve  # noqa: E402
from pycert.data.traces import Trace  # noqa: E402

FORMATS = ("png", "svg", "pdf")
"""What a figure can be written as; the file's suffix picks one."""
_NO_DATE = {"png": {}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}
"""Metadata that would make two drawings of the same figure differ (matplotlib stamps SVG and PDF)."""


def log_capacities(largest: int, points: int) -> list[int]:
    """About ``points`` distinct capacities from 1 to ``largest``, evenly spaced on a log scale."""
    if largest < 1 or points < 1:
        return []
    return sorted({int(round(c)) for c in np.geomspace(1, largest, num=points)})


def _rates(curve: HitCurve, caps: np.ndarray) -> np.ndarray:
    return 100 * curve.hits_at[np.minimum(caps, curve.max_distance)] / curve.refs


def hit_rate_figure(curve: HitCurve, opt: HitCurve, title: str, proved: Sequence[tuple[int, int]] = (),
                    fmt: str = "png", block_tokens: int | None = None, admission: Mapping[int, int] | None = None,
                    observed: Sequence[tuple[int, int]] = ()) -> bytes:
    """The figure's bytes in ``fmt``: the LRU curve ``curve``, the Belady/MIN curve ``opt``, and each
    ``(capacity, hits)`` of ``proved`` (the kernel-checked optimum at that capacity for caches that store
    every miss) as a labelled point, its label giving ``admission[capacity]`` too (the optimum with
    bypass) where that is certified; each of ``observed`` (an engine's own hits at a capacity,
    measured) as a point of another shape."""
    if fmt not in FORMATS:
        raise ValueError(f"a figure is one of {', '.join(FORMATS)}, not {fmt!r}")
    ceiling = 100 * (curve.refs - curve.distinct) / curve.refs
    right = max(curve.max_distance, opt.max_distance, *(c for c, _ in (*proved, *observed)), 2)
    caps = np.arange(1, right + 1)
    fig, ax = plt.subplots(figsize=(8, 5.4), dpi=120)
    ax.step(caps, _rates(curve, caps), where="post", label="LRU (exact, every capacity)", color="tab:blue")
    ax.step(caps, _rates(opt, caps), where="post", color="tab:orange",
            label="Belady's MIN: the best of any cache that stores every miss (exact)")
    ax.axhline(ceiling, color="tab:red", ls="--", label=f"the ceiling, the best at any size: {ceiling:.2f}% (1 - distinct/refs)")
    if proved:
        ax.scatter([c for c, _ in proved], [100 * h / curve.refs for _, h in proved], marker="D", s=36, zorder=3,
                   color="black", label="the optimum at C blocks, storing every miss (kernel-checked)")
        for c, h in proved:
            also = "" if c not in (admission or {}) else \
                f"\noptimum with bypass {admission[c]:,} ({100 * admission[c] / curve.refs:.2f}%)"
            ax.annotate(f"{c:,} blocks: {h:,} hits ({100 * h / curve.refs:.2f}%){also}", (c, 100 * h / curve.refs),
                        textcoords="offset points", xytext=(6, -12), fontsize=7, va="top")
    if observed:
        ax.scatter([c for c, _ in observed], [100 * h / curve.refs for _, h in observed], marker="X", s=48, zorder=3,
                   color="tab:green", label="an engine's own hits (measured, not kernel-checked)")
        for c, h in observed:
            ax.annotate(f"engine: {h:,} hits ({100 * h / curve.refs:.2f}%)", (c, 100 * h / curve.refs),
                        textcoords="offset points", xytext=(6, 4), fontsize=7, color="tab:green")
    ax.set_xscale("log")
    ax.set_xlim(1, right)
    ax.set_ylim(0, min(100.0, ceiling * 1.1 + 2))
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    ax.set_xlabel("cache capacity (blocks" + (f" of {block_tokens:,} tokens)" if block_tokens else ")"))
    ax.set_ylabel("hit rate (% of block references)")
    if block_tokens:
        top = ax.secondary_xaxis("top", functions=(lambda b: b * block_tokens, lambda t: t / block_tokens))
        top.xaxis.set_major_formatter(EngFormatter(sep=""))
        top.set_xlabel("cache capacity (tokens)", fontsize=8)
    ax.set_title(title, fontsize=10, parse_math=False)  # a trace named "t$x^^y$" is text, not mathtext
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=8, frameon=False)  # never over data
    fig.tight_layout()
    out = io.BytesIO()
    with plt.rc_context({"svg.hashsalt": "pycert"}):  # SVG element ids are random unless salted
        fig.savefig(out, format=fmt, metadata=_NO_DATE[fmt])
    plt.close(fig)
    return out.getvalue()


def trace_curves(trace: Trace) -> tuple[HitCurve, HitCurve]:
    """``trace``'s exact LRU and Belady/MIN (OPT) hit counts at every capacity."""
    from pycert.analysis.optcurve import (
        opt_hit_curve,  # numba loads only when a curve is wanted
    )

    return lru_hit_curve(trace.refs), opt_hit_curve(trace.refs)
