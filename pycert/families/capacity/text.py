"""What a capacity certificate says in words: its sentence, its limits, and how each figure is known.
Each sentence says no more than the headline predicate it names (``lean/Pycert/Capacity.lean``,
``Realise.lean``, ``AdmissionOptimum.lean``), the models' limits included."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from pycert.core.schema import EvidenceState
from pycert.families.traces import BLOCK_IDENTITY, PROMPT_TOKENS

BOUNDED, OPTIMUM = "Pycert.Capacity.Bounded", "Pycert.Capacity.Optimum"
OPTIMA, PREFIX_OPTIMA = "Pycert.Admission.Optima", "Pycert.Admission.PrefixOptima"
OPTIMUM_A = "Pycert.Admission.OptimumA"

DEMAND = "caches that store every missed block and start empty"
"""The model of ``Pycert.Cache``, named wherever a figure is about it."""
BYPASS = ("caches with bypass (a cache that may skip storing a missed block, and evict any block at any step; "
             "it starts empty)")
UNITS = ("Blocks count one slot each, and neither model makes a running request's blocks resident together while it "
         "is computed: a real engine needs that room, so the optimum may be out of its reach.")

UPPER_ONLY = ("The kernel proves the upper bound only; that Belady's MIN reaches it is computed by pycert (two engines "
              "agreeing), not kernel-checked, so max_hits is proved to be an upper bound and computed to be the optimum.")
BOTH_WAYS = ("The kernel proves max_hits both ways: no policy of the model hits more, and some policy of capacity_blocks "
             "hits exactly max_hits (Belady's hit pairs, checked on every reference as a witness). That policy reads the "
             "whole trace (it is offline, like Belady's MIN); that MIN itself is the policy reaching it is Belady's "
             "theorem and pycert's two engines, not the kernel's.")
COMMON = (
    "The bound is per trace and per capacity: it says nothing about other traffic or other cache sizes.",
    "It is an oracle bound, not a connector measurement: no real cache was run.",
    BLOCK_IDENTITY,
    "Outside the kernel, Python reads the trace file's bytes (sha256 above) into the list of block ids and writes "
    "that list into the instance's vectors, then decodes what it wrote and refuses any difference. The kernel "
    "checks every reference of the list the instance decodes to; a reader bug would make the theorem about "
    "another list.",
)
LIMITS = (
    COMMON[0],
    f"It bounds {DEMAND} (no bypass) and hold blocks of one size; a cache that bypasses, prefetches, starts warm or "
    "weighs blocks by size is outside the model.",
    UPPER_ONLY,
    *COMMON[1:],
)
OPTIMA_LIMITS = (
    COMMON[0],
    f"Both optima are kernel-checked both ways, each in its model: no cache of the model hits more, and one hits exactly "
    f"that many (Belady's hit pairs, without and with bypass, checked on every reference as witnesses). The caches "
    f"reaching them read the whole trace (they are offline); that Belady's MIN is such a cache is Belady's theorem and "
    f"pycert's two engines, not the kernel's. {UNITS} Nothing is prefetched.",
    "The request boundaries are data, read by Python from the trace like its ids; the kernel checks the prefix cache "
    "over the boundaries it is given.",
    "The figures in tokens are not kernel-checked: the bounds are block_tokens times a kernel-checked block figure (a "
    "block holds at most block_tokens tokens), and prefix_cache_hits_tokens counts the kernel-checked witness's hit "
    "blocks at block_tokens each when full and a request's partial last block at none (vLLM caches full blocks only); "
    "the optimum in tokens lies between the two.",
    *COMMON[1:],
)
PREFIX_NOT_CLAIMED = {
    "no-requests": "No prefix cache is claimed: the trace has no request boundaries (a file of block ids).",
    "not-prefix-closed": "No prefix cache is claimed: the trace is not prefix-closed (a block id does not fix the "
                         "blocks before it in its request, as chained block hashes would), so no engine's prefix cache "
                         "keys its blocks this way.",
    "not-a-prefix": "No prefix cache is claimed: some hit of Belady's MIN with bypass follows a miss in its request, so "
                    "the witness is not a prefix cache's.",
}


def joint_limits(count: int) -> tuple[str, ...]:
    """What a certificate of a trace in ``count`` pieces both ways with bypass does not prove."""
    return (COMMON[0], _joint_model(), "The figures in tokens are not kernel-checked: bypass_hits_tokens is "
            "block_tokens times the kernel-checked bypass_hits (a block holds at most block_tokens tokens).",
            *COMMON[1:], _joint_limit(count))


def _joint_model() -> str:
    return (f"The optimum with bypass is kernel-checked both ways: no cache with bypass "            "of capacity_blocks hits more, and one hits exactly bypass_hits (Belady's hit pairs with bypass, checked on "
            "every reference as a witness). That cache reads the whole trace (it is offline); that Belady's MIN with "
            f"bypass is such a cache is Belady's theorem and pycert's two engines, not the kernel's. {UNITS} Nothing is "
            "prefetched.")


def _joint_limit(count: int) -> str:
    return (f"The trace is checked in {count} pieces that follow one another, each ending at a cut of the cut list with "
            "bypass, each a sorted instance in a Lean module of its own of the blocks of the witness's pairs "
            "open where it starts followed by its references; the composition module proves the optimum from the pieces' "
            "headlines (Pycert.Joints.both_glue, optimumA_of_both), the open blocks each piece leaves being, literally, "
            "those the next starts with. Python computes where to split and which pairs are open, and verify recomputes "
            "them from the trace, the capacity and piece_refs and regenerates every file. Only the model with bypass is "
            "stated: the optimum of caches that store every missed block is not, nor a prefix cache.")


def piece_limit(count: int) -> str:
    return (f"The trace is checked in {count} pieces split at cuts of the cut list, each a sorted instance in a Lean "
            "module of its own that states its first and last reference, and the composition module proves the bound "
            "from the pieces' headlines (Pycert.Capacity.piece_glue): consecutive pieces share one reference, which "
            "the kernel checks is the same id. Python computes where to split, and verify recomputes it from the trace, "
            "the capacity and piece_refs and regenerates every file; any split at cuts gives the same bound.")


def _blocks(c: int) -> str:
    return f"{c} block{'s' if c != 1 else ''}"


def sentence(trace: str, predicate: str, figures: Mapping[str, Fraction], reading: str = "") -> str:
    """The claim of a certificate whose headline states ``predicate``; ``reading``: what the claim says of the
    blocks where the reading made them (:func:`pycert.families.traces.reading`)."""
    refs, c = int(figures["refs"]), int(figures["capacity_blocks"])
    blocks = _blocks(c)
    if predicate == OPTIMUM_A:
        ha = int(figures["bypass_hits"])
        return (f"On trace {trace} ({reading}{refs} block references), {BYPASS} of {blocks} hit at most {ha} times and one "
                f"(offline) hits exactly {ha}: the optimum at {blocks} with bypass, a hit rate of "
                f"{float(figures['bypass_hit_rate']):.6f}, checked in pieces with the witness's pairs open across each "
                "joint. Every cache of that size that starts empty is one of these, so none hits more. The optimum for "
                f"{DEMAND} is not stated. Blocks count one slot each, and no room is kept for a running request's blocks.")
    h = int(figures["max_hits"])
    if predicate in (BOUNDED, OPTIMUM):
        return (f"On trace {trace} ({reading}{refs} block references), no demand-fetch cache of {blocks} that stores every missed "
                f"block and starts empty hits more than {h} times: a hit rate of at most {float(figures['max_hit_rate']):.6f} "
                f"at {blocks}, attained by Belady's MIN"
                + (f"; some such cache of {blocks} hits exactly {h} times, so {h} is the optimum at {blocks}." if predicate == OPTIMUM
                   else " as pycert computes it (two engines agreeing; the kernel proves the bound only)."))
    ha = int(figures["bypass_hits"])
    requests = f" in {int(figures['requests'])} requests" if "requests" in figures else ""
    out = (f"On trace {trace} ({reading}{refs} block references{requests}), {BYPASS} of {blocks} hit at most {ha} times and one "
           f"(offline) hits exactly {ha}: the optimum at {blocks} with bypass, a hit rate of "
           f"{float(figures['bypass_hit_rate']):.6f}")
    if predicate == PREFIX_OPTIMA:
        out += (", reached by a prefix cache over the trace's requests (one that hits only the longest cached prefix of "
                "each request's blocks)")
    out += (f". For {DEMAND}, a subset, the optimum at {blocks} is {h} ({float(figures['max_hit_rate']):.6f}). Blocks count "
            "one slot each, and no room is kept for a running request's blocks.")
    if "refs_tokens" in figures:
        bound = int(figures["bypass_hits_tokens"])
        out += (f" In tokens, of {int(figures['refs_tokens'])} prompt tokens, no cache with bypass hits more "
                f"than {bound} (block_tokens × {ha}, derived)")
        if "prefix_cache_hits_tokens" in figures:
            out += (f", and that prefix cache hits {int(figures['prefix_cache_hits_tokens'])} (its full blocks; a partial "
                    "block is never reused, as in vLLM)")
        out += "."
    return out


KERNEL = "Lean kernel: a literal of {headline}"
EVIDENCE: dict[str, tuple[EvidenceState, str]] = {
    "refs": ("kernel-checked", f"{KERNEL} (trace.length), every reference decoded"),
    "capacity_blocks": ("kernel-checked", f"{KERNEL} (the capacity of every cache it speaks of)"),
    "max_hits": ("kernel-checked", f"{KERNEL} (hits P trace ≤ it for every policy P of capacity C, from a cut list "
                 "checked on every reference)"),
    "max_hit_rate": ("computed", "exact arithmetic max_hits / refs of two kernel-checked figures"),
    "belady_hits": ("computed-cross-checked", "Belady's MIN at capacity_blocks: pycert's one-pass OPT curve "
                    "(pycert.analysis.optcurve), equal to a direct MIN simulation (pycert.analysis.cachesim.belady_hits) "
                    "and to max_hits; libCacheSim's Belady agrees in pycert's tests"),
    "cuts": ("computed", "length of the cut list the recipe computed (pycert.analysis.capacity.cut_list); the kernel "
             "checked the bound for that list, whatever it is"),
}
OPTIMUM_EVIDENCE: dict[str, tuple[EvidenceState, str]] = {
    "max_hits": ("kernel-checked", f"{KERNEL} (Optimum: hits P trace ≤ it for every policy P of capacity C that stores "
                 "every missed block and starts empty, from a cut list checked on every reference, and = it for one such "
                 "policy, from Belady's hit pairs checked on every reference)"),
    "belady_hits": ("kernel-checked", "the optimum at capacity_blocks for caches that store every missed block, a literal "
                    "of {headline} (max_hits, both ways). That Belady's MIN is a cache reaching it is computed: pycert's "
                    "one-pass OPT curve (pycert.analysis.optcurve) and a direct MIN simulation "
                    "(pycert.analysis.cachesim.belady_hits) both count max_hits"),
}
OPTIMA_EVIDENCE: dict[str, tuple[EvidenceState, str]] = {
    **OPTIMUM_EVIDENCE,
    "bypass_hits": ("kernel-checked", f"{KERNEL} (OptimumA: hits trace K ≤ it for every cache K of C blocks with "
                    "bypass, Pycert.Admission.Run, from a second cut list checked on every reference, and = "
                    "it for one such cache, from the hit pairs of Belady's MIN with bypass checked on every reference)"),
    "bypass_hit_rate": ("computed", "exact arithmetic bypass_hits / refs of two kernel-checked figures"),
    "bypass_cuts": ("computed", "length of the cut list the recipe computed for caches with bypass "
                    "(pycert.analysis.capacity.cut_list, admission=True); the kernel checked the bound for that list"),
    "prefix_cache_hits": ("kernel-checked", f"{KERNEL} (PrefixOptimum: prefixHits ≤ it for every prefix cache of C "
                          "blocks over the trace's requests, with or without bypass, and = it for one, from "
                          "the same pairs, each hit checked to follow a hit in its request or start it)"),
    "requests": ("computed", "the trace's requests (lines), as Python reads them"),
    "refs_tokens": ("computed", PROMPT_TOKENS),
    "max_hits_tokens": ("computed", "block_tokens × max_hits: a bound in tokens derived from a kernel-checked block figure "
                        "(a block holds at most block_tokens tokens); not itself kernel-checked"),
    "bypass_hits_tokens": ("computed", "block_tokens × bypass_hits: a bound in tokens derived from a kernel-checked "
                           "block figure; not itself kernel-checked"),
    "max_hit_rate_tokens": ("computed", "exact arithmetic max_hits_tokens / refs_tokens"),
    "bypass_hit_rate_tokens": ("computed", "exact arithmetic bypass_hits_tokens / refs_tokens"),
    "prefix_cache_hits_tokens": ("computed", "the tokens of the prefix cache's hits: the kernel-checked witness's hit "
                                 "blocks (Belady's MIN with bypass, regenerated from the trace), block_tokens each when "
                                 "full, none for a request's partial last block (vLLM caches full blocks only)"),
    "prefix_cache_hit_rate_tokens": ("computed", "exact arithmetic prefix_cache_hits_tokens / refs_tokens"),
}


def evidence_of(name: str, predicate: str | None) -> tuple[EvidenceState, str]:
    """How figure ``name`` of a certificate stating ``predicate`` is known."""
    if predicate == OPTIMUM_A and name in OPTIMA_EVIDENCE:
        state, how = OPTIMA_EVIDENCE[name]
        return state, how.replace("a second cut list", "a cut list").replace(
            "checked on every reference", "checked on every reference, piece by piece with the pairs open across each joint")
    if predicate in (OPTIMA, PREFIX_OPTIMA) and name in OPTIMA_EVIDENCE:
        return OPTIMA_EVIDENCE[name]
    if predicate == OPTIMUM and name in OPTIMUM_EVIDENCE:
        return OPTIMUM_EVIDENCE[name]
    if name in EVIDENCE:
        return EVIDENCE[name]
    return OPTIMA_EVIDENCE.get(name, ("computed", ""))
