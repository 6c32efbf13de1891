"""The cache models' words: what every cache a capacity theorem bounds does, named in every sentence that
speaks of those caches (the capacity family's claims, the engine's sentence beside the optimum, the salt's
cost, the report's cards), so that none says more than ``Pycert.Cache`` and ``Pycert.Admission.Run`` state.
A module of its own below the families, which may not import one another."""

from __future__ import annotations

MODEL_LIMITS = ("start empty", "hold blocks of one size", "fetch a block only when it is referenced (no prefetch)")
"""What every cache the capacity theorems bound does (``Pycert.Cache``, ``Pycert.Admission.Run``): each
sentence names these limits with the caches it bounds. A cache that starts warm, prefetches or holds
blocks of other sizes is outside the bound."""
ROOM = "keeping no room for a running request's blocks, which a real engine needs"
"""What the cache reaching an optimum may do that an engine cannot: said wherever attainment is."""


def caches(last: str, plural: bool = True) -> str:
    """The caches of the model, named with its limits and ``last`` (what sets the model apart): "caches that
    start empty, hold blocks of one size, fetch a block only when it is referenced (no prefetch) and
    ``last``" (one cache: "that starts empty, …")."""
    said = [*MODEL_LIMITS, last] if plural else [_singular(x) for x in (*MODEL_LIMITS, last)]
    return f"{'caches that' if plural else 'that'} {', '.join(said[:-1])} and {said[-1]}"


def _singular(verbs: str) -> str:
    """``start empty`` → ``starts empty``, ``may bypass`` unchanged: the first verb of a phrase, third person."""
    first, _, rest = verbs.partition(" ")
    if first == "may":
        return verbs
    return f"{first}es {rest}" if first.endswith(("ch", "sh")) else f"{first}s {rest}"


STORE = "store every missed block"
BYPASS = "may bypass (skip storing a missed block)"
BYPASS_ANY = f"{BYPASS} and evict any block at any step"
DEMAND = caches(STORE)
"""The model of ``Pycert.Cache``, named wherever a figure is about it."""
ADMISSION = caches(BYPASS_ANY)
"""The model of ``Pycert.Admission.Run`` (bypass): it holds every cache of ``DEMAND`` and every prefix cache."""
