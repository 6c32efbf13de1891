"""A real engine's own hits beside the certified optimum at its capacity, as a table of its trace's card: a
row per engine certificate that verified, each cell saying how it is known (observed, computed or proven)."""

from __future__ import annotations

from fractions import Fraction

from pycert.certify.card import Cell, Table, pct
from pycert.core.schema import Certificate
from pycert.families.engine.beside import Beside

MEASURED = "observed: the engine's own prefix-cache count, measured, not kernel-checked"


def _count_cell(n: int | None, of: int | None, unit: str, how: str, kind: str, bound: bool = False) -> Cell:
    """A count with its share, e.g. "1,460 (27.35%)"; the count of its total in their unit and how it is known a
    click away (``how`` says why there is none, for a count that is None)."""
    if not of:
        return Cell("n/a", "the trace gives no prompt lengths")
    if n is None:
        return Cell("n/a", how)
    at_most = "at most " if bound else ""
    return Cell(f"{at_most}{n:,} ({pct(Fraction(n, of))})", f"{at_most}{n:,} of {of:,} {unit}; {how}", kind)


def engine_table(pairs: list[tuple[Certificate, Beside]]) -> Table:
    """A row per engine certificate of the trace: what the engine hit beside LRU and the optimum at its
    capacity, in blocks and in the trace's prompt tokens, each cell saying how it is known."""
    rows = []
    for cert, s in pairs:
        p = cert.parameters
        engine = Cell(str(getattr(p, "engine", cert.id)), f"{getattr(p, 'engine_version', '')}; "
                      f"{getattr(p, 'model', '')} on {getattr(p, 'device', '')}; its cache {s.capacity_blocks:,} blocks of "
                      f"{getattr(p, 'block_tokens', '?')} tokens, one a block of the trace; {cert.id}")
        reached = Fraction(s.engine_hits, s.optimum) if s.optimum else None
        rows.append([
            Cell(f"{s.capacity_blocks:,}"), engine,
            _count_cell(s.engine_hits, s.refs, "block references", f"{MEASURED}, in {cert.id}", "observed"),
            _count_cell(s.engine_tokens, s.refs_tokens, "prompt tokens", f"{MEASURED}, in {cert.id}", "observed"),
            _count_cell(s.lru_hits, s.refs, "block references", f"computed by pycert, in {cert.id}", "computed"),
            _count_cell(s.optimum, s.refs, "block references", s.optimum_known,
                        "proven" if s.sentence else "computed"),
            _count_cell(s.optimum_tokens, s.refs_tokens, "prompt tokens",
                        "the trace's block size × the kernel-checked optimum, an upper bound" if s.sentence else
                        f"no bound in tokens: {s.why_no_sentence}", "derived", bound=True),
            Cell("n/a") if reached is None else Cell(pct(reached), f"{s.engine_hits:,} of {s.optimum:,} hits: the "
                                                     f"engine's (measured) over the optimum's ({s.optimum_known})",
                                                     "observed")])
    return Table("A real engine at a capacity: its own prefix-cache hits (measured, not kernel-checked) beside "
                 "the certified optimum", ["capacity (blocks)", "engine (name)", "the engine hit (blocks)",
                                          "the engine hit (prompt tokens)", "LRU (blocks)",
                                          "the optimum (blocks)", "the optimum (prompt tokens)",
                                          "the engine reached (% of the optimum)"], rows)
