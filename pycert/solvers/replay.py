"""The plain simulator: replay a schedule step by step and recount, trusting nothing the solver said.

A schedule is the cache contents after every step. The replay checks the demand, capacity and
demand-fetch rules stated in :mod:`pycert.solvers.pooled`, counts misses and fetches from the contents
alone, and for a routing checks every request lands on a known host within its load limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from pycert.core.errors import Rejection
from pycert.solvers.instance import Instance


class Replay(BaseModel):
    name: str
    refs: int
    misses: int
    fetches: int
    max_occupancy: int
    capacity: int
    violations: list[Rejection] = []

    @property
    def ok(self) -> bool:
        return not self.violations


def replay_schedule(name: str, refs: Sequence[int], capacity: int, schedule: Sequence[frozenset[int]]) -> Replay:
    violations: list[Rejection] = []

    def refuse(step: str, reason: str, detail: str) -> None:
        violations.append(Rejection(subject=step, reason=reason, detail=detail))

    if len(schedule) != len(refs):
        refuse("schedule", "length", f"schedule has {len(schedule)} steps for {len(refs)} references")
    prev: frozenset[int] = frozenset()
    misses = fetches = peak = 0
    for t, (b, now) in enumerate(zip(refs, schedule)):
        misses += b not in prev
        fetched = now - prev
        fetches += len(fetched)
        peak = max(peak, len(now))
        if b not in now:
            refuse(f"step {t}", "not-cached", f"referenced block {b} is not in the cache")
        if fetched - {b}:
            refuse(f"step {t}", "prefetch", f"blocks {sorted(fetched - {b})} enter without being referenced")
        if len(now) > capacity:
            refuse(f"step {t}", "over-capacity", f"{len(now)} blocks cached, capacity {capacity}")
        prev = now
    return Replay(name=name, refs=len(refs), misses=misses, fetches=fetches, max_occupancy=peak,
                  capacity=capacity, violations=violations[:20])


def keep_everything(refs: Sequence[int]) -> list[frozenset[int]]:
    """The schedule that never evicts: it misses exactly once per distinct block."""
    seen: set[int] = set()
    out = []
    for b in refs:
        seen.add(b)
        out.append(frozenset(seen))
    return out


class RoutingReplay(BaseModel):
    routing_violations: list[Rejection]
    hosts: list[Replay]

    @property
    def misses(self) -> int:
        return sum(h.misses for h in self.hosts)

    @property
    def ok(self) -> bool:
        return not self.routing_violations and all(h.ok for h in self.hosts)


def check_routing(inst: Instance, routing: dict[int, int]) -> list[Rejection]:
    known = set(inst.host_ids)
    out = [Rejection(subject=f"request {r.id}", reason="unrouted", detail=f"request {r.id} is not routed")
           for r in inst.requests if r.id not in routing]
    out += [Rejection(subject=f"request {r}", reason="unknown-host", detail=f"request {r} is routed to unknown host {h}")
            for r, h in routing.items() if h not in known]
    if out:
        return out
    return [Rejection(subject=f"host {h.id}", reason="over-load",
                      detail=f"host {h.id} carries {load} references, load_limit {h.load_limit}")
            for _, h, load in inst.overloaded(routing)]


def replay_routing(inst: Instance, routing: dict[int, int],
                   schedules: dict[int, Sequence[frozenset[int]]] | None = None) -> RoutingReplay:
    """Replay per-host caches under ``routing``; hosts without a given schedule keep everything."""
    bad = check_routing(inst, routing)
    if bad:
        return RoutingReplay(routing_violations=bad, hosts=[])
    hosts = []
    for h in inst.hosts:
        refs = inst.host_trace(h.id, routing)
        sched = (schedules or {}).get(h.id) or keep_everything(refs)
        hosts.append(replay_schedule(f"host {h.id}", refs, h.capacity, sched))
    return RoutingReplay(routing_violations=[], hosts=hosts)
