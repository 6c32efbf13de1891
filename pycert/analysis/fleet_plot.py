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
from matplotlib.ticker import PercentFormatter, ScalarFormatter  # noqa: E402


ROUTING_COLOURS = ("tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:orange",
                   "tab:gray")
"""One a routing, none of them the workload's red or the pooled bound's blue."""


def routing_colour(k: int) -> str:
    return ROUTING_COLOURS[k % len(ROUTING_COLOURS)]


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
    first = steps[0]
    bars: list[tuple[str, float, str]] = []  # label, hit rate, colour
    if first.workload is not None:
        bars.append(("workload\n(any size)", 100 * first.workload / first.refs, "tab:red"))
    bars.append((f"pooled\n({hosts * capacity:,} blocks)", 100 * first.pooled / first.refs, "tab:blue"))
    for k, s in enumerate(steps):
        colour = routing_colour(k)
        bars.append((f"routed\n{s.routing}", 100 * s.routed / s.refs, colour))
        if s.engine is not None:
            bars.append((f"engine\n{s.routing}", 100 * s.engine / s.refs, colour))
    drawn = left.bar(range(len(bars)), [y for _, y, _ in bars], 0.7, color=[c for _, _, c in bars])
    for k, (bar, (label, y, _)) in enumerate(zip(drawn, bars)):
        if label.startswith("engine"):  # observed, where every other bar is kernel-checked
            bar.set_hatch("///")
            bar.set_edgecolor("white")
        above = bars[1][1] if label.startswith("routed") else next(
            (b[1] for b in reversed(bars[:k]) if b[0].startswith("routed") and b[0].split("\n")[1] == label.split("\n")[1]),
            bars[0][1] if k == 1 else None) if k else None
        loss = f"\n-{above - y:.1f} pp" if above is not None and label.split("\n")[0] != "workload" else ""
        left.annotate(f"{y:.1f}%{loss}", (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom", fontsize=6)
    left.set_xticks(range(len(bars)), [label.replace("\n", " ") for label, _, _ in bars], fontsize=6, rotation=35,
                    ha="right", rotation_mode="anchor")
    left.set_ylabel("hit rate (% of block references)")
    left.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    left.set_ylim(0, max(y for _, y, _ in bars) * 1.18 + 1)
    left.set_title(f"where the hits went: {hosts} host{'s' if hosts != 1 else ''} of {capacity:,} blocks\n(pp: the loss from the step before; "
                   "hatched: observed, the rest kernel-checked)", fontsize=8, parse_math=False)
    left.grid(True, axis="y", alpha=0.3)
    colours = {s.routing: routing_colour(k) for k, s in enumerate(steps)}
    for name in by_hosts:  # a routing certified at other fleet sizes only
        colours.setdefault(name.split(": ")[0], routing_colour(len(colours)))
    for name, points in by_hosts.items():
        pts = sorted(points)
        routing = name.split(": ")[0]
        style = "--" if name.startswith("pooled") else ":" if name.endswith("(observed)") else "-"
        right.plot([h for h, _ in pts], [r for _, r in pts], style, marker="o", ms=3, label=name,
                   color="tab:blue" if name.startswith("pooled") else colours.get(routing))
    right.set_xscale("log", base=2)
    right.xaxis.set_major_formatter(ScalarFormatter())
    right.set_xticks(sorted({h for pts in by_hosts.values() for h, _ in pts}))
    right.set_ylim(bottom=0)
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
