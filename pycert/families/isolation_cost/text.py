"""What an isolation-cost certificate says in words: its sentence, its limits, and how each figure is known.
The sentence says no more than ``Pycert.IsolationCost.SaltCost`` (or ``PrefixSaltCost``) on the two
traces: the keyed trace is pycert's making, and the sentence says so."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from pycert.core.schema import EvidenceState
from pycert.families.capacity.text import BYPASS, COMMON, DEMAND, UNITS

SALT_COST, PREFIX_SALT_COST = "Pycert.IsolationCost.SaltCost", "Pycert.IsolationCost.PrefixSaltCost"

KEYED = ("the keyed trace (every block id keyed by its request's tenant, as a per-tenant salt such as vLLM's cache_salt "
         "makes it: a salted cache keeps a separate copy of a block for each tenant that uses it)")
OWNERSHIP = ("A cache that stores one copy of a block for several tenants who each computed it, with per-block ownership "
             "state (the isolation floor's T·n bits), is not a cache on the keyed trace: it is outside this model and "
             "may lose fewer hits.")


def rule_text(rule: str, tenants: int, prefix_blocks: int | None) -> str:
    """The tenant map, in words (``docs/isolation-cost.md`` has each rule)."""
    if rule == "field":
        return f"the {tenants} tenants of the trace's tenant field"
    if rule == "prefix":
        return (f"{tenants} tenants, each request's tenant the sha256 of its first {prefix_blocks} block ids modulo "
                f"{tenants} (rule prefix:{prefix_blocks}: a conversation stays with one tenant)")
    return f"{tenants} tenants, requests dealt to them in turn (rule round-robin)"


def _pct(x: Fraction) -> str:
    return f"{float(100 * x):.3f}%"


def sentence(trace: str, predicate: str, figures: Mapping[str, Fraction], rule: str, reading: str = "") -> str:
    """The claim of a certificate whose headline states ``predicate``, under the tenant map ``rule`` (:func:`rule_text`)."""
    refs, c = int(figures["refs"]), int(figures["capacity_blocks"])
    y, x, gap = int(figures["shared_hits"]), int(figures["salted_hits"]), int(figures["gap"])
    blocks = f"{c} block{'s' if c != 1 else ''}"
    out = (f"On trace {trace} ({reading}{refs} block references in {int(figures['requests'])} requests), with {rule}: "
           f"{BYPASS} of {blocks} shared by every tenant hit at most {y} times and one (offline) hits exactly {y}")
    if predicate == PREFIX_SALT_COST:
        out += (", reached by a prefix cache over the trace's requests (one that hits only the longest cached prefix of "
                "each request's blocks)")
    out += (f"; on {KEYED}, no cache of {blocks} with bypass hits more than {x}, and one hits exactly {x}. So "
            f"at {blocks} a per-tenant salt costs at least {gap} hits ({_pct(figures['gap_share'])} of the shared "
            f"optimum): every salted cache of {blocks} with bypass, which includes those that store every "
            f"missed block and prefix caches, hits at least {gap} times fewer than the best shared one. For {DEMAND}, a "
            f"subset, the optima are {int(figures['shared_demand_hits'])} shared and "
            f"{int(figures['salted_demand_hits'])} keyed. Blocks count one slot each, and no room is kept for a running "
            f"request's blocks. The keyed trace is pycert's making from the trace and the tenant "
            f"map (verify makes it again); the kernel does not relate the two traces. {OWNERSHIP}")
    return out


def limits(rule: str) -> tuple[str, ...]:
    """The ``does_not_prove`` lines of a certificate made under tenant map ``rule``."""
    assigned = () if rule == "field" else (
        "The trace names no tenants: the tenant map is a rule pycert applies (parameters.tenant_rule), a modelling "
        "choice; another assignment of requests to tenants gives other figures.",)
    return (
        "The figures are per trace, per capacity and per tenant map: they say nothing about other traffic, other cache "
        "sizes or other tenants.",
        *assigned,
        "Outside the kernel, Python makes the keyed trace from the trace and the tenant map (each reference's block the "
        "pair of its request's tenant and its block id, numbered in the order the pairs first occur) and writes both "
        "traces into their instances. The kernel checks each optimum on every reference of the list its instance "
        "decodes to, and that both lists have the same length; it does not check that one is the other keyed. Verify "
        "makes the tenant map (its sha256 is parameters.tenant_map_sha256), the keyed trace and all three Lean files "
        "again from the trace, byte for byte.",
        OWNERSHIP,
        f"Both optima are kernel-checked both ways in each model: no cache of the model hits more, and one hits exactly "
        f"that many (Belady's hit pairs, without and with bypass, checked on every reference as witnesses). The caches "
        f"reaching them read the whole trace (they are offline). {UNITS} Nothing is prefetched.",
        "The partitioned arm (each tenant its own share of the capacity) is computed by pycert, not kernel-checked.",
        "No figure in tokens is stated.",
        *COMMON[1:],
    )


KERNEL = "Lean kernel: a literal of {headline}"
EVIDENCE: dict[str, tuple[EvidenceState, str]] = {
    "refs": ("kernel-checked", f"{KERNEL} (the length of both traces, every reference decoded)"),
    "capacity_blocks": ("kernel-checked", f"{KERNEL} (the capacity of every cache it speaks of)"),
    "shared_hits": ("kernel-checked", f"{KERNEL} (OptimumA on the trace: hits ≤ it for every cache of C blocks with "
                    "bypass, from a cut list checked on every reference, and = it for one, from the hit pairs "
                    "of Belady's MIN with bypass checked on every reference)"),
    "salted_hits": ("kernel-checked", f"{KERNEL} (OptimumA on the keyed trace, both ways as shared_hits)"),
    "shared_demand_hits": ("kernel-checked", f"{KERNEL} (Optimum on the trace, for caches that store every missed block "
                           "and start empty, both ways)"),
    "salted_demand_hits": ("kernel-checked", f"{KERNEL} (Optimum on the keyed trace, both ways)"),
    "gap": ("computed", "exact arithmetic shared_hits - salted_hits of two kernel-checked figures (salt_gap: every cache "
            "on the keyed trace hits at least this many times fewer than the best on the trace)"),
    "gap_share": ("computed", "exact arithmetic gap / shared_hits (0 when shared_hits is 0)"),
    "demand_gap": ("computed", "exact arithmetic shared_demand_hits - salted_demand_hits of two kernel-checked figures"),
    "shared_hit_rate": ("computed", "exact arithmetic shared_hits / refs"),
    "salted_hit_rate": ("computed", "exact arithmetic salted_hits / refs"),
    "partitioned_hits": ("computed", "each tenant its own share of capacity_blocks (C // T, one more for the first "
                         "C mod T tenants in map order) and Belady's MIN with bypass on its own references "
                         "(pycert.analysis.salt.partitioned_hits, the one-pass curve of pycert.analysis.optcurve), summed; "
                         "not kernel-checked. A partitioned cache is a salted cache, so it is at most salted_hits, which "
                         "verify checks"),
    "partitioned_hit_rate": ("computed", "exact arithmetic partitioned_hits / refs"),
    "tenants": ("computed", "T: the tenants of the map (the trace's tenant field, or the rule's number)"),
    "requests": ("computed", "the trace's requests (lines), as Python reads them"),
    "distinct": ("computed", "distinct block ids of the trace (numpy)"),
    "salted_distinct": ("computed", "distinct blocks of the keyed trace: (tenant, block) pairs (numpy)"),
    "cross_tenant_refs": ("computed", "references whose block another tenant referenced before "
                          "(pycert.analysis.tenants.cross_tenant)"),
}
