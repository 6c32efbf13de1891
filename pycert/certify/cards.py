"""The report page's summary cards: one per trace (its plain sentence, its headline numbers rounded for
reading with the exact value a click away, a table by certified capacity, its one plot), and one per
certificate that names no trace.

A card is data first (:class:`Card`: :class:`Number` tiles and :class:`Table` of :class:`Cell`), HTML
second, so a new figure slots in as one more builder: a tile builder in :data:`TRACE_NUMBERS`, a column in
one of :data:`TRACE_TABLES`, or a table of its own (an engine's own hits beside the certified optimum,
:func:`pycert.certify.engines.engine_table`; the cost of isolation). Only a certificate that verified
lends a figure to a card; one that did not is named on the card with why, and what it would have said is
left to its own section, marked NOT VERIFIED.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from pycert.certify.card import Card, Cell, Number, Table, exact_of, pct, rounded, unit_of
from pycert.core.schema import Certificate, Figure, InputFile
from pycert.certify.engines import engine_table
from pycert.families.engine.beside import Beside, beside
from pycert.families.models import STORE, caches

if TYPE_CHECKING:  # numpy: the page imports the trace engine only when it draws a curve
    from pycert.analysis.cachesim import HitCurve

ENGINE = "computed by pycert's trace engine"


# ---------------------------------------------------------------------------- trace cards


@dataclass(frozen=True)
class Curve:
    """What pycert's trace engine computed of one trace for its card: the plot, and the curves its tables read."""

    png: bytes
    lru: HitCurve
    """The trace's LRU hit counts at every capacity, with its reference and distinct counts."""
    block_tokens: int | None = None
    """Tokens per block, as the trace was read (Mooncake's 512); None: unknown (a trace of bare ids)."""
    lru_tokens: Callable[[int], int] | None = None
    """LRU's hits in tokens at a capacity (a partial block never reused); None: no prompt lengths."""
    prompt_tokens: int | None = None
    """The trace's prompt tokens, the total every figure in tokens is a share of; None: no prompt lengths."""
    reused_tokens: int | None = None
    """The ceiling in tokens: the tokens of the references that reuse a full block."""
    fingerprint: str = ""
    """sha256 of the block references as read, each block numbered by its first use: two readings (of one file
    or of two) with the same fingerprint are one traffic (one card)."""


@dataclass
class TraceFacts:
    """What the page knows of one trace read one way (``reading``: layout, tokens a block, timestamp order; one
    file at two block sizes is two lists of references, two cards): its verified certificates, its curves."""

    name: str
    sha256: str
    reading: tuple[str | None, int | None, bool] | None = None
    source: InputFile | None = None
    """The input that names the trace (where the page finds it to draw its curve)."""
    curve: Curve | None = None
    ceiling: Certificate | None = None
    capacity: dict[int, Certificate] = field(default_factory=dict)
    engines: list[Certificate] = field(default_factory=list)
    salts: list[Certificate] = field(default_factory=list)
    """Isolation-cost certificates of this trace that verified: what a per-tenant salt costs at a capacity."""
    unverified: dict[str, str] = field(default_factory=dict)
    also: list[str] = field(default_factory=list)
    """Other readings of the same file to the same block references, merged into this one (:func:`pycert.certify.traffic.one_traffic`)."""
    notes: list[str] = field(default_factory=list)
    """Lines on how this traffic stands to the page's other cards (:func:`pycert.certify.traffic.one_traffic`)."""

    def reading_words(self) -> str:
        """The trace and how it was read, in words: ``t.jsonl (mooncake, 512 tokens a block)``."""
        fmt, bt, by_time = self.reading or (None, None, False)
        how = ", ".join(x for x in (fmt or "", f"{bt:,} tokens a block" if bt else "", "in timestamp order" if by_time
                                    else "") if x)
        return f"{self.name} ({how})" if how else self.name

    def beside(self) -> list[tuple[Certificate, Beside]]:
        """Each engine certificate's hits beside the optimum at its capacity, from this trace's verified
        capacity and ceiling certificates where there are ones (:func:`beside` refuses an engine above it)."""
        return [(e, beside(e, self.capacity.get(e.parameters.num_blocks), self.ceiling))  # type: ignore[attr-defined]
                for e in self.engines]

    @property
    def block_tokens(self) -> int | None:
        return None if self.curve is None else self.curve.block_tokens

    @property
    def refs(self) -> int | None:
        if self.ceiling is not None:
            return figures(self.ceiling)["refs"].numerator
        if self.capacity:
            return figures(next(iter(self.capacity.values())))["refs"].numerator
        return None if self.curve is None else self.curve.lru.refs

    def best(self) -> tuple[int, str] | None:
        """The most hits any cache gets, and how that is known."""
        if self.ceiling is not None:
            return figures(self.ceiling)["max_hits"].numerator, f"kernel-checked in {self.ceiling.id}"
        if self.curve is not None:
            return self.curve.lru.refs - self.curve.lru.distinct, f"{ENGINE}: no ceiling certificate of this trace verified"
        return None


def figures(cert: Certificate) -> dict[str, Figure]:
    return {f.name: f for f in cert.figures}


def optimum(cert: Certificate) -> bool:
    """Whether a capacity certificate proves its bound attained too (the witness), not the bound alone."""
    belady = figures(cert).get("belady_hits")
    return belady is not None and belady.evidence == "kernel-checked"


def stored(cert: Certificate) -> int | None:
    """The kernel-checked figure for caches that store every miss, when stated (a trace in pieces both ways states
    the model with bypass alone)."""
    f = figures(cert).get("max_hits")
    return None if f is None else f.numerator


ONE_MODEL = "states the optimum with bypass only (a trace checked in pieces both ways)"


def admitted(cert: Certificate) -> int | None:
    """The kernel-checked optimum with bypass (a missed block may be left out), when certified."""
    f = figures(cert).get("bypass_hits")
    return f.numerator if f is not None and f.evidence == "kernel-checked" else None


def prefix_reached(cert: Certificate) -> bool:
    """Whether the certificate proves that a prefix cache reaches the optimum with bypass."""
    f = figures(cert).get("prefix_cache_hits")
    return f is not None and f.evidence == "kernel-checked"


def _rate_cell(hits: int, refs: int, how: str, kind: str, unit: str = "block references") -> Cell:
    """A share as a reader wants it: the rate, and a click away the count and the total in their unit (never a
    reduced fraction) with how it is known; ``kind``: proven, derived, computed or observed (``card.KINDS``)."""
    what = "hits of" if unit == "block references" else "of"  # tokens are no hits
    return Cell(pct(Fraction(hits, refs)), f"{hits:,} {what} {refs:,} {unit}; {how}", kind)


def _token_cell(cert: Certificate, name: str, how: str, kind: str) -> Cell:
    """A token figure of a certificate over its prompt tokens, with how the figure is known."""
    figs = figures(cert)
    if name not in figs or "refs_tokens" not in figs:
        return Cell("n/a", f"{cert.id} gives no {name} (no prompt lengths, or made before token figures)")
    f = figs[name]
    return _rate_cell(f.numerator, figs["refs_tokens"].numerator, f"{how}: {f.known_by}, in {cert.id}", kind,
                      "prompt tokens")


def _tokens(facts: TraceFacts, blocks: int) -> str:
    return "" if facts.block_tokens is None else f" ({blocks * facts.block_tokens:,} tokens)"


def _at_capacity(facts: TraceFacts, c: int, cert: Certificate, subject: str, of: str) -> str:
    refs = figures(cert)["refs"].numerator
    h, ha = stored(cert), admitted(cert)
    if h is None and ha is not None:
        return (f"with {c:,} blocks{_tokens(facts, c)}, a cache with bypass (one that may skip storing a missed block) "
                f"hits at most {pct(Fraction(ha, refs))}{of}, which one such cache reaches")
    assert h is not None
    reach = " and one reaches exactly that" if optimum(cert) else ""
    said = f"with {c:,} blocks{_tokens(facts, c)}, {subject} hits at most {pct(Fraction(h, refs))}{of}{reach}"
    if ha is None:
        return said
    who = "a prefix cache" if prefix_reached(cert) else "one such cache"
    return f"{said}, while a cache with bypass (one that may skip storing a missed block) hits at most {pct(Fraction(ha, refs))}, which {who} reaches"


def sentence(facts: TraceFacts) -> str:
    """The card's claim in one plain sentence: no more than the verified certificates' statements say."""
    refs = facts.refs
    parts, subject, of = [], "such a cache", ""
    if facts.ceiling is not None and refs:
        hits = figures(facts.ceiling)["max_hits"].numerator
        parts.append(f"No cache {caches(STORE, plural=False)} hits more than {pct(Fraction(hits, refs))} of this "
                     f"trace's {refs:,} block references, whatever its size or eviction policy")
    elif refs:
        subject, of = f"a cache {caches(STORE, plural=False)}", f" of this trace's {refs:,} block references"
    for c, cert in sorted(facts.capacity.items()):
        parts.append(_at_capacity(facts, c, cert, subject, of))
        subject, of = "such a cache", ""
    if not parts:
        if facts.salts:
            return ("No ceiling or capacity certificate of this trace verified: the figures below are computed by "
                    "pycert's trace engine, not proved; what a per-tenant salt costs, kernel-checked, is under the "
                    "tables.")
        return ("No certificate of this trace verified: the figures below are computed by pycert's trace engine, "
                "not proved.")
    ahead = (" (the caches reaching these optima read the trace ahead, as Belady's MIN does, and keep no room for a running "
             "request's blocks, which a real engine needs)") if any(
        optimum(c) or admitted(c) is not None for c in facts.capacity.values()) else ""
    said = "; ".join(parts) + ahead + "."
    return said[0].upper() + said[1:]


def _best_number(facts: TraceFacts) -> list[Number]:
    best, refs = facts.best(), facts.refs
    if best is None or not refs:
        return []
    kind = "proven" if facts.ceiling is not None else "computed"
    out = [Number("the ceiling: the best hit rate at any size", _rate_cell(best[0], refs, best[1], kind))]
    if facts.ceiling is not None and "ceiling_tokens" in figures(facts.ceiling):
        out.append(Number("the same in prompt tokens", _token_cell(facts.ceiling, "max_hits_tokens", "computed",
                                                                   "computed")))
    return out


def _first_use_number(facts: TraceFacts) -> list[Number]:
    if facts.ceiling is not None:
        distinct, kind = figures(facts.ceiling)["distinct"].numerator, "proven"
        how = f"kernel-checked in {facts.ceiling.id}"
    elif facts.curve is not None:
        distinct, how, kind = facts.curve.lru.distinct, ENGINE, "computed"
    else:
        return []
    refs = facts.refs
    return [Number("distinct blocks: the first use of each always misses",
                   Cell(f"{distinct:,}", f"{distinct:,} of {refs:,} block references are first uses "
                                         f"({pct(Fraction(distinct, refs))}); {how}", kind))]


def _capacity_numbers(facts: TraceFacts) -> list[Number]:
    out = []
    for c, cert in sorted(facts.capacity.items()):
        figs, ha = figures(cert), admitted(cert)
        if ha is not None:
            how = "kernel-checked both ways (no cache with bypass does better; one reaches it)"
            out.append(Number(f"the optimum at {c:,} blocks{_tokens(facts, c)} with bypass",
                              _rate_cell(ha, figs["refs"].numerator, f"{how}, in {cert.id}", "proven")))
            out.append(Number(f"at most, in prompt tokens, with {c:,} blocks",
                              _token_cell(cert, "bypass_hits_tokens", "block_tokens × the kernel-checked optimum",
                                          "derived")))
            continue
        how = ("kernel-checked both ways (no cache does better; one reaches it)" if optimum(cert)
               else "kernel-checked upper bound; Belady's MIN reaches it, as computed")
        out.append(Number(f"the optimum at {c:,} blocks{_tokens(facts, c)}",
                          _rate_cell(figs["max_hits"].numerator, figs["refs"].numerator, f"{how}, in {cert.id}",
                                     "proven")))
    return out


TRACE_NUMBERS: list[Callable[[TraceFacts], list[Number]]] = [_best_number, _capacity_numbers, _first_use_number]
"""The tiles of a trace card, in order: each builder gives none, one or more."""


def _capacity_col(facts: TraceFacts, c: int) -> Cell:
    return Cell(f"{c:,}")


def _tokens_col(facts: TraceFacts, c: int) -> Cell:
    return Cell("n/a" if facts.block_tokens is None else f"{c * facts.block_tokens:,}")


def _lru_col(facts: TraceFacts, c: int) -> Cell:
    if facts.curve is None:
        return Cell("n/a", "no curve on this page (--no-curves)")
    return _rate_cell(facts.curve.lru.hits(c), facts.curve.lru.refs, ENGINE, "computed")


def _opt_col(facts: TraceFacts, c: int) -> Cell:
    figs, cert = figures(facts.capacity[c]), facts.capacity[c]
    if stored(cert) is None:
        return Cell("n/a", f"{cert.id} {ONE_MODEL}")
    how = "kernel-checked both ways" if optimum(cert) else "kernel-checked upper bound"
    return _rate_cell(figs["max_hits"].numerator, figs["refs"].numerator, f"{how} in {cert.id}", "proven")


def _admission_col(facts: TraceFacts, c: int) -> Cell:
    cert = facts.capacity[c]
    if (ha := admitted(cert)) is None:
        return Cell("n/a", f"{cert.id} certifies no optimum with bypass (a trace checked in pieces of the "
                           "older layout, or made before the model)")
    reached = "; a prefix cache reaches it (kernel-checked)" if prefix_reached(cert) else ""
    return _rate_cell(ha, figures(cert)["refs"].numerator, f"kernel-checked both ways in {cert.id}{reached}", "proven")


def _points(hits: int, refs: int, how: str, kind: str) -> Cell:
    """A difference of two hit rates in percentage points, and a click away the hits it is, of the references."""
    return Cell(f"{100 * hits / refs:.2f}", f"{hits:,} hits of {refs:,} block references: {how}", kind)


def _policy_col(facts: TraceFacts, c: int) -> Cell:
    if facts.curve is None or (h := stored(facts.capacity[c])) is None:
        return Cell("n/a")
    return _points(h - facts.curve.lru.hits(c), facts.curve.lru.refs,
                   f"the optimum at {c:,} blocks, storing every miss (kernel-checked) - LRU ({ENGINE})", "computed")


def _admission_gain_col(facts: TraceFacts, c: int) -> Cell:
    cert = facts.capacity[c]
    if (ha := admitted(cert)) is None or stored(cert) is None:
        return Cell("n/a")
    figs = figures(cert)
    return _points(ha - figs["max_hits"].numerator, figs["refs"].numerator,
                   "the optimum with bypass - the optimum storing every miss (both kernel-checked)", "proven")


def _tier_col(facts: TraceFacts, c: int) -> Cell:
    best, cert = facts.best(), facts.capacity[c]
    if best is None or (ha := admitted(cert)) is None:  # tier_headroom_pp of trace offload: one meaning, else n/a
        return Cell("n/a", "" if best is None else f"{cert.id} states no optimum with bypass: what only another tier "
                                                   "wins is not separated")
    return _points(best[0] - ha, figures(cert)["refs"].numerator,
                   f"the ceiling ({best[1]}) - the optimum at {c:,} blocks with bypass (kernel-checked); "
                   "tier_headroom_pp of pycert trace offload", "proven" if facts.ceiling is not None else "computed")


def _lru_tokens_col(facts: TraceFacts, c: int) -> Cell:
    curve = facts.curve
    if curve is None or curve.lru_tokens is None or not curve.prompt_tokens:
        return Cell("n/a", "no curve on this page (--no-curves), or no prompt lengths")
    return _rate_cell(curve.lru_tokens(c), curve.prompt_tokens, f"{ENGINE} (a partial block is never reused, as in "
                      "vLLM)", "computed", "prompt tokens")


def _max_tokens_col(facts: TraceFacts, c: int) -> Cell:
    if stored(cert := facts.capacity[c]) is None:
        return Cell("n/a", f"{cert.id} {ONE_MODEL}")
    return _token_cell(facts.capacity[c], "max_hits_tokens", "block_tokens × the kernel-checked optimum, an upper "
                       "bound", "derived")


def _admission_tokens_col(facts: TraceFacts, c: int) -> Cell:
    return _token_cell(facts.capacity[c], "bypass_hits_tokens", "block_tokens × the kernel-checked optimum, "
                       "an upper bound", "derived")


def _prefix_tokens_col(facts: TraceFacts, c: int) -> Cell:
    return _token_cell(facts.capacity[c], "prefix_cache_hits_tokens", "the full blocks the prefix cache hits",
                       "computed")


Column = tuple[str, Callable[[TraceFacts, int], Cell]]
BLOCK_COLUMNS: list[Column] = [
    ("capacity (blocks)", _capacity_col), ("capacity (tokens)", _tokens_col), ("LRU hit rate (%)", _lru_col),
    ("optimum at C blocks, storing every miss (%)", _opt_col),
    ("optimum at C blocks with bypass (%)", _admission_col),
    ("a better eviction policy can win (points)", _policy_col), ("bypass adds (points)", _admission_gain_col),
    ("only another tier can win (points)", _tier_col)]
TOKEN_COLUMNS: list[Column] = [
    ("capacity (blocks)", _capacity_col), ("LRU (% of tokens)", _lru_tokens_col),
    ("storing every miss, at most (% of tokens)", _max_tokens_col),
    ("with bypass, at most (% of tokens)", _admission_tokens_col),
    ("the prefix cache reaching the optimum (% of tokens)", _prefix_tokens_col)]
TRACE_TABLES: list[tuple[str, list[Column]]] = [
    ("Hit rates in block references: what the kernel checks", BLOCK_COLUMNS),
    ("The same in prompt tokens, the unit vLLM and SGLang report (derived or computed, not kernel-checked)",
     TOKEN_COLUMNS)]
"""The tables of a trace card, one row per certified capacity: a caption, then each column's header (with
its unit) and cell. A table whose every cell past the capacity is n/a (a trace without prompt lengths) is
left out."""


def _table(facts: TraceFacts, caption: str, columns: list[Column]) -> Table:
    rows = [[cell(facts, c) for _, cell in columns] for c in sorted(facts.capacity)]
    rows = rows if any(r.shown != "n/a" for row in rows for r in row[1:]) else []
    return Table(caption, [h for h, _ in columns], rows)


def salt_sentence(cert: Certificate) -> str:
    """An isolation-cost certificate in one sentence: the two optima at its capacity and the gap between them."""
    figs, params = figures(cert), cert.parameters
    c, shared, salted = (figs[n].numerator for n in ("capacity_blocks", "shared_hits", "salted_hits"))
    tenants, rule = getattr(params, "tenants", None), getattr(params, "tenant_rule", None)
    who = f"{tenants:,} tenants" if tenants else "its tenants"
    rule = f"prefix:{getattr(params, 'prefix_blocks', None) or 'K'}" if rule == "prefix" else rule
    how = "the trace's tenant field" if rule == "field" else f"--tenant-rule {rule}" if rule else "its tenant map"
    share = f" ({pct(Fraction(shared - salted, shared))} of the shared optimum)" if shared else ""
    return (f"Kernel-checked in {cert.id}: at {c:,} blocks, with {who} ({how}, applied by pycert: the kernel checks the "
            f"keying by tenant, not the rule), the best shared cache with bypass hits {shared:,} times and no salted one "
            f"more than {salted:,} (each starting empty, holding blocks of one size and fetching a block only when it is "
            f"referenced): a per-tenant salt costs at least {shared - salted:,} hits{share}.")


def trace_card(facts: TraceFacts, anchor: str) -> Card:
    refs = facts.refs
    meta = f"sha256 {facts.sha256[:16]}…"
    if refs:
        meta = f"{refs:,} block references" + (f" of {facts.block_tokens:,} tokens" if facts.block_tokens else "") + \
            f", {meta}"
    certs = [c.id for c in ([facts.ceiling] if facts.ceiling else []) + [facts.capacity[k] for k in sorted(facts.capacity)]
             + facts.engines + facts.salts]
    engines = facts.beside()
    return Card(anchor=anchor, title=f"Trace {facts.name}", meta=meta, sentence=sentence(facts),
                numbers=[n for build in TRACE_NUMBERS for n in build(facts)],
                tables=[_table(facts, caption, columns) for caption, columns in TRACE_TABLES] + [engine_table(engines)],
                notes=facts.notes + [f"Measured, not kernel-checked: {s.sentence}." if s.sentence else s.said()
                                     for _, s in engines]
                + [salt_sentence(c) for c in facts.salts],
                figure=None if facts.curve is None else facts.curve.png,
                figure_alt=f"Hit rate against cache capacity, {facts.name}: LRU, Belady's MIN, the ceiling, every "
                           "certified capacity" + (" and every engine's own hits" if engines else ""),
                certificates=certs, unverified=facts.unverified)


# ---------------------------------------------------------------------------- certificates without a trace

TITLES = {"isolation": "Isolation floor", "first-touch": "First-touch reuse", "pooling": "Pooled against per-instance "
          "caching", "leak": "Cross-tenant leak on a real engine", "leak-audit": "A live endpoint audited for cross-tenant reuse"}


HEADLINES = {"isolation": ("bits_floor", "single_owner_bits", "states_floor"), "first-touch": ("served", "cut"),
             "pooling": ("pooled_misses", "per_instance_misses", "free_routing_misses", "pooled_hit_rate",
                         "per_instance_hit_rate"),
             "leak": ("unsalted_cross_hits", "keyed_cross_hits", "keyed_own_hits", "attacker_unkeyed_hits",
                      "attacker_keyed_hits", "residual_rate_upper"),
             "leak-audit": ("cross_detected", "cross_cached_hits", "cross_samples", "cross_rate_upper", "cross_p_value",
                            "power", "own_cached_hits", "smallest_prefix_detected")}
"""The figures a card shows as tiles, per family (the certificate's own section has them all); a family not
named here shows its first eight."""


EVIDENCE_KIND = {"kernel-checked": "proven", "observed": "observed", "computed": "computed",
                 "computed-cross-checked": "computed"}
"""How a certificate's evidence state is styled on the page (``card.KINDS``); a solver-certified figure is
proved by a solver, not the kernel, and is left unstyled."""


def certificate_card(cert: Certificate, why_not: str | None) -> Card:
    """The card of a certificate that names no trace: its claim, and its headline figures as tiles with units."""
    figs = figures(cert)
    chosen = [figs[n] for n in HEADLINES[cert.family] if n in figs] if cert.family in HEADLINES else cert.figures[:8]
    tiles = [Number(f"{f.name.replace('_', ' ')} ({unit})" if (unit := unit_of(f)) else f.name.replace("_", " "),
                    Cell(rounded(f), f"{exact_of(f)}; {f.evidence}: {f.known_by}" if f.known_by else exact_of(f),
                         EVIDENCE_KIND.get(f.evidence, "")))
             for f in chosen]
    said = cert.claim if why_not is None else "This certificate did not verify when this page was made: what it " \
        "claims is in its own section below, unchecked."
    return Card(anchor=f"card-{cert.id}", title=TITLES.get(cert.family, cert.family), meta=f"certificate {cert.id}",
                sentence=said, numbers=tiles if why_not is None else [],
                certificates=[cert.id] if why_not is None else [],
                unverified={} if why_not is None else {cert.id: why_not})
