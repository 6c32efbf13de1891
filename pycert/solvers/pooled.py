"""Pooled placement and eviction over time: the exact offline paging model (demand fetch, unit blocks).

Semantics (the replay in :mod:`pycert.solvers.replay` checks exactly these): the cache holds a set S_t of
blocks after step t, |S_t| ≤ C; the referenced block b_t is in S_t; nothing enters except the
demanded block (S_t \\ {b_t} ⊆ S_{t-1}); step t misses iff b_t ∉ S_{t-1} (S_{-1} = ∅).

Model choice. The time-indexed 0/1 model (x[b,t] = b cached after t) has |blocks|·|refs| variables.
It has an optimal solution of a simpler shape, so we solve that shape directly: between two
consecutive references t1 < t2 of the same block b (a *gap*), b is either kept for the whole gap or
evicted right after t1. (Exchange argument: a schedule that keeps b until some t < t2 and then drops
it still misses at t2; dropping at t1 instead frees space earlier and changes no miss.) So one binary
``keep[g]`` per gap suffices:

    hits   = Σ_g keep[g]                      (a reference hits iff its gap was kept)
    misses = |refs| - Σ_g keep[g]              (= distinct + evicted gaps)
    capacity at t:  1 + Σ_{g : t1(g) < t < t2(g)} keep[g] ≤ C   (b_t itself plus the kept gaps spanning t)

That is |refs| - distinct variables instead of |blocks|·|refs|, and the capacity rows have the
consecutive-ones property in t, so the LP relaxation is already integral (interval matrices are
totally unimodular): both CP-SAT and HiGHS prove the optimum at the root. The rows are stored in
the equivalent flow form (see :func:`paging_model`) to keep them sparse. Belady's MIN is optimal
for this problem, which the capacitated-family test checks against ``pycert.analysis.cachesim.belady_hits``.

Several independent caches (one per host, for per-instance caching under a fixed routing) are the
disjoint union of their models, solved as one.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycert.solvers.model import LinearModel


@dataclass(frozen=True)
class Cache:
    """One demand-fetch cache: its trace and its capacity in blocks."""

    name: str
    refs: tuple[int, ...]
    capacity: int


@dataclass(frozen=True)
class Gap:
    block: int
    start: int  # the reference the block is kept after
    end: int    # the next reference to the same block


@dataclass
class PagingModel:
    model: LinearModel
    caches: list[Cache]
    gaps: list[list[tuple[int, Gap]]]  # per cache: (variable index, gap)


def gaps_of(refs: tuple[int, ...]) -> list[Gap]:
    last: dict[int, int] = {}
    out = []
    for t, b in enumerate(refs):
        if b in last:
            out.append(Gap(b, last[b], t))
        last[b] = t
    return out


def peak_live(refs: tuple[int, ...]) -> int:
    """The most blocks any schedule must hold at once to miss only on first references.

    At step t that is b_t plus every other block referenced both before and after t. The pool
    reaches the wall (misses = distinct) iff its capacity is at least this.
    """
    spanning = [1] * len(refs)
    for g in gaps_of(refs):
        for t in range(g.start + 1, g.end):
            spanning[t] += 1
    return max(spanning, default=0)


def paging_model(caches: list[Cache], name: str = "paging") -> PagingModel:
    """The gap model for every cache in ``caches``; the objective is their total misses.

    The capacity rows are written in flow form: with an integer slack ``idle[t]`` (0..C-1) each row
    ``Σ_{g spans t} keep[g] + idle[t] = C - 1`` minus the row before it leaves only the gaps that
    start or stop spanning at t, so every ``keep`` appears in at most two rows (a network matrix,
    O(refs) nonzeros instead of O(refs · gap length)). The rows are equivalent to the ``≤`` rows above.
    """
    m = LinearModel(name=name)
    all_gaps = []
    for c in caches:
        if c.capacity < 1:
            raise ValueError(f"cache {c.name}: capacity must be >= 1")
        gs = [(m.var(f"keep[{c.name},{g.block},{g.start}]"), g) for g in gaps_of(c.refs)]
        m.offset += len(c.refs)
        for j, _ in gs:
            m.objective[j] = -1
        if len(set(c.refs)) > c.capacity:  # otherwise keeping everything fits and no row can bind
            enters: list[list[int]] = [[] for _ in c.refs]  # gaps spanning t but not t - 1
            leaves: list[list[int]] = [[] for _ in c.refs]  # gaps spanning t - 1 but not t
            for j, g in gs:
                if g.end > g.start + 1:
                    enters[g.start + 1].append(j)
                    leaves[g.end].append(j)
            idle = [m.var(f"idle[{c.name},{t}]", ub=c.capacity - 1) for t in range(len(c.refs))]
            m.row([idle[0]], [1], lo=c.capacity - 1, hi=c.capacity - 1)
            for t in range(1, len(c.refs)):
                idx = enters[t] + leaves[t] + [idle[t], idle[t - 1]]
                coef = [1] * len(enters[t]) + [-1] * len(leaves[t]) + [1, -1]
                m.row(idx, coef, lo=0, hi=0)
        all_gaps.append(gs)
    return PagingModel(model=m, caches=caches, gaps=all_gaps)


def schedules(pm: PagingModel, values: list[int]) -> list[list[frozenset[int]]]:
    """Per cache, the cache contents after every step, as the solution says (the replay's input)."""
    out = []
    for c, gs in zip(pm.caches, pm.gaps):
        kept: list[set[int]] = [{b} for b in c.refs]
        for j, g in gs:
            if values[j]:
                for t in range(g.start + 1, g.end):
                    kept[t].add(g.block)
        out.append([frozenset(s) for s in kept])
    return out
