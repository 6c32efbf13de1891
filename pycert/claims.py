"""What each certificate family claims, which Lean theorems it rests on, and what it does not prove.

One place for the words: the pipeline writes them into certificates, verify checks the theorem names
against the library, and the README quotes them.
"""

from __future__ import annotations

from pydantic import BaseModel


class Family(BaseModel):
    name: str
    theorems: list[str]
    does_not_prove: list[str]
    known_by: dict[str, str] = {}
    """figure name -> how that figure is known, written beside it in the certificate"""


ISOLATION = Family(
    name="isolation",
    theorems=[
        "Pycert.Isolation.floor",
        "Pycert.Isolation.floor_log2",
        "Pycert.Isolation.leak_or_refusal",
        "Pycert.Isolation.owner_floor",
        "Pycert.Isolation.owner_floor_log2",
    ],
    does_not_prove=[
        "The T*n floor assumes arbitrary shared-read rights: any tenant may be entitled to any block.",
        "It counts distinguishable states of the isolation metadata, not bytes of any real implementation.",
        "A manager that may leak or refuse reuse is not bound by it (that is the dichotomy below the floor).",
        "The single-owner figure n*log2 T uses the floor of log2 T; it is exact only for T a power of two.",
    ],
)

CEILING = Family(
    name="ceiling",
    theorems=["Pycert.Ceiling.hits_add_distinct_le", "Pycert.Ceiling.hits_unbounded", "Pycert.Ceiling.hitRatio_le_ceiling",
              "Pycert.PackedTrace.traceOK_sound", "Pycert.PackedTrace.distinctFrom_map", "Pycert.Route.route_inj"],
    does_not_prove=[
        "A ceiling is per trace: it says nothing about other traffic.",
        "It bounds demand-fetch caches only: a prefetching cache is outside the model.",
        "It is an oracle bound, not a connector measurement: no real cache was run.",
        "Block identity is the trace's hash ids at the trace's block size; another granularity gives other figures.",
        "Outside the kernel, Python reads the trace file's bytes (sha256 above) into the list of block ids and writes "
        "that list into the instance's vectors, then decodes what it wrote (pycert.lean_trace.decode, the Lean decode "
        "re-run in Python) and refuses any difference. The kernel checks every reference of the list the instance "
        "decodes to; a reader bug would make the theorem about another list.",
    ],
    known_by={
        "refs": "Lean kernel: refs_eq (trace.length) of the emitted instance, every reference decoded",
        "distinct": "Lean kernel: distinct_eq of the emitted instance, every reference decoded",
        "ceiling": "exact arithmetic (refs - distinct) / refs of the two kernel-checked figures",
    },
)

POOLING = Family(
    name="pooling",
    theorems=[
        "Pycert.Pooling.distinct_le_pooledMisses",
        "Pycert.Pooling.sumDistinct_le_perInstanceMisses",
        "Pycert.Pooling.distinct_le_sumDistinct",
        "Pycert.Pooling.sumDistinct_eq_iff",
    ],
    does_not_prove=[
        "OPT = 32 is for the committed instance only: other instances have other optima.",
        "The per-instance figure is for the committed routing; the free-routing optimum is a solver result with its bound.",
        "Misses count block fetches; transfer latency, bandwidth and serving throughput are not modelled.",
        "It is an oracle bound, not a connector measurement.",
    ],
)

FIRST_TOUCH = Family(
    name="first-touch",
    theorems=["Pycert.FirstTouch.cut_eq", "Pycert.FirstTouch.cut_gt_half", "Pycert.FirstTouch.lmcache_floor_vacuous"],
    does_not_prove=[
        "The cut assumes a store pre-warmed with every whole chunk of the prompt; cold stores serve less.",
        "It is arithmetic about token counts, not a latency or throughput measurement.",
        "A floor of 0.30 on the cut cannot fail for prompts of at least 2c tokens: such a gate tests nothing.",
    ],
)

FAMILIES = {f.name: f for f in (ISOLATION, CEILING, POOLING, FIRST_TOUCH)}
