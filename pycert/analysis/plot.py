"""PNG of hit rate against capacity: LRU and Belady/MIN, both exact at every capacity, the ceiling
(1 - cold-miss floor) as a horizontal line, and the capacities whose ceiling a certificate proves as
marked points on the Belady line."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI or servers

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402

from pycert.analysis.cachesim import HitCurve, lru_hit_curve  # noqa: E402
from pycert.data.traces import Trace  # noqa: E402


def log_capacities(largest: int, points: int) -> list[int]:
    """About ``points`` distinct capacities from 1 to ``largest``, evenly spaced on a log scale."""
    if largest < 1 or points < 1:
        return []
    return sorted({int(round(c)) for c in np.geomspace(1, largest, num=points)})


def _rates(curve: HitCurve, caps: np.ndarray) -> np.ndarray:
    return curve.hits_at[np.minimum(caps, curve.max_distance)] / curve.refs


def plot_hit_rates(path: Path, curve: HitCurve, opt: HitCurve | None, title: str,
                   proved: Sequence[tuple[int, int]] = ()) -> Path:
    """Write the figure to ``path``: the LRU curve ``curve`` and the Belady/MIN curve ``opt``, and each
    ``(capacity, hits)`` of ``proved`` (the kernel-checked ceiling at that capacity) as a marked point."""
    ceiling = (curve.refs - curve.distinct) / curve.refs
    right = max(curve.max_distance, 0 if opt is None else opt.max_distance, 2)
    caps = np.arange(1, right + 1)
    fig, ax = plt.subplots(figsize=(8, 5.4), dpi=120)
    ax.step(caps, _rates(curve, caps), where="post", label="LRU (exact, every capacity)", color="tab:blue")
    if opt is not None:
        ax.step(caps, _rates(opt, caps), where="post", color="tab:orange",
                label="Belady/MIN (exact, every capacity; demand paging)")
    ax.axhline(ceiling, color="tab:red", ls="--", label=f"ceiling 1 - distinct/refs = {ceiling:.4f}")
    if proved:
        ax.scatter([c for c, _ in proved], [h / curve.refs for _, h in proved], marker="D", s=36, zorder=3,
                   color="black", label="ceiling at a capacity, kernel-checked (capacity certificates)")
    ax.set_xscale("log")
    ax.set_xlim(1, right)
    ax.set_ylim(0, min(1.0, ceiling * 1.1 + 0.02))
    ax.set_xlabel("cache capacity (blocks)")
    ax.set_ylabel("hit rate")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=8, frameon=False)  # never over data
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def trace_curves(trace: Trace) -> tuple[HitCurve, HitCurve]:
    """``trace``'s exact LRU and Belady/MIN (OPT) hit counts at every capacity."""
    from pycert.analysis.optcurve import (
        opt_hit_curve,  # numba loads only when a curve is wanted
    )

    return lru_hit_curve(trace.refs), opt_hit_curve(trace.refs)


def hit_rate_png(curve: HitCurve, opt: HitCurve, title: str, proved: Sequence[tuple[int, int]] = ()) -> bytes:
    """The figure as PNG bytes (what ``trace plot`` writes and the report page shows), drawn aside for
    the caller's atomic write."""
    with tempfile.TemporaryDirectory(prefix="pycert-plot-") as scratch:
        return plot_hit_rates(Path(scratch) / "plot.png", curve, opt, title, proved).read_bytes()
