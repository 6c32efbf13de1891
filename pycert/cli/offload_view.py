"""``pycert trace offload``'s table and CSV: each figure of an :class:`OffloadReport` as a person reads it and as a
spreadsheet takes it (the count and the total a rate is a share of, in their unit)."""

from __future__ import annotations

from fractions import Fraction

from pycert.analysis.offload import ENGINES_REPORT, TOKEN_RATES, OffloadArm, OffloadReport
from pycert.core.console import csv_text, escaped, table
from pycert.core.exact import Ratio


def cells(r: Ratio | None) -> tuple[object, object]:
    """A rate as two CSV cells: its decimal (as --json gives it) and its exact fraction."""
    return ("", "") if r is None else (r.decimal, f"{r.numerator}/{r.denominator}")


OFFLOAD_HEADROOMS = ("The headroom GPU-only LRU leaves (headroom_pp, percentage points of hit rate) comes in three "
                     "parts that add up to it: policy_headroom_pp, what a better eviction policy can win at the GPU "
                     "capacity (Belady's MIN - LRU); bypass_headroom_pp, what bypass (skipping the storing of a missed "
                     "block) adds to that (the optimum with bypass - Belady's MIN); tier_headroom_pp, what no GPU-only "
                     "cache of that capacity can win, bypassing or not, so only another tier can (the ceiling - the "
                     "optimum with bypass). The report page's three headroom columns are these. docs/traces.md has "
                     "every row.")
OFFLOAD_FIELDS = ["block_tokens", "capacity_blocks", "host_blocks", "refs", "distinct", "working_set_over_capacity",
                  "cold_miss_floor", "ceiling", "gpu_only_hit_rate", "gpu_only_belady_hit_rate",
                  "gpu_only_bypass_hit_rate", "host_backed_hit_rate", "host_load_frac", "headroom_pp",
                  "policy_headroom_pp", "bypass_headroom_pp", "tier_headroom_pp", "gpu_share_of_ceiling"]
"""The offload report's block figures, in the order the table and the CSV give them."""


def offload_fields(rep: OffloadReport) -> list[str]:
    """The block figures, then the token figures where the trace has prompt lengths."""
    tokens = ["refs_tokens", *(f"{f}_tokens" for f in TOKEN_RATES)] if rep.primary.refs_tokens is not None else []
    return OFFLOAD_FIELDS + tokens


def _counts(a: OffloadArm, f: str, v: Ratio) -> tuple[object, object, str]:
    """A rate of the offload report as the count and the total it is a share of, in their unit (a figure in
    percentage points: the count of references it is); blank where the figure is no share of a count."""
    if f.endswith("_pp"):
        of, unit, scale = a.refs, "block references", Fraction(1, 100)
    elif f.endswith("_tokens"):
        of, unit, scale = a.refs_tokens, "prompt tokens", Fraction(1)
    elif f == "working_set_over_capacity":
        of, unit, scale = a.capacity_blocks, "blocks (distinct blocks over the capacity)", Fraction(1)
    elif f == "gpu_share_of_ceiling":
        of, unit, scale = a.refs - a.distinct, "block references the ceiling hits", Fraction(1)
    else:
        of, unit, scale = a.refs, "block references", Fraction(1)
    count = v.value * scale * (of or 0)
    return (count.numerator, of, unit) if of and count.denominator == 1 else ("", "", "")


def offload_csv(rep: OffloadReport) -> str:
    heads = ["trace", "sha256", "capacity_tokens", "host_tokens", "arm", "granularity", "figure", "value", "exact",
             "count", "of", "unit", "evidence", "known_by"]
    rows = []
    for arm, a in (("as read", rep.primary), ("control", rep.control)):
        for f in offload_fields(rep) if a is not None else ():
            v = getattr(a, f)
            if isinstance(v, Ratio):
                row = (*cells(v), *_counts(a, f, v))
            else:
                row = ("", "", "", "", "") if v is None else (v, v, "", "", "")
            known = (rep.evidence.get(f, "computed"), rep.evidence_by.get(f, "")) if arm == "as read" else ("computed", "")
            rows.append((rep.name, rep.sha256, rep.capacity_tokens, "" if rep.host_tokens is None else rep.host_tokens,
                         arm, a.granularity, f, *row, *known))
    return csv_text(heads, rows)


def render_offload(rep: OffloadReport) -> str:
    arms: list[OffloadArm] = [rep.primary] + ([rep.control] if rep.control else [])
    fields = offload_fields(rep)
    tokens = rep.primary.refs_tokens is not None

    def cell(f: str, v: object) -> str:
        if isinstance(v, Ratio):
            return f"{v.decimal:.6f}"
        if v is None and f.endswith("_tokens"):
            return "n/a (no prompt lengths)"
        if v is None:  # host_blocks without --host-tokens; a share of a ceiling of zero
            return "n/a (no block is ever reused: the ceiling is 0)" if f == "gpu_share_of_ceiling" else "unbounded"
        return f"{v:,}" if isinstance(v, int) else str(v)

    def known(f: str) -> list[str]:
        if not rep.evidence:
            return []
        state = rep.evidence.get(f, "")
        return [f"{state} ({escaped(rep.evidence_by[f])})" if f in rep.evidence_by else state]

    rows = [(f, *(cell(f, getattr(a, f)) for a in arms), *known(f)) for f in fields]
    at = fields.index("gpu_only_belady_hit_rate") + 1
    for name, rate in (("gpu_only_belady_hit_rate_tokens", "engine_hit_rate_tokens"), ("gpu_only_belady_hit_rate",
                                                                                     "engine_hit_rate")):
        if name in fields:  # the engine's rows beside OPT(G), in blocks and in tokens
            at = fields.index(name) + 1
            rows[at:at] = [(f"{rate} (replayed at {e.block_tokens} tokens a block)", cell(rate, getattr(e, rate)),
                            *(["n/a"] if rep.control else []), *([f"observed ({escaped(e.certificate)})"] if rep.evidence
                                                                 else [])) for e in rep.engines]
    heads = ["figure", f"x{rep.primary.granularity} (as read)"]
    heads += [f"x{rep.control_k} (control)"] if rep.control else []
    heads += [f"evidence (x{rep.primary.granularity})"] if rep.evidence else []
    host = "unbounded host" if rep.host_tokens is None else f"host {rep.host_tokens:,} tokens"
    unused = [f"not used (what it would prove stays computed): {escaped(name)}: {escaped(why)}"
              for name, why in rep.not_used.items()]
    said = [f"{escaped(e.certificate)}: {escaped(e.sentence or 'no sentence: ' + str(e.why_no_sentence))}"
            for e in rep.engines]
    return "\n".join([f"{escaped(rep.name)}: GPU {rep.capacity_tokens:,} tokens, {host}", table(heads, rows), *said,
                      *unused, *([ENGINES_REPORT] if tokens else [])])
