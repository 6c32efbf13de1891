"""A trace's fleet card on the report page: its fleet certificates that verified (``pycert prove fleet``), as a
table of waterfalls (the workload's reuse, the pooled optimum, the routed optimum, the engine's hits, and the
losses between them) and one figure (:func:`pycert.analysis.fleet_plot.fleet_figure`: the waterfall of each
routing at one fleet size, and the hit rate against the number of hosts at one per-host capacity). Its own
module so that the trace card's layout and the fleet's can change apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

from pycert.certify.card import Card, Cell, Table, pct
from pycert.core.console import plural
from pycert.core.schema import Certificate, Figure


def _figs(cert: Certificate) -> dict[str, Figure]:
    return {f.name: f for f in cert.figures}


def _hits(cert: Certificate, name: str) -> int | None:
    f = _figs(cert).get(name)
    return None if f is None else f.value.numerator


def _cell(cert: Certificate, name: str) -> Cell:
    f = _figs(cert).get(name)
    if f is None:
        return Cell("-", "not in this certificate")
    refs = _figs(cert)["refs"].value
    return Cell(f"{f.value.numerator:,} ({pct(Fraction(f.value) / refs)})", f"{f.value}; {f.evidence}: {f.known_by}")


def _loss(cert: Certificate, name: str) -> Cell:
    f = _figs(cert).get(name)
    return Cell("-", "not in this certificate") if f is None else Cell(f"{f.value.numerator:,}", f"{f.value}; {f.known_by}")


def fleet_table(certs: Sequence[Certificate]) -> Table:
    rows = []
    for c in sorted(certs, key=lambda c: (c.parameters.capacity_blocks, c.parameters.hosts, c.parameters.routing)):  # type: ignore[attr-defined]
        p = c.parameters
        engine = "-" if p.engine is None else f"{p.engine.engine} ({p.engine.engine_version})"  # type: ignore[attr-defined]
        rows.append([Cell(f"{p.hosts} x {p.capacity_blocks:,}", c.id), Cell(p.routing, c.id),  # type: ignore[attr-defined]
                     _cell(c, "workload_hits"), _cell(c, "pooled_hits"), _cell(c, "routed_hits"),
                     Cell(engine, "the engine each host's sub-trace was replayed on"), _cell(c, "engine_hits"),
                     _loss(c, "capacity_loss"), _loss(c, "routing_loss"), _loss(c, "eviction_loss")])
    return Table("A fleet behind its router: where the hits went (hits in block references; kernel-checked but for the "
                 "engine's, observed)", ["fleet (hosts x blocks)", "routing (rule)", "workload (hits, any size)",
                                         "pooled optimum (hits, H·C blocks)", "routed optimum (hits)", "engine (name)",
                                         "engine (hits)", "capacity loss (hits)", "routing loss (hits)",
                                         "eviction loss (hits)"], rows)


def chosen_size(certs: Sequence[Certificate]) -> tuple[int, int]:
    """The fleet size the waterfall shows: the (hosts, capacity) with the most routings, the most hosts on a tie."""
    sizes = Counter((c.parameters.hosts, c.parameters.capacity_blocks) for c in certs)  # type: ignore[attr-defined]
    return max(sizes, key=lambda hc: (sizes[hc], hc[0], hc[1]))


def fleet_png(name: str, certs: Sequence[Certificate]) -> bytes:
    """The fleet figure of a trace's verified fleet certificates."""
    from pycert.analysis.fleet_plot import Step, fleet_figure  # matplotlib: only when a page draws a fleet

    hosts, capacity = chosen_size(certs)
    steps = [Step(routing=c.parameters.routing, refs=_hits(c, "refs") or 1, workload=_hits(c, "workload_hits"),  # type: ignore[attr-defined]
                  pooled=_hits(c, "pooled_hits") or 0, routed=_hits(c, "routed_hits") or 0, engine=_hits(c, "engine_hits"))
             for c in certs if (c.parameters.hosts, c.parameters.capacity_blocks) == (hosts, capacity)]  # type: ignore[attr-defined]
    series: dict[str, dict[int, float]] = {}
    for c in certs:
        p = c.parameters
        if p.capacity_blocks != capacity:  # type: ignore[attr-defined]
            continue
        refs = _hits(c, "refs") or 1
        h = p.hosts  # type: ignore[attr-defined]
        series.setdefault("pooled optimum (kernel-checked)", {})[h] = 100 * (_hits(c, "pooled_hits") or 0) / refs
        series.setdefault(f"{p.routing}: routed optimum (kernel-checked)", {})[h] = 100 * (_hits(c, "routed_hits") or 0) / refs  # type: ignore[attr-defined]
        if (e := _hits(c, "engine_hits")) is not None:
            series.setdefault(f"{p.routing}: engine (observed)", {})[h] = 100 * e / refs  # type: ignore[attr-defined]
    return fleet_figure(f"{name}: a fleet behind its router", steps,
                        {k: sorted(v.items()) for k, v in series.items()}, capacity, hosts)


def fleet_card(name: str, anchor: str, certs: Sequence[Certificate], unverified: dict[str, str],
               figure: bool = True) -> Card:
    """The card of a trace's fleet certificates (those that verified lend figures; the others are named, with why)."""
    sentence = (max(certs, key=lambda c: (c.parameters.hosts, c.parameters.routing)).claim if certs else  # type: ignore[attr-defined]
                "No fleet certificate of this trace verified when this page was made.")
    hosts, capacity = chosen_size(certs) if certs else (0, 0)
    return Card(anchor=anchor, title=f"Trace {name}: a fleet behind its router", meta=f"{len(certs)} fleet certificates", sentence=sentence,
                tables=[fleet_table(certs)], figure=fleet_png(name, certs) if certs and figure else None,
                figure_alt=f"Where the hits went at {plural(hosts, 'host')} of {capacity:,} blocks, per routing, and the hit rate "
                           f"against hosts at {capacity:,} blocks a host" if certs else "",
                certificates=[c.id for c in certs], unverified=unverified)


def fleet_cards(certs: Sequence[Certificate], not_verified: dict[str, str], figure: bool = True) -> dict[str, Card]:
    """One card per trace that fleet certificates name, by the trace's sha256 (the page puts it under that trace's
    own card): those that verified lend figures, the others are named with why."""
    by_trace: dict[str, tuple[str, list[Certificate], dict[str, str]]] = {}
    for cert in (c for c in certs if c.family == "fleet"):
        trace = next(i for i in cert.inputs if i.role == "trace")
        name, good, bad = by_trace.setdefault(trace.sha256, (trace.path, [], {}))
        if cert.id in not_verified:
            bad[cert.id] = not_verified[cert.id]
        else:
            good.append(cert)
    return {sha: fleet_card(name, f"fleet-{n}", good, bad, figure)
            for n, (sha, (name, good, bad)) in enumerate(by_trace.items(), 1)}
