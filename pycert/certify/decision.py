"""The report page's first screen: per traffic, one table by cache size, the decision a reader came for.

Each row is a cache size a certificate of the trace speaks of; each column a cache, in prompt tokens first
(the unit vLLM and SGLang report) and then in block references (what the kernel checks): what LRU gets (and
a real engine, where one was replayed), the best any cache of that size can get (the optimum with bypass),
the ceiling (the best at any size) and what a per-tenant salt costs. Every value is a :class:`Value`: the
count and the total it is a share of, in their unit, and how it is known (:data:`pycert.certify.card.KINDS`),
so the page styles proven figures apart from computed ones and ``pycert report --csv`` writes the same table
cell by cell. Only certificates that verified lend a value (:class:`pycert.certify.cards.TraceFacts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from pycert.certify.card import escape, pct
from pycert.certify.cards import ENGINE, TraceFacts, admitted, figures, stored
from pycert.core.schema import Certificate

TOKENS, BLOCKS = "prompt tokens", "block references"


@dataclass(frozen=True)
class Value:
    """One cell: ``count`` of ``total`` in ``unit`` (``bound``: "at most"), how it is known, from where."""

    count: int
    total: int
    unit: str
    kind: str
    how: str
    bound: bool = False

    @property
    def share(self) -> Fraction:
        return Fraction(self.count, self.total)

    def shown(self) -> str:
        return f"{'≤ ' if self.bound else ''}{pct(self.share)}"

    def said(self) -> str:
        """The value in words: the count and the total in their unit, and how it is known."""
        hits = "hits of" if self.unit == BLOCKS else "of"
        return f"{'at most ' if self.bound else ''}{self.count:,} {hits} {self.total:,} {self.unit}; {self.how}"


@dataclass(frozen=True)
class Missing:
    """A cell with no value, and why."""

    why: str


Entry = Value | Missing


@dataclass(frozen=True)
class SaltCost:
    """What a per-tenant salt costs at a size: hits of the optimum with bypass lost (kernel-checked)."""

    lost: int
    shared: int
    tenants: str
    certificate: str

    def shown(self) -> str:
        return f"{self.lost:,} hits" + (f" ({pct(Fraction(self.lost, self.shared))})" if self.shared else "")

    def said(self) -> str:
        return (f"{self.lost:,} of the {self.shared:,} hits of the best shared cache with bypass ({self.tenants}): "
                f"every salted cache of this size hits at least that many fewer; kernel-checked in {self.certificate}")


COLUMNS = ("LRU gets", "the engine gets", "the best any cache can (optimum with bypass)", "the ceiling (any size)")
"""The caches of a row, in each unit; the engine's column only where a trace has an engine certificate."""


@dataclass(frozen=True)
class Row:
    blocks: int | None
    """The cache size; None: no size is certified, and the row gives what is known at any size (the ceiling)."""
    tokens: int | None
    cells: dict[tuple[str, str], Entry]
    """(column, unit) -> the cell."""
    salt: SaltCost | Missing | None


@dataclass(frozen=True)
class Decision:
    """One traffic's table: its title and what it is, its rows by cache size."""

    anchor: str
    title: str
    meta: str
    notes: list[str]
    columns: list[str]
    rows: list[Row]
    salts: bool
    units: list[str]
    """The column groups shown: prompt tokens first, left out where the trace gives no token figure at all."""


def _refs_tokens(cert: Certificate) -> int | None:
    f = figures(cert).get("refs_tokens")
    return None if f is None else f.numerator


def _lru(facts: TraceFacts, c: int, unit: str) -> Entry:
    curve = facts.curve
    if curve is not None:
        if unit == BLOCKS:
            return Value(curve.lru.hits(c), curve.lru.refs, BLOCKS, "computed", f"LRU at {c:,} blocks, {ENGINE}")
        if curve.lru_tokens is not None and curve.prompt_tokens:
            return Value(curve.lru_tokens(c), curve.prompt_tokens, TOKENS, "computed",
                         f"LRU at {c:,} blocks, {ENGINE} (a partial block is never reused, as in vLLM)")
        return Missing("the trace gives no prompt lengths")
    for cert, side in facts.beside():
        if side.capacity_blocks == c:  # the engine certificate computed LRU at its own capacity
            if unit == BLOCKS:
                return Value(side.lru_hits, side.refs, BLOCKS, "computed", f"LRU at {c:,} blocks, computed by pycert "
                             f"in {cert.id}")
            if side.lru_tokens is not None and side.refs_tokens:
                return Value(side.lru_tokens, side.refs_tokens, TOKENS, "computed", f"LRU at {c:,} blocks, computed "
                             f"by pycert in {cert.id}")
    return Missing("no curve on this page (--no-curves)")


def _engine(facts: TraceFacts, c: int, unit: str) -> Entry:
    for cert, side in facts.beside():
        if side.capacity_blocks != c:
            continue
        if unit == BLOCKS:
            return Value(side.engine_hits, side.refs, BLOCKS, "observed",
                         f"{getattr(cert.parameters, 'engine', 'the engine')}'s own count, in {cert.id}")
        if side.engine_tokens is not None and side.refs_tokens:
            return Value(side.engine_tokens, side.refs_tokens, TOKENS, "observed",
                         f"the trace's tokens of the blocks the engine served, in {cert.id}")
        return Missing("the trace gives no prompt lengths")
    return Missing(f"no engine certificate of this trace at {c:,} blocks verified")


def _best(facts: TraceFacts, c: int, unit: str) -> Entry:
    cert = facts.capacity.get(c)
    if cert is not None and (ha := admitted(cert)) is not None:
        figs = figures(cert)
        if unit == BLOCKS:
            return Value(ha, figs["refs"].numerator, BLOCKS, "proven", f"the optimum at {c:,} blocks with bypass, "
                         f"kernel-checked both ways in {cert.id}")
        if "bypass_hits_tokens" in figs and (total := _refs_tokens(cert)):
            return Value(figs["bypass_hits_tokens"].numerator, total, TOKENS, "derived",
                         f"block_tokens × the kernel-checked optimum, an upper bound, in {cert.id}", bound=True)
        return Missing("the trace gives no prompt lengths")
    for salt in facts.salts:
        figs = figures(salt)
        if figs["capacity_blocks"].numerator == c:  # the shared optimum with bypass, on the same references
            if unit == BLOCKS:
                return Value(figs["shared_hits"].numerator, figs["refs"].numerator, BLOCKS, "proven",
                             f"the optimum at {c:,} blocks with bypass, kernel-checked both ways in {salt.id}")
            return Missing(f"{salt.id} states no figure in tokens")
    if cert is not None and stored(cert) is not None:
        return Missing(f"{cert.id} certifies the optimum storing every miss only, not with bypass: the best any cache "
                       "can is at least that")
    for _, side in facts.beside():
        if side.capacity_blocks == c and unit == BLOCKS:
            return Value(side.optimum, side.refs, BLOCKS, "computed", side.optimum_known)
    return Missing(f"no capacity or isolation-cost certificate of this trace at {c:,} blocks verified")


def _ceiling(facts: TraceFacts, unit: str) -> Entry:
    cert = facts.ceiling
    if cert is not None:
        figs = figures(cert)
        if unit == BLOCKS:
            return Value(figs["max_hits"].numerator, figs["refs"].numerator, BLOCKS, "proven",
                         f"the ceiling, kernel-checked in {cert.id}")
        if "max_hits_tokens" in figs and (total := _refs_tokens(cert)):
            return Value(figs["max_hits_tokens"].numerator, total, TOKENS, "computed", "the tokens of the references "
                         f"that reuse a full block (a partial block is never reused, as in vLLM), in {cert.id}")
        return Missing("the trace gives no prompt lengths")
    curve = facts.curve
    if curve is None:
        return Missing("no ceiling certificate of this trace verified, and no curve on this page (--no-curves)")
    if unit == BLOCKS:
        return Value(curve.lru.refs - curve.lru.distinct, curve.lru.refs, BLOCKS, "computed",
                     f"1 - distinct/refs, {ENGINE}: no ceiling certificate of this trace verified")
    if curve.reused_tokens is not None and curve.prompt_tokens:
        return Value(curve.reused_tokens, curve.prompt_tokens, TOKENS, "computed",
                     f"the tokens of the references that reuse a full block, {ENGINE}")
    return Missing("the trace gives no prompt lengths")


def _salt(facts: TraceFacts, c: int) -> SaltCost | Missing:
    for salt in facts.salts:
        figs = figures(salt)
        if figs["capacity_blocks"].numerator == c:
            p = salt.parameters
            tenants, rule = getattr(p, "tenants", None), getattr(p, "tenant_rule", None)
            rule = f"prefix:{getattr(p, 'prefix_blocks', None) or 'K'}" if rule == "prefix" else rule
            who = (f"{tenants:,} tenants" if tenants else "its tenants") + (f", rule {rule}" if rule else "")
            shared = figs["shared_hits"].numerator
            return SaltCost(shared - figs["salted_hits"].numerator, shared, who, salt.id)
    return Missing(f"no isolation-cost certificate of this trace at {c:,} blocks verified")


def sizes(facts: TraceFacts) -> list[int]:
    """The cache sizes the trace's verified certificates speak of, smallest first."""
    out = set(facts.capacity) | {side.capacity_blocks for _, side in facts.beside()}
    out |= {figures(s)["capacity_blocks"].numerator for s in facts.salts}
    return sorted(out)


def decision(facts: TraceFacts, anchor: str, notes: Sequence[str] = ()) -> Decision:
    """The table of one traffic (``notes``: lines about how it was read, e.g. two files that are one traffic)."""
    engines = bool(facts.engines)
    columns = [c for c in COLUMNS if engines or c != "the engine gets"]
    rows = []
    for c in sizes(facts):
        cells: dict[tuple[str, str], Entry] = {}
        for unit in (TOKENS, BLOCKS):
            cells[(COLUMNS[0], unit)] = _lru(facts, c, unit)
            if engines:
                cells[(COLUMNS[1], unit)] = _engine(facts, c, unit)
            cells[(COLUMNS[2], unit)] = _best(facts, c, unit)
            cells[(COLUMNS[3], unit)] = _ceiling(facts, unit)
        rows.append(Row(c, None if facts.block_tokens is None else c * facts.block_tokens, cells,
                        _salt(facts, c) if facts.salts else None))
    if not rows:  # no size certified yet (a ceiling alone): the ceiling, and how to ask for a size
        why = Missing("no certificate of this trace at a cache size verified (pycert prove capacity --trace T "
                      "--capacity-blocks C makes one)")
        rows.append(Row(None, None, {(col, unit): _ceiling(facts, unit) if col == COLUMNS[3] else why
                                     for unit in (TOKENS, BLOCKS) for col in columns}, None))
    refs = facts.refs
    fmt = (facts.reading or (None, None))[0]
    meta = ", ".join(x for x in (
        f"{refs:,} block references" if refs else "", f"read as {fmt}" if fmt else "",
        f"{facts.block_tokens:,} tokens a block" if facts.block_tokens else "",
        f"sha256 {facts.sha256[:16]}…") if x)
    units = [u for u in (TOKENS, BLOCKS) if u == BLOCKS or any(isinstance(r.cells[(col, u)], Value)
                                                                for r in rows for col in columns)]
    notes = list(notes) + ([] if TOKENS in units else ["No figure in prompt tokens: the trace gives no prompt lengths "
                                                       "(or no curve is on this page: --no-curves)."])
    return Decision(anchor=anchor, title=f"Trace {facts.name}", meta=meta, notes=notes, columns=columns, rows=rows,
                    salts=bool(facts.salts), units=units)


# ---------------------------------------------------------------------------- HTML


def _cell_html(cell: Value | SaltCost | Missing | None, rowspan: int = 1) -> str:
    span = f' rowspan="{rowspan}"' if rowspan > 1 else ""
    if cell is None or isinstance(cell, Missing):
        why = "" if cell is None else escape(cell.why)
        return f'<td class="na"{span}><details class="exact"><summary>n/a</summary><span>{why}</span></details></td>'
    kind = cell.kind if isinstance(cell, Value) else "proven"
    return (f'<td class="ev-{kind}"{span}><details class="exact"><summary>{escape(cell.shown())}</summary>'
            f"<span>{escape(cell.said())}</span></details></td>")


def decision_html(d: Decision) -> str:
    """The table: a column group per unit, tokens first; the ceiling, the same at every size, spans the rows."""
    n = len(d.columns)
    groups = {TOKENS: "% of prompt tokens (what vLLM and SGLang report)",
              BLOCKS: "% of block references (what the kernel checks)"}
    head = ('<tr><th rowspan="2">cache size</th>'
            + "".join(f'<th colspan="{n}" class="unit">{groups[u]}</th>' for u in d.units)
            + ('<th rowspan="2">a per-tenant salt costs (hits of the best shared cache)</th>' if d.salts else "")
            + "</tr><tr>" + "".join(f"<th>{escape(c)}</th>" for c in d.columns) * len(d.units) + "</tr>")
    body = []
    for i, r in enumerate(d.rows):
        size = "any size" if r.blocks is None else \
            f"{r.blocks:,} blocks" + (f"<br><small>{r.tokens:,} tokens</small>" if r.tokens is not None else "")
        cells = [f'<th class="size">{size}</th>']
        for unit in d.units:
            for col in d.columns:
                if col == COLUMNS[3]:
                    if i == 0:
                        cells.append(_cell_html(r.cells[(col, unit)], len(d.rows)))
                    continue
                cells.append(_cell_html(r.cells[(col, unit)]))
        if d.salts:
            cells.append(_cell_html(r.salt))
        body.append("<tr>" + "".join(cells) + "</tr>")
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in d.notes)
    table = f'<table class="decision">{head}{"".join(body)}</table>'
    return (f'<section class="decision" id="{escape(d.anchor)}"><h2>{escape(d.title)}</h2>'
            f'<p class="meta">{escape(d.meta)}</p>{notes}{table}</section>')


# ---------------------------------------------------------------------------- CSV

CSV_HEADERS = ("trace", "sha256", "cache_blocks", "cache_tokens", "column", "unit", "percent", "count", "of", "exact",
               "bound", "evidence", "known_by")
"""``pycert report --csv``: one row per cell of the tables, in page order. ``percent`` is a decimal (``count``
over ``of``, times 100, to 6 places); ``exact`` the share as a reduced fraction; ``bound`` "at most" for an upper
bound; ``evidence`` one of :data:`KINDS` (or ``n/a``, with why in ``known_by``)."""


def csv_rows(decisions: Sequence[tuple[TraceFacts, Decision]]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for facts, d in decisions:
        for r in d.rows:
            at = (facts.name, facts.sha256, "" if r.blocks is None else r.blocks, "" if r.tokens is None else r.tokens)
            for unit in d.units:
                for col in d.columns:
                    out.append((*at, col, unit, *_csv_cell(r.cells[(col, unit)])))
            if r.salt is not None:
                out.append((*at, "a per-tenant salt costs", "hits of the best shared cache", *_csv_cell(r.salt)))
    return out


def _csv_cell(cell: Value | SaltCost | Missing) -> tuple[object, ...]:
    if isinstance(cell, Missing):
        return ("", "", "", "", "", "n/a", cell.why)
    if isinstance(cell, SaltCost):
        share = Fraction(cell.lost, cell.shared) if cell.shared else Fraction(0)
        return (f"{float(100 * share):.6f}", cell.lost, cell.shared, f"{share.numerator}/{share.denominator}", "",
                "proven", cell.said())
    share = cell.share
    return (f"{float(100 * share):.6f}", cell.count, cell.total, f"{share.numerator}/{share.denominator}",
            "at most" if cell.bound else "", cell.kind, cell.how)
