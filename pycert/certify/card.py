"""A card of the report page as data, then HTML: :class:`Number` tiles and :class:`Table` of :class:`Cell`,
each cell a number rounded for reading with its exact value and how it is known a click away; and the
formats that round (``pct``, ``count``, ``rounded``) and the unit a figure is counted in (``unit_of``).
Which cards a page has, and what is on them, is :mod:`pycert.certify.cards`."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from pycert.core.schema import Figure

HUGE = 10**15
"""Past this an integer is shown as a power of ten (the isolation floor's state count has 2,467 digits)."""
_UNITS = {"refs": "block references", "distinct": "blocks", "distinct_blocks": "blocks", "cuts": "cut points",
          "served": "tokens", "states_floor": "states", "single_owner_states": "states", "underpowered": "yes (1) / no (0)",
          "cross_detected": "yes (1) / no (0)", "smallest_prefix_detected": "tokens", "power": "probability",
          "cross_rate_upper": "% of probes"}
_SUFFIX_UNITS = (("_tokens", "tokens"), ("_blocks", "blocks"), ("_hits", "hits"), ("_misses", "misses"),
                 ("_wall", "misses"), ("_requests", "requests"), ("_bits", "bits"), ("_floor", "bits"),
                 ("_rate", "% of references"), ("_upper", "% of requests"),
                 ("_samples", "probes"), ("_three", "% of requests"))
_RATES = {"ceiling": "% of block references", "cut": "% of the prompt's tokens"}


def escape(text: object) -> str:
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
    """A rate in %: two decimals, three significant digits below 1% (a bound of 0.997% is not "1.00%")."""
    p = 100 * float(value)
    return "0%" if not value else f"{p:.3g}%" if p < 1 else f"{p:.2f}%"


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


KINDS = {
    "proven": "kernel-checked: a Lean proof of this count",
    "derived": "a bound in tokens: the block size × a proven count, not itself proved",
    "computed": "computed by pycert from the trace, not proved",
    "observed": "measured on a real engine, not proved",
}
"""How a value on the page is known, strongest first: each value is styled by its kind, and the legend says
each in these words."""


def legend() -> str:
    """The page's legend: a sample of each kind of value, styled as the values are, and what it means."""
    items = "".join(f'<li><span class="ev ev-{k}">{k}</span> {escape(what)}</li>' for k, what in KINDS.items())
    return f'<ul class="legend" aria-label="how each value on this page is known">{items}</ul>'


@dataclass(frozen=True)
class Cell:
    """One value on a card: ``shown`` rounded for reading, ``exact`` with how it is known (one click away),
    and ``kind``, how it is known in one word (:data:`KINDS`; empty for a label or a value with no evidence)."""

    shown: str
    exact: str = ""
    kind: str = ""

    def html(self) -> str:
        kind = f" ev ev-{self.kind}" if self.kind in KINDS else ""
        if not self.exact:
            return f'<span class="{kind.strip()}">{escape(self.shown)}</span>' if kind else escape(self.shown)
        return (f'<details class="exact{kind}"><summary>{escape(self.shown)}</summary>'
                f"<span>{escape(self.exact)}</span></details>")


@dataclass(frozen=True)
class Number:
    """A headline tile: what the number is, and the number."""

    label: str
    value: Cell


@dataclass(frozen=True)
class Table:
    """A table of a card: what it counts in (its caption), each column's header with its unit, the rows."""

    caption: str
    headers: Sequence[str]
    rows: Sequence[Sequence[Cell]]

    def html(self) -> str:
        head = "".join(f"<th>{escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{c.html()}</td>" for c in r) + "</tr>" for r in self.rows)
        return f'<table class="capacities"><caption>{escape(self.caption)}</caption><tr>{head}</tr>{body}</table>'


NOT_HERE = "trace not here"
"""How verify says a trace from outside the directory is on this machine nowhere it looks."""


def unchecked_label(why: str) -> str:
    """NOT CHECKED for a certificate whose trace is not on the machine that made the page, else NOT VERIFIED."""
    return "NOT CHECKED" if NOT_HERE in why else "NOT VERIFIED"


@dataclass
class Card:
    anchor: str
    title: str
    meta: str
    sentence: str
    numbers: list[Number] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figure: bytes | None = None
    figure_alt: str = ""
    certificates: list[str] = field(default_factory=list)
    unverified: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """Sentences under the tables: what was measured, not proved (an engine's own hits), and what a per-tenant
    salt costs (isolation-cost certificates), each saying how it is known."""

    def html(self) -> str:
        tiles = "".join(f'<div class="tile{" tile-" + n.value.kind if n.value.kind in KINDS else ""}"><div class="big">'
                        f'{n.value.html()}</div><div class="label">{escape(n.label)}</div></div>' for n in self.numbers)
        tables = "".join(t.html() for t in self.tables if t.rows)
        tables += "".join(f'<p class="note">{escape(n)}</p>' for n in self.notes)
        figure = "" if self.figure is None else (
            f'<figure><img alt="{escape(self.figure_alt)}" src="data:image/png;base64,'
            f'{base64.b64encode(self.figure).decode()}"><figcaption>{escape(self.figure_alt)}</figcaption></figure>')
        warn = "".join(f'<p class="unverified"><strong>{unchecked_label(why)}</strong>: <a href="#cert-{escape(c)}">'
                       f"{escape(c)}</a>: {escape(why)}. It lends no figure to this card.</p>"
                       for c, why in self.unverified.items())
        links = ", ".join(f'<a href="#cert-{escape(c)}">{escape(c)}</a>' for c in self.certificates) or "none that verified"
        return (f'<section class="card" id="{escape(self.anchor)}"><h2>{escape(self.title)}</h2>'
                f'<p class="meta">{escape(self.meta)}</p>{warn}<p class="sentence">{escape(self.sentence)}</p>'
                f'<div class="tiles">{tiles}</div>{tables}{figure}<p class="certs">Certificates: {links}</p></section>')
