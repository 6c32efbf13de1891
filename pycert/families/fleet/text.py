"""What a fleet certificate says in words: its sentence (the waterfall a manager reads), its limits, and how each
figure is known. The sentence says no more than ``Pycert.Fleet.CertifiedCeiling`` (``Certified``) on the trace,
the routing and the hosts' lists: that each host's list is the sub-trace the routing gives it is pycert's
making, which verify makes again, and the sentence says so."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

from pycert.core.console import plural
from pycert.core.schema import EvidenceState
from pycert.families.capacity.text import COMMON
from pycert.families.traces import PROMPT_TOKENS

CERTIFIED, CERTIFIED_CEILING = "Pycert.Fleet.Certified", "Pycert.Fleet.CertifiedCeiling"
MODEL = ("a cache of C blocks that starts empty, may evict any block at any step, may skip storing a missed block "
         "(bypass), and loads a block only at a reference routed to its host; blocks count one slot each, nothing is "
         "prefetched, no room is kept for a running request's blocks, and the caches may read the whole trace "
         "(offline)")
"""The cache model of ``Pycert.Fleet.Fleet``, named wherever a figure is about it."""
TIE = ("That each host's list is the sub-trace the routing gives it (the requests routed there, in trace order) is "
       "how pycert wrote the host instances, not part of what the kernel checked: the headline says the sum is the "
       "routed optimum if each list is that sub-trace, and verify makes the host list, every sub-trace and every Lean "
       "file again from the trace and the routing, byte for byte.")
TIE_MEASURED = ("Checking that condition in the kernel (Pycert.Fleet.sub of the trace against each host's list, "
                "reference by reference) was measured and is out of reach at a whole trace's size (DEVELOPERS.md: a "
                "fleet's sub-traces).")


def routing_text(routing: str, threshold: str | None) -> str:
    """The routing, in words (``docs/fleet.md`` has each rule)."""
    kind, _, arg = routing.partition(":")
    return {
        "round-robin": "round-robin (request k in file order to host k mod H)",
        "field": f"the host each request's field {arg!r} records",
        "hash": f"a consistent hash (jump hashing of sha256) of each request's field {arg!r}",
        "prefix": f"a consistent hash (jump hashing of sha256) of each request's first {arg} block ids",
        "cache-aware": (f"the cache-aware rule (the host whose estimated cache holds the longest prefix of the request, "
                        f"when that prefix is at least {threshold} of its blocks, else the host sent the fewest requests "
                        "so far; the estimate: every prefix sent to each host)"),
    }[kind]


def _n(x: Fraction) -> str:
    return f"{int(x):,}"


def _pct(x: Fraction) -> str:
    return f"{float(100 * x):.2f}%"


def sentence(trace: str, figures: Mapping[str, Fraction], routing: str, engine: str | None, reading: str = "") -> str:
    """The waterfall in one sentence, then what each figure is."""
    f = figures
    n, hosts, c = f["refs"], int(f["hosts"]), int(f["capacity_blocks"])
    pooled, routed = f["pooled_hits"], f["routed_hits"]
    start = (f"On trace {trace} ({reading}{_n(n)} block references in {_n(f['requests'])} requests), {plural(hosts, 'host')} of "
             f"{c:,} blocks behind {routing}: ")
    parts = []
    if "workload_hits" in f:
        parts.append(f"the workload reuses at most {_n(f['workload_hits'])} references ({_pct(f['workload_hits'] / n)}) "
                     f"with a cache of any size")
    parts.append(f"one pooled cache of {hosts * c:,} blocks hits at most {_n(pooled)} ({_pct(pooled / n)})"
                 + (f", a capacity loss of {_n(f['capacity_loss'])}" if "capacity_loss" in f else ""))
    parts.append(f"the best per-host caches behind this routing hit at most {_n(routed)} ({_pct(routed / n)}) on the "
                 f"hosts' sub-traces as pycert wrote them, a routing loss of {_n(f['routing_loss'])}")
    if engine is not None and "engine_hits" in f:
        parts.append(f"the engine's own cache code ({engine}) on each host served {_n(f['engine_hits'])} "
                     f"({_pct(f['engine_hits'] / n)}), an eviction loss of {_n(f['eviction_loss'])}")
    out = start + "; ".join(parts) + ". "
    out += (f"Here each host is {MODEL}. The kernel checked that no such fleet of {plural(hosts, 'host')} of {c:,} blocks, under "
            f"any routing and any per-host policy, hits more than {_n(pooled)} (the union of the hosts' caches is one "
            f"cache of {hosts * c:,} blocks, and one such cache hits exactly {_n(pooled)}), that the optima of the "
            f"hosts' lists at {c:,} blocks sum to {_n(routed)}, and that if each list is the sub-trace the routing gives "
            f"its host, {_n(routed)} is the most any per-host caches hit behind this routing, and some reach it. That "
            "premise is not kernel-checked: pycert wrote each list from the trace and the host list, and verify makes "
            "each again and compares them byte for byte.")
    if engine is not None and "engine_hits" in f:
        out += (" The engine's hits are observed, not proved: each host's requests were replayed one at a time in trace "
                "order from an empty cache.")
    return out


def limits(routing: str, pooled_pieces: int, engine: bool) -> tuple[str, ...]:
    """The ``does_not_prove`` lines of a certificate made under ``routing``."""
    pieced = (f"The pooled trace is checked in {pooled_pieces} pieces both ways (the pairs open across each joint "
              "carried into the next piece); its capacity-free ceiling (workload_hits) is not stated.",) \
        if pooled_pieces > 1 else ()
    return (
        "The figures are per trace, per number of hosts, per capacity and per routing: they say nothing about other "
        "traffic, other fleet sizes or other routers.",
        f"Each host is {MODEL}. A real engine keeps a running request's blocks resident and may start warm: the "
        "optima may be out of its reach.",
        "The routing is fixed in advance (the host list); a router that reads the hosts' caches is certified as the "
        "routing it produced on this trace, not as a policy.",
        TIE,
        TIE_MEASURED,
        *pieced,
        "The figures in tokens are not kernel-checked: each bound in tokens is block_tokens times a kernel-checked "
        "block figure (a block holds at most block_tokens tokens).",
        *(("The engine's hits are observed on one run of its own cache code (each host's requests one at a time, in "
           "trace order, from an empty cache), not proved; they are refused only when above the host's kernel-checked "
           "optimum.",) if engine else
          ("No engine was replayed: the waterfall stops at the routed optimum.",)),
        *COMMON[2 if engine else 1:],
    )


KERNEL = "Lean kernel: a literal of {headline}"
HOST = re.compile(r"(host_refs|host_hits|engine_hits)_([0-9]+)")
EVIDENCE: dict[str, tuple[EvidenceState, str]] = {
    "refs": ("kernel-checked", f"{KERNEL} (the trace's length, every reference decoded)"),
    "distinct": ("kernel-checked", f"{KERNEL} (Pycert.Ceiling.Bounded: the trace's distinct blocks, checked on every "
                 "reference)"),
    "workload_hits": ("kernel-checked", f"{KERNEL} (Pycert.Ceiling.Bounded: no cache of any size hits more than refs - "
                      "distinct)"),
    "hosts": ("kernel-checked", f"{KERNEL} (H)"),
    "capacity_blocks": ("kernel-checked", f"{KERNEL} (C, each host's capacity)"),
    "pooled_hits": ("kernel-checked", f"{KERNEL} (Pooled: OptimumA at H·C blocks both ways, and by the union bound "
                    "Pycert.Fleet.fleet_le no fleet of H hosts of C blocks hits more under any routing)"),
    "routed_hits": ("kernel-checked", f"{KERNEL} (the sum of the hosts' optima; Pycert.Fleet.routed_of_optima: the optimum "
                    "under the routing if each host's list is its sub-trace)"),
    "host_refs": ("kernel-checked", f"{KERNEL} (the references of this host's list)"),
    "host_hits": ("kernel-checked", f"{KERNEL} (OptimumA of this host's list at C blocks, both ways)"),
    "requests": ("computed", "the trace's requests (lines), as Python reads them"),
    "pooled_capacity_blocks": ("computed", "exact arithmetic hosts · capacity_blocks"),
    "workload_hit_rate": ("computed", "exact arithmetic workload_hits / refs"),
    "pooled_hit_rate": ("computed", "exact arithmetic pooled_hits / refs"),
    "routed_hit_rate": ("computed", "exact arithmetic routed_hits / refs"),
    "capacity_loss": ("computed", "exact arithmetic workload_hits - pooled_hits of two kernel-checked figures"),
    "routing_loss": ("computed", "exact arithmetic pooled_hits - routed_hits of two kernel-checked figures"),
    "refs_tokens": ("computed", PROMPT_TOKENS),
    "workload_hits_tokens": ("computed", "block_tokens · workload_hits: a bound in tokens"),
    "pooled_hits_tokens": ("computed", "block_tokens · pooled_hits: a bound in tokens"),
    "routed_hits_tokens": ("computed", "block_tokens · routed_hits: a bound in tokens"),
    "engine_hits": ("observed", "the engine's own count, summed over the hosts' replay logs (each request's "
                    "cached_tokens over block_tokens)"),
    "engine_cached_tokens": ("observed", "the engine's own cached_tokens, summed over the hosts' replay logs (in its "
                             "block_tokens-token blocks)"),
    "engine_hits_tokens": ("observed", "the trace's tokens of the leading blocks the engine served each request (its "
                           "own count over block_tokens), a request's partial last block counting none"),
    "engine_hit_rate": ("computed", "exact arithmetic engine_hits / refs"),
    "eviction_loss": ("computed", "exact arithmetic routed_hits - engine_hits: a kernel-checked figure less an observed one"),
    "host_engine_hits": ("observed", "the engine's own count on this host's replay log (cached_tokens over block_tokens)"),
}


def evidence_of(name: str) -> tuple[EvidenceState, str]:
    """How figure ``name`` is known (a host's figure by its kind)."""
    if m := HOST.fullmatch(name):
        return EVIDENCE["host_engine_hits" if m.group(1) == "engine_hits" else m.group(1)]
    return EVIDENCE.get(name, ("computed", ""))
