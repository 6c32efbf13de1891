"""A fleet's figure on the report page: where the hits went (a waterfall per routing: the workload's reuse, the
pooled optimum, the routed optimum, the engine), and the hit rate against the number of hosts at one per-host
capacity (the pooled bound, each routing's optimum, each engine's hits). Pure: numbers in, PNG bytes out; which
numbers are kernel-checked and which observed is the caller's to say (the legend names each)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI or servers

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import PercentFormatter  # noqa: E402


@dataclass(frozen=True)
class Step:
    """One routing's waterfall at one fleet size: each figure in hits (None where the certificate has none)."""

    routing: str
    refs: int
    workload: int | None
    pooled: int
    routed: int
    engine: int | None


def fleet_figure(title: str, steps: Sequence[Step], by_hosts: Mapping[str, Sequence[tuple[int, float]]],
                 capacity: int, hosts: int) -> bytes:
    """PNG of the two panels: ``steps`` (one waterfall per routing, at ``hosts`` hosts of ``capacity`` blocks) and
    ``by_hosts`` (series name -> (hosts, hit rate in %) points, at ``capacity`` blocks a host)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6), dpi=110)
    stages = ["workload (any size)", f"pooled ({hosts * capacity:,} blocks)", "routed (best per host)", "engine"]
    width = 0.8 / max(1, len(steps))
    for k, s in enumerate(steps):
        values = [s.workload, s.pooled, s.routed, s.engine]
        xs = [i + (k - (len(steps) - 1) / 2) * width for i in range(len(stages))]
        shown = [(x, 100 * v / s.refs) for x, v in zip(xs, values) if v is not None]
        bars = left.bar([x for x, _ in shown], [y for _, y in shown], width * 0.95, label=s.routing)
        for bar, (_, y) in zip(bars, shown):
            left.annotate(f"{y:.1f}%", (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom", fontsize=6)
    left.set_xticks(range(len(stages)), stages, fontsize=7)
    left.set_ylabel("hit rate (% of block references)")
    left.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    left.set_title(f"where the hits went: {hosts} hosts of {capacity:,} blocks", fontsize=9, parse_math=False)
    left.legend(fontsize=7, frameon=False)
    left.grid(True, axis="y", alpha=0.3)
    for name, points in by_hosts.items():
        pts = sorted(points)
        style = "--" if name.startswith("pooled") else ":" if name.startswith("engine") else "-"
        right.plot([h for h, _ in pts], [r for _, r in pts], style, marker="o", ms=3, label=name)
    right.set_xscale("log", base=2)
    right.set_xlabel(f"hosts ({capacity:,} blocks each)")
    right.set_ylabel("hit rate (% of block references)")
    right.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    right.set_title("hit rate against hosts", fontsize=9)
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=6, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue()
