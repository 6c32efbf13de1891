"""The report page's summary cards: one per trace (its plain sentence, its headline numbers rounded for
reading with the exact value a click away, a table by certified capacity, its one plot), and one per
certificate that names no trace.

A card is data first (:class:`Card`: :class:`Number` tiles and a table of :class:`Cell`), HTML second,
so a new figure slots in as one more builder: a tile builder in :data:`TRACE_NUMBERS`, a column in
:data:`CAPACITY_COLUMNS` (an engine's observed hits at a capacity, say). Only a certificate that verified
lends a figure to a card; one that did not is named on the card with why, and what it would have said is
left to its own section, marked NOT VERIFIED.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from pycert.core.schema import Certificate, Figure

if TYPE_CHECKING:  # numpy: the page imports the trace engine only when it draws a curve
    from pycert.analysis.cachesim import HitCurve

HUGE = 10**15
"""Past this an integer is shown as a power of ten (the isolation floor's state count has 2,467 digits)."""
ENGINE = "computed by pycert's trace engine"
_UNITS = {"refs": "block references", "distinct": "blocks", "distinct_blocks": "blocks", "cuts": "cut points",
          "served": "tokens", "states_floor": "states", "single_owner_states": "states", "underpowered": "yes (1) / no (0)"}
_SUFFIX_UNITS = (("_tokens", "tokens"), ("_blocks", "blocks"), ("_hits", "hits"), ("_misses", "misses"),
                 ("_wall", "misses"), ("_requests", "requests"), ("_bits", "bits"), ("_floor", "bits"),
                 ("_rate", "% of references"), ("_upper", "% of requests"), ("_three", "% of requests"))
_RATES = {"ceiling": "% of block references", "cut": "% of the prompt's tokens"}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def unit_of(f: Figure) -> str:
    """The unit a figure is counted in: the certificate's own, else read off the figure's name."""
    if f.unit:
        return f.unit
    if f.name in _UNITS or f.name in _RATES:
        return _UNITS.get(f.name) or _RATES[f.name]
    if f.name in ("max_hits", "belady_hits"):
        return "hits"
    return next((unit for suffix, unit in _SUFFIX_UNITS if f.name.endswith(suffix)), "")


def pct(value: Fraction) -> str:
    return f"{100 * float(value):.2f}%" if value else "0%"


def count(n: int) -> str:
    """An integer for reading: with separators, or as a power of ten when it is too long to read."""
    if abs(n) < HUGE:
        return f"{n:,}"
    digits = str(abs(n))
    return f"{'-' if n < 0 else ''}≈ {digits[0]}.{digits[1:3]} × 10^{len(digits) - 1:,}"


def rounded(f: Figure) -> str:
    """A figure as a reader wants it: a rate in %, a count with separators, never twenty decimals."""
    value = Fraction(f.numerator, f.denominator)
    if "%" in unit_of(f):
        return pct(value)
    return count(f.numerator) if f.denominator == 1 else f"{float(value):.4g}"


def exact_of(f: Figure) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


@dataclass(frozen=True)
class Cell:
    """One value on a card: ``shown`` rounded for reading, ``exact`` with how it is known (one click away)."""

    shown: str
    exact: str = ""

    def html(self) -> str:
        if not self.exact:
            return _e(self.shown)
        return f'<details class="exact"><summary>{_e(self.shown)}</summary><span>{_e(self.exact)}</span></details>'


@dataclass(frozen=True)
class Number:
    """A headline tile: what the number is, and the number."""

    label: str
    value: Cell


@dataclass
class Card:
    anchor: str
    title: str
    meta: str
    sentence: str
    numbers: list[Number] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    rows: list[list[Cell]] = field(default_factory=list)
    figure: bytes | None = None
    figure_alt: str = ""
    certificates: list[str] = field(default_factory=list)
    unverified: dict[str, str] = field(default_factory=dict)

    def html(self) -> str:
        tiles = "".join(f'<div class="tile"><div class="big">{n.value.html()}</div><div class="label">{_e(n.label)}'
                        "</div></div>" for n in self.numbers)
        table = ""
        if self.rows:
            head = "".join(f"<th>{_e(h)}</th>" for h in self.headers)
            body = "".join("<tr>" + "".join(f"<td>{c.html()}</td>" for c in r) + "</tr>" for r in self.rows)
            table = f'<table class="capacities"><tr>{head}</tr>{body}</table>'
        figure = "" if self.figure is None else (
            f'<figure><img alt="{_e(self.figure_alt)}" src="data:image/png;base64,'
            f'{base64.b64encode(self.figure).decode()}"><figcaption>{_e(self.figure_alt)}</figcaption></figure>')
        warn = "".join(f'<p class="unverified"><strong>NOT VERIFIED</strong>: <a href="#cert-{_e(c)}">{_e(c)}</a>: '
                       f"{_e(why)}. It lends no figure to this card.</p>" for c, why in self.unverified.items())
        links = ", ".join(f'<a href="#cert-{_e(c)}">{_e(c)}</a>' for c in self.certificates) or "none that verified"
        return (f'<section class="card" id="{_e(self.anchor)}"><h2>{_e(self.title)}</h2>'
                f'<p class="meta">{_e(self.meta)}</p>{warn}<p class="sentence">{_e(self.sentence)}</p>'
                f'<div class="tiles">{tiles}</div>{table}{figure}<p class="certs">Certificates: {links}</p></section>')


# ---------------------------------------------------------------------------- trace cards


@dataclass
class TraceFacts:
    """What the page knows of one trace: its verified certificates, and the trace engine's curves."""

    name: str
    sha256: str
    block_tokens: int | None = None
    lru: HitCurve | None = None
    opt: HitCurve | None = None
    png: bytes | None = None
    ceiling: Certificate | None = None
    capacity: dict[int, Certificate] = field(default_factory=dict)
    unverified: dict[str, str] = field(default_factory=dict)

    @property
    def refs(self) -> int | None:
        if self.ceiling is not None:
            return figures(self.ceiling)["refs"].numerator
        if self.capacity:
            return figures(next(iter(self.capacity.values())))["refs"].numerator
        return None if self.lru is None else self.lru.refs

    def best(self) -> tuple[int, str] | None:
        """The most hits any cache gets, and how that is known."""
        if self.ceiling is not None:
            return figures(self.ceiling)["max_hits"].numerator, f"kernel-checked in {self.ceiling.id}"
        if self.lru is not None:
            return self.lru.refs - self.lru.distinct, f"{ENGINE}: no ceiling certificate of this trace verified"
        return None


def figures(cert: Certificate) -> dict[str, Figure]:
    return {f.name: f for f in cert.figures}


def optimum(cert: Certificate) -> bool:
    """Whether a capacity certificate proves its bound attained too (the witness), not the bound alone."""
    belady = figures(cert).get("belady_hits")
    return belady is not None and belady.evidence == "kernel-checked"


def _rate_cell(hits: int, refs: int, how: str, unit: str = "block references") -> Cell:
    value = Fraction(hits, refs)
    return Cell(pct(value), f"{hits:,} hits of {refs:,} {unit} = {value.numerator}/{value.denominator}; {how}")


def _tokens(facts: TraceFacts, blocks: int) -> str:
    return "" if facts.block_tokens is None else f" ({blocks * facts.block_tokens:,} tokens)"


def sentence(facts: TraceFacts) -> str:
    """The card's claim in one plain sentence: no more than the verified certificates' statements say."""
    refs = facts.refs
    parts = []
    if facts.ceiling is not None and refs:
        hits = figures(facts.ceiling)["max_hits"].numerator
        parts.append(f"No cache that loads every block it misses, starting empty, hits more than {pct(Fraction(hits, refs))} "
                     f"of this trace's {refs:,} block references, whatever its size or eviction policy")
    for c, cert in sorted(facts.capacity.items()):
        h = figures(cert)["max_hits"].numerator
        reach = ", and one such cache reaches exactly that" if optimum(cert) else ""
        parts.append(f"with {c:,} blocks{_tokens(facts, c)}, such a cache hits at most {pct(Fraction(h, refs))}{reach}")
    if not parts:
        return ("No certificate of this trace verified: the figures below are computed by pycert's trace engine, "
                "not proved.")
    return "; ".join(parts) + "."


def _best_number(facts: TraceFacts) -> list[Number]:
    best, refs = facts.best(), facts.refs
    return [] if best is None or not refs else [Number("best hit rate at any cache size", _rate_cell(best[0], refs, best[1]))]


def _first_use_number(facts: TraceFacts) -> list[Number]:
    if facts.ceiling is not None:
        distinct, how = figures(facts.ceiling)["distinct"].numerator, f"kernel-checked in {facts.ceiling.id}"
    elif facts.lru is not None:
        distinct, how = facts.lru.distinct, ENGINE
    else:
        return []
    refs = facts.refs
    return [Number("distinct blocks: the first use of each always misses",
                   Cell(f"{distinct:,}", f"{distinct:,} of {refs:,} block references are first uses "
                                         f"({pct(Fraction(distinct, refs))}); {how}"))]


def _capacity_numbers(facts: TraceFacts) -> list[Number]:
    out = []
    for c, cert in sorted(facts.capacity.items()):
        figs, how = figures(cert), ("kernel-checked both ways (no cache does better; one reaches it)"
                                    if optimum(cert) else "kernel-checked upper bound; Belady's MIN reaches it, as computed")
        out.append(Number(f"best hit rate with {c:,} blocks{_tokens(facts, c)}",
                          _rate_cell(figs["max_hits"].numerator, figs["refs"].numerator, f"{how}, in {cert.id}")))
        if "max_hits_tokens" in figs and "refs_tokens" in figs:  # token units, where the certificate has them
            out.append(Number(f"best token hit rate with {c:,} blocks",
                              _rate_cell(figs["max_hits_tokens"].numerator, figs["refs_tokens"].numerator,
                                         f"{figs['max_hits_tokens'].known_by or how}, in {cert.id}", "prompt tokens")))
    return out


TRACE_NUMBERS: list[Callable[[TraceFacts], list[Number]]] = [_best_number, _capacity_numbers, _first_use_number]
"""The tiles of a trace card, in order: each builder gives none, one or more."""


def _capacity_col(facts: TraceFacts, c: int) -> Cell:
    return Cell(f"{c:,}")


def _tokens_col(facts: TraceFacts, c: int) -> Cell:
    return Cell("n/a" if facts.block_tokens is None else f"{c * facts.block_tokens:,}")


def _lru_col(facts: TraceFacts, c: int) -> Cell:
    if facts.lru is None:
        return Cell("n/a", "no curve on this page (--no-curves)")
    return _rate_cell(facts.lru.hits(c), facts.lru.refs, ENGINE)


def _opt_col(facts: TraceFacts, c: int) -> Cell:
    figs = figures(facts.capacity[c])
    return _rate_cell(figs["max_hits"].numerator, figs["refs"].numerator, f"kernel-checked in {facts.capacity[c].id}")


def _policy_col(facts: TraceFacts, c: int) -> Cell:
    if facts.lru is None:
        return Cell("n/a")
    figs = figures(facts.capacity[c])
    gap = Fraction(figs["max_hits"].numerator - facts.lru.hits(c), facts.lru.refs)
    return Cell(f"{100 * float(gap):.2f}", f"best at {c:,} blocks (kernel-checked) - LRU ({ENGINE}) = {gap} of the references")


def _tier_col(facts: TraceFacts, c: int) -> Cell:
    best = facts.best()
    if best is None:
        return Cell("n/a")
    figs = figures(facts.capacity[c])
    gap = Fraction(best[0] - figs["max_hits"].numerator, figs["refs"].numerator)
    return Cell(f"{100 * float(gap):.2f}", f"best at any size ({best[1]}) - best at {c:,} blocks (kernel-checked) = {gap}")


CAPACITY_COLUMNS: list[tuple[str, Callable[[TraceFacts, int], Cell]]] = [
    ("capacity (blocks)", _capacity_col), ("capacity (tokens)", _tokens_col), ("LRU hit rate (%)", _lru_col),
    ("best hit rate (%), certified", _opt_col), ("a better policy can win (points)", _policy_col),
    ("only another tier can win (points)", _tier_col)]
"""The table of a trace card, one row per certified capacity: each column's header (with its unit) and cell."""


def trace_card(facts: TraceFacts, anchor: str) -> Card:
    refs = facts.refs
    meta = f"sha256 {facts.sha256[:16]}…"
    if refs:
        meta = f"{refs:,} block references" + (f" of {facts.block_tokens:,} tokens" if facts.block_tokens else "") + \
            f", {meta}"
    certs = [c.id for c in ([facts.ceiling] if facts.ceiling else []) + [facts.capacity[k] for k in sorted(facts.capacity)]]
    caps = sorted(facts.capacity)
    return Card(anchor=anchor, title=f"Trace {facts.name}", meta=meta, sentence=sentence(facts),
                numbers=[n for build in TRACE_NUMBERS for n in build(facts)],
                headers=[h for h, _ in CAPACITY_COLUMNS] if caps else [],
                rows=[[cell(facts, c) for _, cell in CAPACITY_COLUMNS] for c in caps],
                figure=facts.png, figure_alt=f"Hit rate against cache capacity, {facts.name}: LRU, Belady's MIN, "
                                             "the ceiling and every certified capacity",
                certificates=certs, unverified=facts.unverified)


# ---------------------------------------------------------------------------- certificates without a trace

TITLES = {"isolation": "Isolation floor", "first-touch": "First-touch reuse", "pooling": "Pooled against per-instance "
          "caching", "leak": "Cross-tenant leak on a real engine"}


HEADLINES = {"isolation": ("bits_floor", "single_owner_bits", "states_floor"), "first-touch": ("served", "cut"),
             "pooling": ("pooled_misses", "per_instance_misses", "free_routing_misses", "pooled_hit_rate",
                         "per_instance_hit_rate"),
             "leak": ("unsalted_cross_hits", "keyed_cross_hits", "keyed_own_hits", "attacker_unkeyed_hits",
                      "attacker_keyed_hits", "residual_rate_upper")}
"""The figures a card shows as tiles, per family (the certificate's own section has them all); a family not
named here shows its first eight."""


def certificate_card(cert: Certificate, why_not: str | None) -> Card:
    """The card of a certificate that names no trace: its claim, and its headline figures as tiles with units."""
    figs = figures(cert)
    chosen = [figs[n] for n in HEADLINES[cert.family] if n in figs] if cert.family in HEADLINES else cert.figures[:8]
    tiles = [Number(f"{f.name.replace('_', ' ')} ({unit})" if (unit := unit_of(f)) else f.name.replace("_", " "),
                    Cell(rounded(f), f"{exact_of(f)}; {f.evidence}: {f.known_by}" if f.known_by else exact_of(f)))
             for f in chosen]
    said = cert.claim if why_not is None else "This certificate did not verify when this page was made: what it " \
        "claims is in its own section below, unchecked."
    return Card(anchor=f"card-{cert.id}", title=TITLES.get(cert.family, cert.family), meta=f"certificate {cert.id}",
                sentence=said, numbers=tiles if why_not is None else [],
                certificates=[cert.id] if why_not is None else [],
                unverified={} if why_not is None else {cert.id: why_not})
