"""The plain simulator: replay a schedule step by step and recount, trusting nothing the solver said.

A schedule is the cache contents after every step. The replay checks the demand, capacity and
demand-fetch rules stated in :mod:`solvers.pooled`, counts misses and fetches from the contents
alone, and for a routing checks every request lands on a known host within its load limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from solvers.instance import Instance


class Replay(BaseModel):
    name: str
    refs: int
    misses: int
    fetches: int
    max_occupancy: int
    capacity: int
    violations: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.violations


def replay_schedule(name: str, refs: Sequence[int], capacity: int, schedule: Sequence[frozenset[int]]) -> Replay:
    violations = []
    if len(schedule) != len(refs):
        violations.append(f"schedule has {len(schedule)} steps for {len(refs)} references")
    prev: frozenset[int] = frozenset()
    misses = fetches = peak = 0
    for t, (b, now) in enumerate(zip(refs, schedule)):
        misses += b not in prev
        fetched = now - prev
        fetches += len(fetched)
        peak = max(peak, len(now))
        if b not in now:
            violations.append(f"step {t}: referenced block {b} is not in the cache")
        if fetched - {b}:
            violations.append(f"step {t}: blocks {sorted(fetched - {b})} enter without being referenced")
        if len(now) > capacity:
            violations.append(f"step {t}: {len(now)} blocks cached, capacity {capacity}")
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
    routing_violations: list[str]
    hosts: list[Replay]

    @property
    def misses(self) -> int:
        return sum(h.misses for h in self.hosts)

    @property
    def ok(self) -> bool:
        return not self.routing_violations and all(h.ok for h in self.hosts)


def check_routing(inst: Instance, routing: dict[int, int]) -> list[str]:
    known = set(inst.host_ids)
    out = [f"request {r.id} is not routed" for r in inst.requests if r.id not in routing]
    out += [f"request {r} is routed to unknown host {h}" for r, h in routing.items() if h not in known]
    if out:
        return out
    for h in inst.hosts:
        load = sum(len(r.blocks) for r in inst.requests if routing[r.id] == h.id)
        if load > h.load_limit:
            out.append(f"host {h.id} carries {load} references, load_limit {h.load_limit}")
    return out


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
